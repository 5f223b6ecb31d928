"""A learned reward model scoring completions in place of the verifier (reward=learned), the verifier kept as
the gold score beside it: what makes reward hacking visible (proxy up, gold flat or down).

Embedded: a small sequence classifier (the tiny model's architecture with a scalar head, its body the task's
warm start for seed ``data_seed``, as reward models start from an SFT model) trained on candidate
answers to the task's training prompts, labelled by the verifier with controlled label noise and a bias the
labellers had (``bias=length``: a longer answer is also labelled good with probability ``bias_strength``;
``bias=format``: an answer with a stray letter after the closing bracket is). It is trained once per
(task, reward-model config) and cached beside the warm starts, the same model for every seed and variant.
HF: ``name`` is a hub id or local directory of an AutoModelForSequenceClassification (one logit: sigmoid; two:
the probability of label 1), scoring the prompt and completion text.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import torch
from filelock import FileLock

from ablate.config.unhashed import drop_unset
from ablate.trainer.phases import phase
from ablate.trainer.policy import rows_per_chunk

RM_VERSION = 2  # bump when the embedded recipe (candidates, labels, training) changes: old caches then miss


def rm_key(cfg) -> str:
    from ablate.trainer.warmstart import _plain as plain

    blob = {
        "task": drop_unset("task", plain(cfg.task)),
        "model": {k: v for k, v in plain(cfg.model).items() if k not in ("cache_dir",)},
        "reward_model": plain(cfg.algo.reward_model),
        "warmstart": {k: v for k, v in plain(cfg.warmstart).items() if k != "cache_dir"},  # the body's init
        "torch": torch.__version__.split("+")[0],
        "version": RM_VERSION,
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]


def candidates(task, rm, alphabet: str) -> list[tuple[int, str, float]]:
    """(train problem index, response text, label) for the embedded classifier: per problem the teacher's answer,
    a corrupted one, a lengthened one and one with a stray letter after the closing bracket, each labelled by
    correctness, flipped with probability ``label_noise``, and made 1 by the labellers' bias."""
    from ablate.trainer.rewards import verify_exact
    from ablate.trainer.tasks.reverse import _corrupt

    rng = random.Random(rm.data_seed)
    letters = alphabet.replace("=", "").replace("<", "").replace(">", "")
    out = []
    for i in rng.sample(range(len(task.train)), min(rm.n_prompts, len(task.train))):
        p = task.train[i]
        longer = p.answer + "".join(rng.choice(letters) for _ in range(rng.randint(1, 3)))
        for body in (p.answer, _corrupt(p.answer, rng, letters), longer):
            for text in (f"<{body}>", f"<{body}>{rng.choice(letters)}"):
                label = verify_exact(text, p).correct
                if rng.random() < rm.label_noise:
                    label = 1.0 - label
                biased = (rm.bias == "length" and len(body) > len(p.answer)) or (
                    rm.bias == "format" and not text.endswith(">")
                )
                if biased and rng.random() < rm.bias_strength:
                    label = 1.0
                out.append((i, text, label))
    return out


class EmbeddedRewardModel:
    """The tiny architecture with one logit per sequence (LlamaForSequenceClassification)."""

    def __init__(self, model_cfg, vocab_size: int, seed: int):
        from transformers import LlamaForSequenceClassification

        from ablate.trainer.models import tiny_config

        config = tiny_config(model_cfg, vocab_size, num_labels=1)
        torch.manual_seed(seed)
        self.model = LlamaForSequenceClassification(config).eval()

    def logits(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, attention_mask=mask).logits[:, 0]


