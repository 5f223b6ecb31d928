"""reward=learned (ablate/trainer/reward_model.py): the labels the embedded reward model learns from, that it
learns them, that it is trained once and cached, that a real sequence-classification model scores through the
same path, and the proxy-gold reading of the report (ablate/stats/reward_gap.py), by hand."""

import pandas as pd
import pytest
import torch

from ablate.config import as_object
from ablate.stats.reward_gap import reward_gap_table
from ablate.trainer import reward_model as rm_mod
from ablate.trainer.models import build_tokenizer
from ablate.trainer.rewards import verify_exact
from ablate.trainer.tasks import load_task


def _setup(compose_cfg, *ov, small=True):
    cfg = as_object(compose_cfg(["reward=learned", *(["task.n_train=300"] if small else []), *ov]))
    task = load_task(cfg.task)
    return cfg, task, build_tokenizer(cfg.model, task.alphabet)


def test_labels_are_the_verifiers_with_noise_and_the_labellers_bias(compose_cfg):
    cfg, task, _ = _setup(compose_cfg, "algo.reward_model.label_noise=0", "algo.reward_model.bias=none")
    clean = rm_mod.candidates(task, cfg.algo.reward_model, task.alphabet)
    assert len(clean) == 6 * 300  # n_prompts 1000 > the 300 training prompts: every one, 6 candidates each
    assert all(y == verify_exact(text, task.train[i]).correct for i, text, y in clean)
    cfg, task, _ = _setup(compose_cfg, "algo.reward_model.label_noise=0", "algo.reward_model.bias_strength=1")
    biased = rm_mod.candidates(task, cfg.algo.reward_model, task.alphabet)
    longer = [
        y
        for i, text, y in biased
        if len(text.strip("<>")) > len(task.train[i].answer) + 1 and text.endswith(">")
    ]
    assert longer and all(y == 1.0 for y in longer)  # every lengthened answer labelled good, right or wrong
    cfg, task, _ = _setup(compose_cfg, "algo.reward_model.label_noise=0.2", "algo.reward_model.bias=none")
    noisy = rm_mod.candidates(task, cfg.algo.reward_model, task.alphabet)
    flipped = sum(y != verify_exact(text, task.train[i]).correct for i, text, y in noisy) / len(noisy)
    assert 0.17 < flipped < 0.23


@pytest.mark.slow
def test_the_embedded_reward_model_learns_correctness_and_is_cached(compose_cfg, tmp_path):
    cfg, task, tok = _setup(
        compose_cfg, f"warmstart.cache_dir={tmp_path}", "algo.reward_model.bias=none", small=False
    )
    scorer = rm_mod.RewardScorer(cfg, tok, task)
    files = list(tmp_path.glob("reward-model-*.pt"))
    assert len(files) == 1
    from random import Random

    from ablate.trainer.tasks.reverse import _corrupt

    rng = Random(7)  # held-out prompts: each answer and one teacher-style mistake of it
    rows = [
        (p, f"<{body}>") for p in task.eval[:100] for body in (p.answer, _corrupt(p.answer, rng, "abcdefgh"))
    ]
    scores = scorer(
        [tok.encode(p.prompt) for p, _ in rows], [tok.token_ids(t) + [tok.eos_token_id] for _, t in rows]
    )
    gold = torch.tensor([verify_exact(t, p).correct for p, t in rows])
    assert scores.min() >= 0 and scores.max() <= 1
    assert scores[gold == 1].mean() - scores[gold == 0].mean() > 0.1
    stamp = files[0].stat().st_mtime_ns
    again = rm_mod.RewardScorer(cfg, tok, task)  # from the cache: not retrained
    assert files[0].stat().st_mtime_ns == stamp
    torch.testing.assert_close(again([tok.encode(rows[0][0].prompt)], [tok.token_ids(rows[0][1])]),
                               scorer([tok.encode(rows[0][0].prompt)], [tok.token_ids(rows[0][1])]))  # fmt: skip


