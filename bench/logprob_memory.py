"""Peak memory of the old-logprob pass against the number of rows, chunked or not (train.logprob_tokens_per_chunk).

`python -m bench.logprob_memory --rows 8 32 --chunk 0 512` runs each (rows, chunk) pair in a fresh process (peak
RSS only grows, so one process per figure) on a random-weight Llama with SmolLM2's 49,152-token vocabulary and
prints one JSON line per pair: the peak RSS above the loaded model, in MiB. tests/trainer/test_logprob_chunks.py
reads the same figures: chunked, the peak is flat in the rows; unchunked, it grows with them.

`--update` measures the update's pass instead (forward and backward with the entropy bonus, one row of
UPDATE_TOKENS completion tokens, bf16 weights and logits as a GPU's compute dtype gives them): the float32 log-softmax in one piece vs in pieces of a few MiB
(ablate/trainer/policy.py's LOGIT_CHUNK_BYTES), each recomputed in the backward.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

VOCAB, PROMPT, RESPONSE = 49152, 16, 48
UPDATE_TOKENS = 1024  # one row: 192 MiB of float32 logits at this vocabulary


def _high_water_kib() -> int:
    """This process's peak RSS (VmHWM). Not ``getrusage``'s ru_maxrss: Linux carries the parent's peak across
    fork + exec into it, so a child of a large process (a long pytest run) reads the parent's figure."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def _random_llama(max_positions: int):
    """A 2-layer random-weight Llama with SmolLM2's vocabulary (seeded: the same weights in every process)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=max_positions)  # fmt: skip
    return LlamaForCausalLM(cfg)


def _measure(rows: int, chunk: int) -> dict:
    import torch

    from ablate.trainer.rollout import RolloutBatch
    from ablate.trainer.update import chunked_logprobs

    model = _random_llama(128).eval()
    ids = torch.randint(3, VOCAB, (rows, PROMPT + RESPONSE))
    rb = RolloutBatch(ids[:, :PROMPT], torch.ones(rows, PROMPT, dtype=torch.long), ids[:, PROMPT:],
                      torch.ones(rows, RESPONSE), torch.zeros(rows, RESPONSE), torch.zeros(rows, dtype=torch.bool))  # fmt: skip
    base = _high_water_kib()
    logp, _ = chunked_logprobs(model, rb, 1.0, chunk)
    peak = _high_water_kib()
    return {"rows": rows, "chunk": chunk, "peak_mib": round((peak - base) / 1024, 1),
            "logits_mib_per_row": round(RESPONSE * VOCAB * 4 / 2**20, 1), "checksum": float(logp.double().sum())}  # fmt: skip


def _measure_update(piece_mib: int) -> dict:
    import torch

    from ablate.trainer import policy

    model = _random_llama(2048).to(torch.bfloat16)  # bf16 logits, as a GPU's compute dtype gives them
    ids = torch.randint(3, VOCAB, (1, PROMPT + UPDATE_TOKENS))
    if piece_mib:
        policy.LOGIT_CHUNK_BYTES = piece_mib * 2**20
    base = _high_water_kib()
    logp, ent = policy.sequence_logprobs(model, ids[:, :PROMPT], torch.ones(1, PROMPT, dtype=torch.long),
                                         ids[:, PROMPT:], torch.ones(1, UPDATE_TOKENS), 1.0, "grad")  # fmt: skip
    (logp.sum() + 0.01 * ent.sum()).backward()
    peak = _high_water_kib()
    grad = sum(float(p.grad.double().abs().sum()) for p in model.parameters())
    return {"piece_mib": piece_mib, "peak_mib": round((peak - base) / 1024, 1),
            "logits_mib": round(UPDATE_TOKENS * VOCAB * 4 / 2**20, 1), "checksum": float(logp.double().sum()),
            "grad_checksum": grad}  # fmt: skip


def _in_a_fresh_process(*args: str) -> dict:
    """One figure, in its own process (peak RSS only grows)."""
    out = subprocess.run([sys.executable, "-m", "bench.logprob_memory", *args],
                         capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_update(piece_mib: int) -> dict:
    """The update pass's figure with pieces of ``piece_mib`` (0: the default, one piece here)."""
    return _in_a_fresh_process("--one-update", str(piece_mib))


def measure(rows: int, chunk: int) -> dict:
    """The old-logprob pass's figure for ``rows`` rows, ``chunk`` tokens at a time (0: one pass)."""
    return _in_a_fresh_process("--one", str(rows), str(chunk))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--chunk", type=int, nargs="+", default=[0, 512], help="tokens per chunk (0 = one pass)")
    ap.add_argument("--update", action="store_true", help="the update's pass: one piece vs 8 MiB pieces")
    ap.add_argument("--one", type=int, nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--one-update", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(_measure(*a.one)))
        return
    if a.one_update is not None:
        print(json.dumps(_measure_update(a.one_update)))
        return
    if a.update:
        for piece in (0, 8):
            print(json.dumps(measure_update(piece)))
        return
    for chunk in a.chunk:
        for rows in a.rows:
            print(json.dumps(measure(rows, chunk)))


if __name__ == "__main__":
    main()