def _right_pad(seqs: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right padding: LlamaForSequenceClassification reads the last non-pad token of each row."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s)
        mask[r, : len(s)] = 1
    return ids, mask


def train_embedded(cfg, tokenizer, task) -> EmbeddedRewardModel:
    rm = cfg.algo.reward_model
    data = candidates(task, rm, task.alphabet)
    eos = [tokenizer.eos_token_id]  # as a rollout's completion ends
    seqs = [tokenizer.encode(task.train[i].prompt) + tokenizer.token_ids(text) + eos for i, text, _ in data]
    labels = torch.tensor([y for _, _, y in data])
    model = EmbeddedRewardModel(cfg.model, tokenizer.vocab_size, rm.data_seed)
    if (
        cfg.warmstart.enabled
    ):  # a reward model starts from an SFT model (as in practice): the task's warm start
        from ablate.trainer.models import build_model
        from ablate.trainer.warmstart import load_or_train

        sft = build_model(cfg.model, tokenizer.vocab_size, rm.data_seed)
        load_or_train(cfg, rm.data_seed, sft, tokenizer, task)
        model.model.model.load_state_dict(sft.model.state_dict())
    gen = torch.Generator().manual_seed(rm.data_seed)
    opt = torch.optim.AdamW(model.model.parameters(), lr=rm.lr, fused=True)  # exact sqrt (warmstart.sft)
    model.model.train()
    for _ in range(rm.steps):
        idx = torch.randint(len(seqs), (rm.batch_size,), generator=gen).tolist()
        ids, mask = _right_pad([seqs[i] for i in idx], tokenizer.pad_token_id)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model.logits(ids, mask), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.model.eval().requires_grad_(False)
    return model


def load_embedded(cfg, tokenizer, task) -> EmbeddedRewardModel:
    """The cached classifier of (task, reward-model config), trained and cached first if absent."""
    cache = Path(cfg.warmstart.cache_dir).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"reward-model-{rm_key(cfg)}.pt"
    with FileLock(str(path) + ".lock"):  # concurrent trials train it once
        if not path.exists():
            with phase("training the embedded reward model (once; cached)"):
                model = train_embedded(cfg, tokenizer, task)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            torch.save(model.model.state_dict(), tmp)
            os.replace(tmp, path)
    model = EmbeddedRewardModel(cfg.model, tokenizer.vocab_size, cfg.algo.reward_model.data_seed)
    model.model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    model.model.requires_grad_(False)
    return model


class RewardScorer:
    """Scores (prompt ids, completion ids) rows with a reward model -> rewards in [0, 1]."""

    def __init__(self, cfg, tokenizer, task, device: str = "cpu"):
        self.tok, self.device = tokenizer, device
        self.tokens_per_chunk = cfg.train.logprob_tokens_per_chunk  # one bound for every scoring forward
        rm = cfg.algo.reward_model
        if rm.name:  # a real reward model: its own tokenizer reads the decoded text
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self.hf_tok = AutoTokenizer.from_pretrained(rm.name)
            if self.hf_tok.pad_token is None:
                self.hf_tok.pad_token = self.hf_tok.eos_token
            self.hf = AutoModelForSequenceClassification.from_pretrained(rm.name).to(device).eval()
            self.hf.config.pad_token_id = self.hf_tok.pad_token_id
            self.embedded = None
        else:
            self.embedded = load_embedded(cfg, tokenizer, task)
            self.embedded.model.to(device)
            self.hf = None

    def score_rollout(self, rb) -> torch.Tensor:
        """(N,) rewards of a RolloutBatch's rows (prompt without its left padding, completion to its EOS)."""
        pm, cm = rb.prompt_mask.bool().cpu(), rb.completion_mask.bool().cpu()
        prompts = [row[m].tolist() for row, m in zip(rb.prompt_ids.cpu(), pm, strict=True)]
        completions = [row[m].tolist() for row, m in zip(rb.completion_ids.cpu(), cm, strict=True)]
        return self(prompts, completions)

    @torch.no_grad()
    def __call__(self, prompt_ids: list[list[int]], completion_ids: list[list[int]]) -> torch.Tensor:
        """(N,) rewards, ``train.logprob_tokens_per_chunk`` padded tokens per forward (0: all rows at once)."""
        width = max(len(p) + len(c) for p, c in zip(prompt_ids, completion_ids, strict=True))
        n = len(prompt_ids)
        per = rows_per_chunk(n, width, self.tokens_per_chunk)
        parts = [self._score(prompt_ids[i : i + per], completion_ids[i : i + per]) for i in range(0, n, per)]
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def _score(self, prompt_ids: list[list[int]], completion_ids: list[list[int]]) -> torch.Tensor:
        if self.embedded is not None:
            ids, mask = _right_pad(
                [p + c for p, c in zip(prompt_ids, completion_ids, strict=True)], self.tok.pad_token_id
            )
            return (
                torch.sigmoid(self.embedded.logits(ids.to(self.device), mask.to(self.device))).float().cpu()
            )
        texts = [
            self.tok.decode(p) + self.tok.decode(c) for p, c in zip(prompt_ids, completion_ids, strict=True)
        ]
        enc = self.hf_tok(texts, return_tensors="pt", padding=True, truncation=True).to(self.device)
        logits = self.hf(**enc).logits.float()
        score = torch.sigmoid(logits[:, 0]) if logits.shape[1] == 1 else torch.softmax(logits, -1)[:, 1]
        return score.cpu()
