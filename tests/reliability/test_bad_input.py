"""Bad input matrix: every invocation exits non-zero with one clear line naming the key, and leaves runs/ and
reports/ untouched (nothing written, Ray never started)."""

import pytest

from ablate.__main__ import main
from tests.helpers import cli

BAD = [
    (["sweep=nope"], "sweep='nope': unknown option"),
    (["sweep=technique_matrix", "kl=bogus"], "kl='bogus': unknown option"),
    (["sweep=technique_matrix", "length_norm=bogus"], "length_norm='bogus'"),
    (["sweep=technique_matrix", "token_mask=bogus"], "token_mask='bogus'"),
    (["sweep=technique_matrix", "dynamic_sampling=bogus"], "dynamic_sampling='bogus'"),
    (["sweep=technique_matrix", "update_epochs=3"], "update_epochs='3'"),
    (["sweep=technique_matrix", "k=5"], "k='5'"),
    (["sweep=technique_matrix", "adv_norm=bogus"], "adv_norm='bogus'"),
    (["sweep=technique_matrix", "entropy=bogus"], "entropy='bogus'"),
    (["sweep=technique_matrix", "clip=bogus"], "clip='bogus'"),
    (["sweep=technique_matrix", "reward_norm=bogus"], "reward_norm='bogus'"),
    (["sweep=technique_matrix", "lr_schedule=bogus"], "lr_schedule='bogus'"),
    (["sweep=technique_matrix", "optim.lr=fast"], "optim.lr='fast': must be of type"),
    (["sweep=technique_matrix", "algo.update_epochs=1.5"], "algo.update_epochs='1.5': must be of type"),
    (["sweep=technique_matrix", "algo.nope=1"], "algo.nope: no such key"),
    (["sweep=technique_matrix", "k=2", "algo.responses_per_prompt=1"], "algo.responses_per_prompt=1"),
    (["sweep=technique_matrix", "optim.lr=-0.1"], "optim.lr=-0.1: must be > 0"),
    (["sweep=technique_matrix", "algo.clip.epsilon=0"], "algo.clip.epsilon=0.0: must be > 0"),
    (["sweep=technique_matrix", "algo.entropy.final_ratio=2"], "algo.entropy.final_ratio=2.0"),
    (["sweep=technique_matrix", "seeds=0"], "seeds=0: must be >= 1"),
    (["sweep=technique_matrix", "seeds=[-1]"], "seeds=[-1]: seeds must be integers >= 0"),
    (["sweep=technique_matrix", "seeds=[1,1]"], "seeds must not repeat"),
    (["sweep=technique_matrix", "algo.update_epochs=0"], "algo.update_epochs=0"),
    (
        [
            "sweep=technique_matrix",
            "algo.responses_per_prompt=1",
            "adv_norm=none",
            "dynamic_sampling=drop_zero_std",
        ],
        "dynamic sampling",
    ),
    (["sweep=technique_matrix", "logger=tensorboard"], "logger='tensorboard'"),
    (["sweep=technique_matrix", "sweep.stats.correction=sidak"], "sweep.stats.correction='sidak'"),
    (
        ["sweep=technique_matrix", "sweep.baseline=entropy_off"],
        "sweep.variants.entropy_off: a variant may not reuse the baseline's name",
    ),
    (["sweep=technique_matrix", "+sweep.variants.empty=[]"], "sweep.variants.empty: empty override list"),
    (
        ["sweep=technique_matrix", "+sweep.variants.bad=['kl=nope']"],
        "variant 'bad': kl='nope': unknown option",
    ),
    (["sweep=technique_matrix", "+sweep.variants.launchy=['seeds=3']"], "sets a launch key"),
    (["sweep=paper1_hparam_scan", "sweep.baseline='lr=nope'"], "a factorial baseline must name a grid cell"),
    (["mode=report", "report_path=/nonexistent"], "report_path='/nonexistent': not a run directory"),
    (["not-an-override"], "not an override"),
    (
        ["mode=train", "rollout=vllm", "model=hf", "model.name=/nonexistent"],
        "rollout.backend='vllm': needs a CUDA GPU",
    ),
    (["sweep=technique_matrix", "+sweep.variants.x=[kl=k3_loss]"], "quote list items that contain '='"),
]


@pytest.mark.parametrize("argv, needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_invocation(argv, needle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rc = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "reports").exists()
    import ray

    assert not ray.is_initialized()


def test_malformed_sweep_files(tmp_path, monkeypatch, capsys):
    (tmp_path / "sp" / "sweep").mkdir(parents=True)
    (tmp_path / "sp" / "sweep" / "broken.yaml").write_text(
        "# @package sweep\nname: broken\nvariants: [unclosed\n"
    )
    (tmp_path / "sp" / "sweep" / "nobase.yaml").write_text(
        "# @package sweep\nname: nobase\naxes:\n  lr:\n    low: [optim.lr=1e-4]\n    high: [optim.lr=3e-4]\n"
    )
    (tmp_path / "sp" / "sweep" / "dup.yaml").write_text(
        "# @package sweep\nname: dup\nvariants:\n  a: [entropy=off]\n  a: [k=4]\n"
    )
    (tmp_path / "sp" / "sweep" / "typo.yaml").write_text(
        "# @package sweep\nname: typo\nvariantz:\n  a: [entropy=off]\n"
    )
    monkeypatch.chdir(tmp_path)
    sp = f"hydra.searchpath=[file://{tmp_path / 'sp'}]"
    for name, needle in [
        ("broken", "broken.yaml: malformed YAML at line 3"),
        ("nobase", "sweep.baseline='baseline': a factorial baseline must name a grid cell"),
        ("dup", "found duplicate key a"),
        ("typo", "variantz"),
    ]:
        assert main([sp, f"sweep={name}"]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (name, err)
    assert not (tmp_path / "runs").exists()


def test_exit_code_through_a_real_process(tmp_path):
    proc = cli(["sweep=technique_matrix", "seeds=0"], cwd=tmp_path)
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == "error: seeds=0: must be >= 1 (N runs seeds 0..N-1), or a list like [3,7]"
    )
    assert not (tmp_path / "runs").exists()
