"""Keys the chosen options make inert: set in a sweep variant, they change the config (and its hash) but not
one number the trial computes, so the variant would train what it started from and the report would compare
identical arms. Each rule: the key, when it has no effect, and what would make it live."""

from __future__ import annotations

from ablate.compose import override_key
from ablate.config.schema import ConfigError

_DS = "algo.dynamic_sampling"
_FULL = (lambda c: c.adapter.kind == "full", "adapter.kind=full (adapter=full: every weight trains)",
         "add adapter=lora to the variant, or drop it")  # fmt: skip
INERT = (
    *((f"adapter.{k}", *_FULL) for k in ("rank", "alpha", "dropout", "target_modules", "lr_scale")),
    ("algo.kl.coef", lambda c: c.algo.kl.mode == "none", "algo.kl.mode=none (kl=none)", "add a KL option to the variant (e.g. kl=k3_loss), or drop it"),
    ("algo.kl.estimator", lambda c: c.algo.kl.mode == "none", "algo.kl.mode=none (kl=none)", "add a KL option to the variant (e.g. kl=k3_loss), or drop it"),
    ("algo.clip.epsilon_high", lambda c: c.algo.clip.epsilon_high == c.algo.clip.epsilon,
     "algo.clip.epsilon at the same value (the symmetric clip)", "give it another value, or drop the variant"),
    ("algo.overlong_penalty", lambda c: c.algo.overlong_buffer == 0, "algo.overlong_buffer=0 (overlong=off)", "add overlong=soft to the variant, or drop it"),
    ("algo.entropy.final_ratio", lambda c: c.algo.entropy.coef == 0 or c.algo.entropy.anneal_fraction == 0,
     "no entropy bonus or no annealing (entropy.coef=0 or entropy.anneal_fraction=0)", "add entropy=annealed to the variant, or drop it"),
    ("algo.entropy.anneal_fraction", lambda c: c.algo.entropy.coef == 0, "algo.entropy.coef=0 (entropy=off)", "add entropy=annealed to the variant, or drop it"),
    ("task.verifier", lambda c: bool(c.task.rewards), "task.rewards (your reward functions replace the verifier)", "drop it"),
    *((f"task.{k}", lambda c: not c.task.rewards, "no task.rewards (the rule verifier scores)", "add task.rewards=[FILE.py:fn], or drop it")
      for k in ("reward_weights", "reward_signature", "correct_above")),
    (f"{_DS}.replay_weight", lambda c: c.algo.dynamic_sampling.mode != "hard_replay",
     "dynamic sampling other than hard_replay", "add dynamic_sampling=hard_replay to the variant, or drop it"),
    (f"{_DS}.max_gen_batches", lambda c: c.algo.dynamic_sampling.mode != "dapo",
     "dynamic sampling other than dapo", "add dynamic_sampling=dapo to the variant, or drop it"),
    (f"{_DS}.max_refill_rounds", lambda c: c.algo.dynamic_sampling.mode != "drop_zero_std",
     "dynamic sampling other than drop_zero_std", "add dynamic_sampling=drop_zero_std to the variant, or drop it"),
)  # fmt: skip


def refuse_inert(overrides: list[str], cfg) -> None:
    """A variant's own override of a key its composed config makes inert: refused in one line, naming the
    setting that makes it inert and the option that would make it live."""
    keys = {override_key(ov).lstrip("+~"): ov for ov in overrides}
    for key, inert, because, live in INERT:
        if key in keys and inert(cfg):
            raise ConfigError(
                f"{keys[key]} has no effect with {because}: the variant would train what it starts from; {live}"
            )
