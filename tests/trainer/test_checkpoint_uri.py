"""Checkpoints in an object store: a trial saves to ``s3://`` and resumes from it bit for bit, its sharded
(FSDP) state through torch.distributed.checkpoint's fsspec writer and its own files through the same fsspec
layer. The store is fsspec's in-memory filesystem registered for ``s3`` (no s3fs, no network): it has no
atomic folder rename, as S3 has not, so the commit marker written last is what makes a checkpoint count."""

import fsspec
import pytest
import torch
from fsspec.implementations.memory import MemoryFileSystem
from fsspec.registry import _registry

from ablate.config import validate_trial
from ablate.trainer.checkpoint import MARKER, TrialCheckpoints, step_dir
from ablate.trainer.core import InjectedFault, train
from tests.conftest import FAST
from tests.helpers import without_time

CKPT = FAST + ["train.steps=6", "train.checkpoint_every=2", "train.checkpoint_keep=2"]


class FakeS3(MemoryFileSystem):
    """S3 as fsspec sees it, kept in this process's memory (its own store: not shared with memory://)."""

    protocol = ("s3",)
    store: dict = {}
    pseudo_dirs = [""]

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(str(path).removeprefix("s3://"))


@pytest.fixture
def s3(monkeypatch):
    monkeypatch.setattr(FakeS3, "store", {})
    monkeypatch.setattr(FakeS3, "pseudo_dirs", [""])
    FakeS3.clear_instance_cache()
    monkeypatch.setitem(_registry, "s3", FakeS3)  # fsspec's registered classes, restored after the test
    yield fsspec.filesystem("s3")
    FakeS3.clear_instance_cache()


def _objects(fs, prefix: str) -> list[str]:
    return sorted(p.split(prefix, 1)[1].lstrip("/") for p in fs.find(prefix))


def test_a_trial_killed_at_step_3_resumes_from_s3_bit_for_bit(compose_cfg, s3):
    uri = "s3://bucket/sweep/run/v/seed=0"
    validate_trial(
        compose_cfg(CKPT + ["train.checkpoint_dir=s3://bucket/ck"])
    )  # the launch check: s3 opens here
    full = train(compose_cfg(CKPT), 0)
    with pytest.raises(InjectedFault):
        train(compose_cfg(CKPT + ["train.fault_step=3"]), 0, checkpoint_uri=uri)
    # staged in place (no rename on S3): the marker, written last, is the commit
    assert _objects(s3, "/bucket/sweep/run/v/seed=0") == [
        f"{step_dir(2)}/{MARKER}",
        f"{step_dir(2)}/rank0.pt",
    ]
    again = train(compose_cfg(CKPT), 0, checkpoint_uri=uri)
    assert again.status == "done" and again.resumed_from == 2 and again.checkpoint_seconds > 0
    assert without_time(again.history) == without_time(full.history)
    assert sorted(d.rsplit("/", 1)[-1] for d in s3.ls("/bucket/sweep/run/v/seed=0", detail=False)) == [
        step_dir(2),
        step_dir(4),
    ]


def test_sharded_state_goes_through_dcps_fsspec_writer_and_back(s3):
    """FSDP's path: every rank's shards through torch.distributed.checkpoint (world 1 here, no group)."""
    ck = TrialCheckpoints("s3://bucket/ck", keep=1, config_hash="h")
    weights = {"w": torch.arange(6.0).reshape(2, 3)}
    ck.save(4, {"rng": torch.tensor([7.0])}, sharded=weights)
    files = _objects(s3, "/bucket/ck")
    assert f"{step_dir(4)}/.metadata" in files and any(f.endswith(".distcp") for f in files)
    assert ck.last_bytes == sum(s3.size(f"/bucket/ck/{f}") for f in files if not f.endswith(MARKER))
    template = {"w": torch.zeros(2, 3)}
    got = TrialCheckpoints("s3://bucket/ck", keep=1, config_hash="h").latest(sharded=lambda: template)
    assert got["step"] == 4 and got["rng"].tolist() == [7.0] and torch.equal(got["w"], weights["w"])
    assert TrialCheckpoints("s3://bucket/ck", keep=1, config_hash="other").latest() is None


def test_a_torn_save_without_its_marker_is_ignored_and_removed(s3):
    ck = TrialCheckpoints("s3://bucket/ck", keep=2, config_hash="h")
    ck.save(2, {"x": torch.tensor([1.0])})
    s3.pipe(f"/bucket/ck/{step_dir(4)}/rank0.pt", b"torn")  # a save killed before its marker
    assert ck.steps() == [2] and ck.latest()["x"].tolist() == [1.0]
    ck.save(6, {"x": torch.tensor([3.0])})
    assert sorted(d.rsplit("/", 1)[-1] for d in s3.ls("/bucket/ck", detail=False)) == [
        step_dir(2),
        step_dir(6),
    ]
