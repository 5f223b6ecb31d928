"""Policy models: an embedded tiny causal LM (transformers Llama config + char tokenizer) or any HF id/path."""

from __future__ import annotations

import torch

from ablate.trainer.phases import phase


class CharTokenizer:
    """Character-level tokenizer for the embedded task: ids 0..2 are pad/bos/eos, then one id per character."""

    pad_token_id = 0
    bos_token_id = 1
    eos_token_id = 2

    def __init__(self, alphabet: str):
        chars = sorted(set(alphabet))
        self.itos = ["<pad>", "<bos>", "<eos>", *chars]
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str, bos: bool = True) -> list[int]:
        try:
            ids = [self.stoi[c] for c in text]
        except KeyError as e:
            raise ValueError(f"character {e.args[0]!r} is not in the task's alphabet") from None
        return [self.bos_token_id, *ids] if bos else ids

    def decode(self, ids) -> str:
        return "".join(self.itos[i] for i in ids if i > 2)

    def decode_batch(self, rows) -> list[str]:
        itos = self.itos
        return ["".join(itos[i] for i in r if i > 2) for r in rows]

    def token_ids(self, text: str) -> list[int]:
        return self.encode(text, bos=False)

    def encode_prompt(self, problem) -> list[int]:
        return self.encode(problem.prompt)


class HFTokenizer:
    """Adapter giving an AutoTokenizer the small interface the trainer uses: a prompt through the chat template
    where the model has one, after ``system_prompt`` (task.system_prompt) when one is set; without a template
    the messages' texts are joined by blank lines."""

    def __init__(self, tok, use_chat_template: bool = True, system_prompt: str = ""):
        self.tok, self.system_prompt = tok, system_prompt
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        self.pad_token_id = tok.pad_token_id
        self.eos_token_id = tok.eos_token_id
        self.bos_token_id = tok.bos_token_id
        self.use_chat_template = use_chat_template and getattr(tok, "chat_template", None) is not None

    @property
    def vocab_size(self) -> int:
        return len(self.tok)

    def encode(self, text: str, bos: bool = True) -> list[int]:
        return self._render((("user", text),), bos)

    def encode_prompt(self, problem) -> list[int]:
        return self._render(problem.messages or (("user", problem.prompt),))

    def _render(self, messages: tuple, bos: bool = True) -> list[int]:
        if self.system_prompt and messages[0][0] != "system":  # the data's own system message wins
            messages = (("system", self.system_prompt), *messages)
        if self.use_chat_template:
            # render, then tokenize: tokenize=True returns a BatchEncoding under transformers 5 and a list
            # before it; the rendered text already holds the template's special tokens
            rendered = self.tok.apply_chat_template(
                [{"role": r, "content": c} for r, c in messages], add_generation_prompt=True, tokenize=False
            )
            return self.tok(rendered, add_special_tokens=False)["input_ids"]
        return self.tok("\n\n".join(c for _, c in messages), add_special_tokens=bos)["input_ids"]

    def decode(self, ids) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=True)

    def decode_batch(self, rows) -> list[str]:
        return self.tok.batch_decode([list(r) for r in rows], skip_special_tokens=True)  # one Rust call

    def token_ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]


def model_path(model_cfg) -> str:
    """What transformers loads: a packaged model's converted folder (made on first use), else model.name."""
    from ablate.trainer import packaged

    if packaged.is_packaged(model_cfg.name):
        return packaged.model_folder(model_cfg.name, model_cfg.cache_dir)
    return model_cfg.name


def model_folder_here(model_cfg) -> str | None:
    """The model's folder when it is on this machine without converting or downloading anything: a packaged
    model already converted, or a local directory; else None."""
    import os

    from ablate.trainer import packaged

    if packaged.is_packaged(model_cfg.name):
        spec = packaged.PACKAGED[model_cfg.name]
        out = os.path.join(os.path.expanduser(model_cfg.cache_dir), "models", spec.folder)
    else:
        out = os.path.expanduser(model_cfg.name)
    return out if os.path.isfile(os.path.join(out, "config.json")) else None


def build_tokenizer(model_cfg, alphabet: str, system_prompt: str = ""):
    if model_cfg.name == "tiny":
        return CharTokenizer(alphabet)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path(model_cfg))
    return HFTokenizer(tok, model_cfg.chat_template, system_prompt)


def tiny_config(model_cfg, vocab_size: int, **extra):
    """The embedded model's LlamaConfig (the policy's, and the learned reward model's body)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=model_cfg.hidden_size,
        intermediate_size=model_cfg.intermediate_size,
        num_hidden_layers=model_cfg.num_layers,
        num_attention_heads=model_cfg.num_heads,
        num_key_value_heads=model_cfg.num_heads,
        max_position_embeddings=model_cfg.max_positions,
        pad_token_id=CharTokenizer.pad_token_id,
        bos_token_id=CharTokenizer.bos_token_id,
        eos_token_id=CharTokenizer.eos_token_id,
        **extra,
    )


def build_model(model_cfg, vocab_size: int, seed: int, device: str = "cpu"):
    """The trainable policy, in float32 (the master weights; ``model.dtype`` is what it computes in). The tiny
    model is initialized from ``seed`` (``SeedStreams.model_init``: same seed -> same weights in every
    variant)."""
    import transformers

    transformers.logging.set_verbosity_error()
    if model_cfg.name == "tiny":
        from transformers import LlamaForCausalLM

        config = tiny_config(model_cfg, vocab_size, tie_word_embeddings=True)
        config._attn_implementation = model_cfg.attn_implementation
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    else:
        from transformers import AutoModelForCausalLM

        # float32 master weights whatever model.dtype says: it is the compute dtype (trainer/precision.py)
        dtype = torch.float32
        with phase(f"loading {model_cfg.name}"):
            model = AutoModelForCausalLM.from_pretrained(
                model_path(model_cfg), dtype=dtype, attn_implementation=model_cfg.attn_implementation
            )
        if model_cfg.gradient_checkpointing:
            model.gradient_checkpointing_enable()
    model.generation_config.pad_token_id = model.config.pad_token_id
    return model.to(device)


def save_tiny_hf_model(
    path, seed: int = 0, hidden_size: int = 64, num_layers: int = 2, num_heads: int = 4
) -> str:
    """Write a tiny Llama + character-level fast tokenizer in Hugging Face format to ``path``.

    Why: tests (and a first try of ``model=hf``/``rollout=vllm``) need a real HF model directory without a hub
    download. The vocabulary covers printable ASCII, so any English/math prompt encodes.
    """
    import string
    from pathlib import Path

    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials + sorted(set(string.printable) - set("\x0b\x0c\r")))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    Path(path).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
