"""A prompt as the model's chat sees it: task.system_prompt before every prompt, and a data file's chat field
(a list of {role, content}, as TRL's conversational datasets hold) given to the chat template as it is."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from ablate.__main__ import main
from ablate.compose import compose
from ablate.config import ConfigError
from ablate.trainer.models import HFTokenizer
from ablate.trainer.tasks import Problem, load_task

TEMPLATE = "{% for m in messages %}[{{ m.role }}] {{ m.content }} {% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}"


def _tokenizer(chat: bool) -> PreTrainedTokenizerFast:
    words = "[system] [user] [assistant] be brief what is 1+1 ? hi [pad] [eos]".split()
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[pad]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[pad]", eos_token="[eos]")
    if chat:
        tok.chat_template = TEMPLATE
    return tok


def _words(tok: HFTokenizer, ids) -> str:
    return " ".join(tok.tok.convert_ids_to_tokens(ids))


def test_the_system_prompt_goes_before_every_prompt_through_the_chat_template():
    tok = HFTokenizer(_tokenizer(chat=True), system_prompt="be brief")
    assert _words(tok, tok.encode("what is 1+1 ?")) == "[system] be brief [user] what is 1+1 ? [assistant]"
    chat = Problem("hi", "2", messages=(("user", "hi"), ("assistant", "hi"), ("user", "what is 1+1 ?")))
    assert _words(tok, tok.encode_prompt(chat)) == (
        "[system] be brief [user] hi [assistant] hi [user] what is 1+1 ? [assistant]"
    )
    own = Problem("hi", "2", messages=(("system", "hi"), ("user", "what is 1+1 ?")))  # the data's own wins
    assert _words(tok, tok.encode_prompt(own)) == "[system] hi [user] what is 1+1 ? [assistant]"
    plain = HFTokenizer(_tokenizer(chat=False), system_prompt="be brief")  # no template: texts in order
    assert _words(plain, plain.encode_prompt(chat)) == "be brief hi hi what is 1+1 ?"
    assert _words(HFTokenizer(_tokenizer(chat=True)), tok.encode("hi")[3:]) == "[user] hi [assistant]"


def test_a_chat_field_is_the_prompt_and_a_malformed_one_is_one_line(tmp_path):
    rows = [{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"{i}+1?"}],
             "answer": i + 1} for i in range(4)]  # fmt: skip
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "test.jsonl").write_text(json.dumps(rows[0]) + "\n")
    cfg = compose(
        ["task=custom", "model=smollm2", f"task.path={tmp_path}", "task.question_key=messages"]
    ).task
    data = load_task(cfg)
    assert data.train[1].messages == (("system", "be brief"), ("user", "1+1?"))
    assert data.train[1].prompt == "be brief\n\n1+1?" and data.train[1].answer == "2"
    (tmp_path / "test.jsonl").write_text(json.dumps({"messages": ["1+1?"], "answer": 2}) + "\n")
    with pytest.raises(ConfigError, match=r"task.question_key='messages': a list field must be a chat"):
        load_task(cfg)


def test_a_system_prompt_with_the_tiny_model_is_refused_in_one_line(capsys):
    assert main(["mode=train", "task.system_prompt=be brief", "dry_run=true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "task.system_prompt='be brief': the tiny model reads only" in err[0], err
