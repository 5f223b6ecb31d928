"""Health rules on hand-made histories; remedies never recommend what the trial's config already does."""

import numpy as np
import pandas as pd
import pytest

from ablate.stats.health import health_flags, health_table, remedy


def _cfg(**over) -> dict:
    cfg = {
        "algo": {
            "update_epochs": 2,
            "responses_per_prompt": 8,
            "loss_agg": "token-mean",
            "token_mask": "none",
            "entropy": {"coef": 0.0},
            "dynamic_sampling": {"mode": "off"},
        },
        "optim": {"lr": 3e-4, "grad_clip": 1.0},
        "rollout": {"temperature": 1.0, "max_response_length": 10},
    }
    for dotted, value in over.items():
        node = cfg
        *path, last = dotted.split("__")
        for part in path:
            node = node[part]
        node[last] = value
    return cfg


def _overfit_history(n=40) -> pd.DataFrame:
    """Each update moves the policy ever further from pi_old: approx KL 0.001, then 0.05 over the second half."""
    steps = np.arange(n)
    return pd.DataFrame(
        {
            "step": steps,
            "loss": 0.01 * (-1.0) ** steps,
            "reward/mean": 0.5 + 0.1 * (-1.0) ** steps,
            "approx_kl": np.where(steps < n // 2, 0.001, 0.05),
        }
    )


def test_epoch_overfit_fires_only_where_there_are_epochs_to_overfit():
    h = _overfit_history()
    assert "epoch_overfit" in health_flags(h)  # no config known: the rule as before
    assert "epoch_overfit" in health_flags(h, _cfg(algo__update_epochs=4))
    assert "epoch_overfit" not in health_flags(h, _cfg(algo__update_epochs=1))
    assert remedy("epoch_overfit", _cfg(algo__update_epochs=4)).startswith(
        "fewer update epochs, e.g. update_epochs=2 (now 4)"
    )
    assert "update_epochs=1 (now 2)" in remedy("epoch_overfit", _cfg())


def test_zero_group_std_remedy_skips_dynamic_sampling_already_on_and_caps_k():
    h = pd.DataFrame({"frac_reward_zero_std": [0.9] * 10, "positive_rate": [0.5] * 10})
    assert "zero_group_std" in health_flags(h)
    off = remedy("zero_group_std", _cfg(), h)
    assert "drop_zero_std" in off and "k=16" in off
    on = remedy("zero_group_std", _cfg(algo__dynamic_sampling__mode="drop_zero_std"), h)
    assert "drop_zero_std" not in on
    at_cap = remedy("zero_group_std", _cfg(algo__responses_per_prompt=32), h)
    assert "raise K" not in at_cap
    solved = pd.DataFrame({"frac_reward_zero_std": [0.95] * 10, "positive_rate": [0.97] * 10})
    easy = remedy("zero_group_std", _cfg(), solved)
    assert "raise K" not in easy and "harder prompts" in easy  # more samples of a solved prompt: still all 1


def test_length_hacking_remedy_skips_constant_aggregation_already_on():
    n = 20
    h = pd.DataFrame(
        {"reward/mean": np.linspace(0.2, 0.8, n), "completion_length/mean": np.linspace(4, 9, n)}
    )
    assert "length_hacking" in health_flags(h)
    assert "length_norm=constant" in remedy("length_hacking", _cfg(), h)
    const = remedy("length_hacking", _cfg(algo__loss_agg="seq-mean-token-sum-norm"), h)
    assert "length_norm=constant" not in const and "token_mask=truncated" in const
    both = remedy(
        "length_hacking", _cfg(algo__loss_agg="seq-mean-token-sum-norm", algo__token_mask="truncated"), h
    )
    assert "length_norm" not in both and "token_mask" not in both and "max_response_length below 10" in both


def test_entropy_collapse_remedy_raises_an_existing_bonus_instead_of_adding_one():
    h = pd.DataFrame({"entropy": [1.0, 0.2] + [0.2] * 18})
    assert "entropy_collapse" in health_flags(h)
    none = remedy("entropy_collapse", _cfg(), h)
    assert "add a small entropy bonus" in none
    has = remedy("entropy_collapse", _cfg(algo__entropy__coef=0.003), h)
    assert "add" not in has and "algo.entropy.coef=0.006" in has and "now 0.003" in has


def test_grad_norm_remedy_enables_clipping_only_when_it_is_off():
    h = pd.DataFrame({"grad_norm": [10.0] * 10})
    assert "tighten gradient clipping (optim.grad_clip=0.5" in remedy("grad_norm_spikes", _cfg(), h)
    assert "enable gradient clipping" in remedy("grad_norm_spikes", _cfg(optim__grad_clip=0.0), h)


def test_health_table_is_one_row_per_variant_and_flag_with_k_of_n():
    frames = []
    for variant in ("baseline", "update_epochs_1"):
        for seed in range(3):
            h = _overfit_history() if seed < 2 else _overfit_history().assign(approx_kl=0.004)
            frames.append(h.assign(variant=variant, seed=seed))
    metrics = pd.concat(frames, ignore_index=True)
    mu_of = {"baseline": 2, "update_epochs_1": 1}
    asked = []

    def config_of(variant, seed):
        asked.append((variant, seed))
        return _cfg(algo__update_epochs=mu_of[variant])

    t = health_table(metrics, config_of)
    rows = t[t.flag == "epoch_overfit"]
    assert rows.variant.tolist() == ["baseline"]  # μ = 1 cannot overfit its epochs
    row = rows.iloc[0]
    assert row.seeds == "2 of 3" and row.flagged_seeds == "0,1" and "update_epochs=1 (now 2)" in row.remedy
    assert not t.duplicated(["variant", "flag"]).any()
    assert ("baseline", 2) not in asked  # configs are read only for trials that raised a flag
    assert health_table(metrics.iloc[:0]).columns.tolist()[:3] == ["variant", "flag", "seeds"]


@pytest.mark.slow
def test_epoch_overfit_separates_many_epochs_from_the_baseline_on_real_trials():
    """The symptom, on trials of the embedded default: the baseline's mu=2 never trips it, mu=8 always does
    (the loss-curve form of the rule fired on 3 of 5 baseline seeds)."""
    from ablate.compose import compose
    from ablate.trainer.core import train

    rate = {}
    for mu in (2, 8):
        fired = [
            "epoch_overfit"
            in health_flags(pd.DataFrame([r for r in train(compose([f"update_epochs={mu}"]), s).history if "loss" in r]),
                            _cfg(algo__update_epochs=mu))
            for s in range(3)
        ]  # fmt: skip
        rate[mu] = sum(fired) / len(fired)
    print(f"epoch_overfit rate: baseline (mu=2) {rate[2]:.2f}, update_epochs=8 {rate[8]:.2f}")
    assert rate == {2: 0.0, 8: 1.0}


def test_zero_group_std_at_sparse_positives_asks_for_easier_prompts():
    """Positive rate ~0.2 (dynamic sampling's groups were all-wrong): 'harder prompts' would be backwards."""
    sparse = pd.DataFrame({"frac_reward_zero_std": [0.9] * 10, "positive_rate": [0.2] * 10})
    r = remedy("zero_group_std", _cfg(), sparse)
    assert "easier prompts (positive rate 0.20" in r and "harder" not in r
    rich = pd.DataFrame({"frac_reward_zero_std": [0.9] * 10, "positive_rate": [0.7] * 10})
    assert "harder prompts (positive rate 0.70" in remedy("zero_group_std", _cfg(), rich)


def test_a_remedy_the_sweeps_own_table_refutes_is_not_advised():
    from ablate.stats.health import refuted_settings

    table = pd.DataFrame(
        [
            {
                "variant": "baseline",
                "verdict": "baseline",
                "delta": np.nan,
                "ci_low": np.nan,
                "ci_high": np.nan,
            },
            {
                "variant": "update_epochs_1",
                "verdict": "hurts",
                "delta": -0.064,
                "ci_low": -0.107,
                "ci_high": -0.022,
            },
            {"variant": "k_16", "verdict": "helps", "delta": 0.05, "ci_low": 0.01, "ci_high": 0.09},
        ]
    )
    refuted = refuted_settings(
        table, {"baseline": [], "update_epochs_1": ["update_epochs=1"], "k_16": ["k=16"]}
    )
    assert list(refuted) == ["update_epochs=1"]
    r = remedy("epoch_overfit", _cfg(), refuted=refuted)  # mu=2: it would say update_epochs=1
    assert r.startswith("a lower lr (optim.lr=0.0001) (not: update_epochs=1 hurts in this sweep")
    assert "Δ -0.064 [-0.107, -0.022]" in r
    only = remedy(
        "epoch_overfit", _cfg(algo__update_epochs=2), refuted={**refuted, "optim.lr=0.0001": "lr hurts"}
    )
    assert only.startswith("none advised: update_epochs=1 hurts")
    assert (
        remedy("epoch_overfit", _cfg())
        == "fewer update epochs, e.g. update_epochs=1 (now 2) or a lower lr (optim.lr=0.0001)"
    )