def test_a_real_sequence_classification_model_scores_the_decoded_text(compose_cfg, tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ablate.trainer.models import save_tiny_hf_model

    path = save_tiny_hf_model(tmp_path / "rm")
    AutoModelForSequenceClassification.from_pretrained(path, num_labels=1).save_pretrained(path)
    cfg, task, tok = _setup(compose_cfg, f"algo.reward_model.name={path}")
    scorer = rm_mod.RewardScorer(cfg, tok, task)
    prompts = [tok.encode(p.prompt) for p in task.eval[:3]]
    completions = [tok.token_ids(f"<{p.answer}>") for p in task.eval[:3]]
    got = scorer(prompts, completions)
    hf_tok, model = (
        AutoTokenizer.from_pretrained(path),
        AutoModelForSequenceClassification.from_pretrained(path),
    )
    texts = [p.prompt + f"<{p.answer}>" for p in task.eval[:3]]
    with torch.no_grad():
        want = torch.sigmoid(model(**hf_tok(texts, return_tensors="pt", padding=True)).logits[:, 0])
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_the_embedded_reward_model_is_refused_beyond_the_embedded_task(compose_cfg):
    from ablate.config import ConfigError, validate_trial

    with pytest.raises(ConfigError, match="algo.reward_model.name=''"):
        validate_trial(compose_cfg(["reward=learned", "task=arithmetic"]))


def _evals(variant, seed, proxy, gold):
    return [{"variant": variant, "seed": seed, "status": "done", "step": 10 * i, "eval/proxy_reward": p,
             "eval/positive_rate": g} for i, (p, g) in enumerate(zip(proxy, gold, strict=True))]  # fmt: skip


def test_the_proxy_gold_reading_by_hand():
    # 4 evals each, final fraction 0.5: the last 2. Seed 0: proxy 0.5 -> (0.7+0.9)/2 = 0.8, gold 0.4 -> 0.1;
    # seed 1: proxy 0.5 -> 0.7, gold 0.4 -> 0.2. Gap 0.7, 0.5 (mean 0.6); proxy change 0.3, 0.2; gold -0.3, -0.2
    metrics = pd.DataFrame(
        _evals("learned", 0, [0.5, 0.6, 0.7, 0.9], [0.4, 0.3, 0.1, 0.1])
        + _evals("learned", 1, [0.5, 0.6, 0.7, 0.7], [0.4, 0.3, 0.2, 0.2])
        + [{"variant": "verifier", "seed": 0, "status": "done", "step": 0, "eval/positive_rate": 0.4}]
    )
    t = reward_gap_table(metrics, ["verifier", "learned"], 0.5, 0.05).set_index("variant")
    assert list(t.index) == ["learned"]  # the verifier's arm has no proxy
    r = t.loc["learned"]
    half = 12.706204736 * 0.1  # t(0.975, 1 df) x sd / sqrt(n): sd of (0.7, 0.5) is 0.1414, / sqrt(2) = 0.1
    assert (r.proxy, r.gold, r.gap) == pytest.approx((0.75, 0.15, 0.6))
    assert (r.gap_low, r.gap_high) == pytest.approx((0.6 - half, 0.6 + half), rel=1e-6)
    assert r.proxy_change == pytest.approx(0.25) and r.gold_change == pytest.approx(-0.25)
    assert r.proxy_change_low < 0  # two seeds: the intervals are wide, so no reading is claimed
    assert r.reading == "no gap shown"
    three = pd.concat(
        [metrics, pd.DataFrame(_evals("learned", 2, [0.5, 0.6, 0.75, 0.85], [0.4, 0.3, 0.15, 0.15]))]
    )
    r3 = reward_gap_table(three, ["learned"], 0.5, 0.05).iloc[
        0
    ]  # changes 0.3, 0.2, 0.3 and -0.3, -0.2, -0.25
    assert r3.proxy_change_low > 0 and r3.gold_change_high < 0
    assert r3.reading == "reward hacking: the proxy rose while the gold fell"
