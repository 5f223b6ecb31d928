"""The scoring passes run a token budget at a time (train.logprob_tokens_per_chunk): the same logprobs, and a peak
memory that no longer grows with the rollout batch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from ablate.trainer.core import Trainer
from ablate.trainer.rollout import RolloutBatch
from ablate.trainer.update import chunk_rows
from bench.logprob_memory import measure
from tests.conftest import FAST


def _batch(rows: int, prompt: int, response: int) -> RolloutBatch:
    z = torch.zeros
    return RolloutBatch(z(rows, prompt, dtype=torch.long), z(rows, prompt, dtype=torch.long),
                        z(rows, response, dtype=torch.long), z(rows, response), z(rows, response), z(rows))  # fmt: skip


def test_rows_split_by_the_token_budget():
    rb = _batch(10, 3, 5)  # 8 padded tokens a row
    assert [c.tolist() for c in chunk_rows(rb, 24)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [len(c) for c in chunk_rows(rb, 0)] == [10]  # 0: one pass
    assert [len(c) for c in chunk_rows(rb, 5)] == [1] * 10  # a row wider than the budget still runs, alone
    assert [len(c) for c in chunk_rows(rb, 1000)] == [10]


def test_chunked_scoring_equals_one_pass(compose_cfg):
    t = Trainer(compose_cfg(FAST + ["kl=k3_loss"]), 0)
    rb, *_ = t.collect()
    whole = t._logp(t.model, rb, with_entropy=True)
    t.cfg.train.logprob_tokens_per_chunk = rb.prompt_ids.shape[1] + rb.completion_ids.shape[1]  # a row a pass
    rows = t._logp(t.model, rb, with_entropy=True)
    m = rb.completion_mask.bool()  # past EOS a row alone is scored without an attention mask: unused values
    assert len(rows[0]) == len(rb.truncated) > 8
    torch.testing.assert_close(rows[0][m], whole[0][m], rtol=0, atol=1e-5)
    torch.testing.assert_close(rows[1][m], whole[1][m], rtol=0, atol=1e-5)


@pytest.mark.slow
def test_old_logprob_peak_is_flat_in_rows_when_chunked():
    """SmolLM2's 49,152-token vocabulary, 48 response tokens (bench/logprob_memory.py, each in a fresh
    process): 9 MiB of float32 logits a row, held two or three times over by the unchunked pass."""
    f = {(rows, chunk): measure(rows, chunk) for rows in (8, 32) for chunk in (0, 512)}
    print({k: v["peak_mib"] for k, v in f.items()})
    assert f[32, 0]["checksum"] == f[32, 512]["checksum"]  # same numbers
    assert f[32, 0]["peak_mib"] > 3 * f[8, 0]["peak_mib"]  # unchunked: grows with the rows
    assert f[32, 512]["peak_mib"] < 1.25 * f[8, 512]["peak_mib"]  # chunked: flat


class _Toy(torch.nn.Module):
    """A causal toy LM: embeddings summed along the sequence, a linear head over 50 tokens."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb, self.head = torch.nn.Embedding(50, 8), torch.nn.Linear(8, 50)

    def forward(self, input_ids, attention_mask=None, position_ids=None, use_cache=False):
        return SimpleNamespace(logits=self.head(torch.tanh(self.emb(input_ids).cumsum(1))))


def _score(piece_bytes: int | None, monkeypatch, with_entropy="grad"):
    from ablate.trainer import policy

    if piece_bytes is not None:
        monkeypatch.setattr(policy, "LOGIT_CHUNK_BYTES", piece_bytes)
    calls = []
    real = policy.token_logprobs
    monkeypatch.setattr(policy, "token_logprobs", lambda *a: calls.append(a[0].shape) or real(*a))
    model = _Toy()
    g = torch.Generator().manual_seed(1)
    prompt, completion = torch.randint(0, 50, (3, 4), generator=g), torch.randint(0, 50, (3, 7), generator=g)
    pmask = torch.ones(3, 4, dtype=torch.long)
    pmask[0, :2] = 0  # left padding: the masked path
    logp, ent = policy.sequence_logprobs(
        model, prompt, pmask, completion, torch.ones(3, 7), 1.3, with_entropy
    )
    (logp.sum() + 0.1 * ent.sum()).backward()
    return logp, ent, [p.grad.clone() for p in model.parameters()], calls


@pytest.mark.parametrize("positions", [3, 14], ids=["pieces_of_rows", "two_rows_a_piece"])
def test_the_log_softmax_in_pieces_gives_the_one_piece_numbers_and_gradients(monkeypatch, positions):
    """Pieces of 3 positions (each row's 7 tokens in 3 pieces) or of 14 (two rows): the same log-probs,
    entropies and parameter gradients as one piece; each piece is recomputed in the backward."""
    logp, ent, grads, calls = _score(None, monkeypatch)
    assert len(calls) == 1
    logp2, ent2, grads2, calls2 = _score(positions * 4 * 50, monkeypatch)
    pieces = 9 if positions == 3 else 2
    assert len(calls2) == 2 * pieces  # forward, then once more in the backward
    torch.testing.assert_close(logp2, logp, rtol=0, atol=1e-6)
    torch.testing.assert_close(ent2, ent, rtol=0, atol=1e-6)
    for a, b in zip(grads2, grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
