"""What calling your reward functions costs a step (ablate/trainer/user_reward.py).

`python -m bench.user_reward --rows 64 --blocks 5` scores one batch of ``rows`` completions with a TRL-signature
function (exact match against the answer column) and a verl-signature one, each in-process
(``task.reward_timeout=0``) and in the reward's own process with a time limit (the default), interleaved; prints
one JSON line: the median and min seconds per batch of each, and the ratio process / in-process. The first call
of the reward process (its start, ~1-2 s) is reported apart: once per trial process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REWARDS = """
def exact(prompts, completions, answer, **kwargs):
    return [float(c == "<" + a + ">") for c, a in zip(completions, answer)]

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": float(solution_str == "<" + ground_truth + ">")}
"""


def _users(path: Path, name: str, timeout: float):
    from ablate.trainer.user_reward import UserRewards

    return UserRewards(SimpleNamespace(rewards=[f"{path}:{name}"], reward_weights=[], reward_signature="auto",
                                       reward_timeout=timeout, reward_scale=1.0, correct_above=0.0,
                                       reward_fingerprint=""))  # fmt: skip


def measure(rows: int, blocks: int) -> dict:
    from ablate.trainer.user_reward import RewardBatch

    answers = [f"{'abcdefgh'[i % 8] * (1 + i % 6)}" for i in range(rows)]
    completions = [f"<{a}>" if i % 3 else f"<{a}x>" for i, a in enumerate(answers)]
    batch = RewardBatch([f"{a[::-1]}=" for a in answers], completions, [[1] * 8 for _ in answers],
                        [{"answer": a} for a in answers], answers, "reverse")  # fmt: skip
    out: dict = {"rows": rows, "blocks": blocks}
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "rewards.py"
        f.write_text(REWARDS)
        t0 = time.perf_counter()
        _users(f, "exact", 60.0).score(batch)
        out["reward_process_start_s"] = round(time.perf_counter() - t0, 3)
        for name in ("exact", "compute_score"):
            times: dict[str, list[float]] = {"in_process": [], "reward_process": []}
            users = {"in_process": _users(f, name, 0.0), "reward_process": _users(f, name, 60.0)}
            for _ in range(blocks):
                for how, u in users.items():  # interleaved: the machine's noise hits both alike
                    t0 = time.perf_counter()
                    u.score(batch)
                    times[how].append(time.perf_counter() - t0)
            for how, ts in times.items():
                out[f"{name}_{how}_median_ms"] = round(1000 * statistics.median(ts), 3)
                out[f"{name}_{how}_min_ms"] = round(1000 * min(ts), 3)
            out[f"{name}_process_over_in_process"] = round(statistics.median(times["reward_process"]) / statistics.median(times["in_process"]), 1)  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=64, help="completions per batch (P x K)")
    ap.add_argument("--blocks", type=int, default=5, help="interleaved repetitions")
    a = ap.parse_args(argv)
    print(json.dumps(measure(a.rows, a.blocks)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
