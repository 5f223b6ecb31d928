"""The scoring passes run a token budget at a time (train.logprob_tokens_per_chunk): the same logprobs, and a peak
memory that no longer grows with the rollout batch."""

from __future__ import annotations

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


def test_old_logprob_peak_is_flat_in_rows_when_chunked():
    """SmolLM2's 49,152-token vocabulary, 48 response tokens (bench/logprob_memory.py, each in a fresh
    process): 9 MiB of float32 logits a row, held two or three times over by the unchunked pass."""
    f = {(rows, chunk): measure(rows, chunk) for rows in (8, 32) for chunk in (0, 512)}
    print({k: v["peak_mib"] for k, v in f.items()})
    assert f[32, 0]["checksum"] == f[32, 512]["checksum"]  # same numbers
    assert f[32, 0]["peak_mib"] > 3 * f[8, 0]["peak_mib"]  # unchunked: grows with the rows
    assert f[32, 512]["peak_mib"] < 1.25 * f[8, 512]["peak_mib"]  # chunked: flat
