"""Your reward functions (``task.rewards``) in place of the rule verifier, called as TRL and verl call them.

A reference is ``FILE.py:fn`` or ``package.module:fn``. Two signatures, told apart by parameter names or
declared (``task.reward_signature``):

- TRL's: ``fn(prompts, completions, **columns) -> list[float | None]``, once per batch; ``columns`` are the
  problem's fields (your data's columns, ``answer`` for the built-in tasks) as lists aligned with the batch,
  and ``completion_ids``; a parameter the function does not take is not passed unless it has ``**kwargs``.
- verl's: ``compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float | dict``, once
  per sample; a dict's ``score`` is the reward.

None means "does not apply" (TRL's rule): left out of that function's mean, counted in its ``none_frac``, and
0 in the weighted sum. A function that raises, returns NaN, a wrong count or a wrong type fails the trial with
the offending sample and its own traceback (``RewardError``: in the trial's status.json), never a silent 0.
The driver loads each function before launch (``check``), so a wrong path, name or signature is one line.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import math
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from ablate.config.metrics import reward_names
from ablate.config.schema import ConfigError

SIGNATURES = ("trl", "verl")
_TRL_NAMES = {"prompts", "completions"}
_VERL_NAMES = {"data_source", "solution_str", "ground_truth"}
_VERL_ARGS = ("data_source", "solution_str", "ground_truth", "extra_info")


class RewardError(RuntimeError):
    """A reward function failed on a batch: the trial fails with this message (sample and traceback)."""


@dataclass(frozen=True)
class RewardBatch:
    """What a reward function sees of one batch, as plain data (it travels to the reward's process)."""

    prompts: list[str]
    completions: list[str]
    completion_ids: list[list[int]]
    columns: list[dict]  # each row's problem fields
    answers: list[str]  # each row's reference answer (verl's ground_truth)
    data_source: str  # verl's data_source: the task's name or data path


def split_ref(ref: str) -> tuple[str, str]:
    """``FILE.py:fn`` or ``package.module:fn`` -> (file or module, function name); ConfigError if neither."""
    where, sep, name = str(ref).rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise ConfigError(
            f"task.rewards: {ref!r} is not FILE.py:function or package.module:function "
            "(e.g. task.rewards=[my_reward.py:reward])"
        )
    return where, name


def is_file_ref(ref: str) -> bool:
    return split_ref(ref)[0].endswith(".py")


def absolute_ref(ref: str) -> str:
    """A file reference made absolute (trials run in another folder); a module reference as it is."""
    where, name = split_ref(ref)
    return f"{Path(os.path.expanduser(where)).resolve()}:{name}" if where.endswith(".py") else ref


def load(ref: str):
    """The function ``ref`` names, imported (a file by its path, under a name of its own); ConfigError in one
    line when it cannot be."""
    where, name = split_ref(ref)
    try:
        module = _import_file(where) if where.endswith(".py") else importlib.import_module(where)
    except ConfigError:
        raise
    except Exception as e:  # the user's module failing at import: name it, with its own error
        raise ConfigError(f"task.rewards: importing {where} failed: {e.__class__.__name__}: {e}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        found = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise ConfigError(f"task.rewards: {where} has no function {name!r}; its functions: {', '.join(found) or '(none)'}")  # fmt: skip
    return fn


def _import_file(path: str):
    p = Path(os.path.expanduser(path)).resolve()
    if not p.is_file():
        raise ConfigError(f"task.rewards: no such file {path!r}")
    # named by path and contents: a reused process (a Ray worker's next trial) imports an edited file anew
    mod_name = "ablate_reward_" + hashlib.sha256(str(p).encode() + p.read_bytes()).hexdigest()[:16]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, p)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # before executing: dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module


def signature_of(fn, declared: str = "auto", ref: str = "") -> str:
    """``trl`` or ``verl`` for ``fn``: the declared one, checked against its parameters, or the one its
    parameter names show; ConfigError in one line when neither fits."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        raise ConfigError(f"task.rewards: cannot read the parameters of {ref or fn!r}") from None
    names = set(params)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    verl_ok = _VERL_NAMES <= names or (len(positional) >= 4 and not names & _TRL_NAMES)
    required = {
        n
        for n, p in params.items()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    trl_ok = "completions" in names or (var_kw and required <= _TRL_NAMES)
    if declared not in ("auto", *SIGNATURES):
        raise ConfigError(f"task.reward_signature={declared!r}: allowed: auto, trl, verl")
    if declared == "verl" and not verl_ok:
        raise ConfigError(f"task.rewards: {ref} does not take verl's (data_source, solution_str, ground_truth, extra_info)")  # fmt: skip
    if declared == "trl" and not trl_ok:
        raise ConfigError(f"task.rewards: {ref} does not take TRL's completions (fn(prompts, completions, **kwargs))")  # fmt: skip
    if declared != "auto":
        return declared
    if _VERL_NAMES & names and not _TRL_NAMES & names:
        return "verl"
    if trl_ok:
        return "trl"
    raise ConfigError(
        f"task.rewards: cannot tell the signature of {ref} from its parameters ({', '.join(params) or 'none'}): "
        "TRL's fn(prompts, completions, **kwargs) or verl's compute_score(data_source, solution_str, "
        "ground_truth, extra_info); or declare task.reward_signature=trl|verl"
    )


def source_file(ref: str) -> Path | None:
    """The file that holds ``ref``'s function (a module's own file), for the fingerprint and the node check."""
    where, _ = split_ref(ref)
    if where.endswith(".py"):
        return Path(where)
    found = importlib.util.find_spec(where)
    return Path(found.origin) if found and found.origin and found.origin.endswith(".py") else None


def fingerprint(refs: list[str]) -> str:
    """sha256 of each reference and its source file's bytes (16 hex digits): an edited reward is a new trial."""
    h = hashlib.sha256()
    for ref in refs:
        h.update(ref.encode())
        f = source_file(ref)
        if f is not None and f.is_file():
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


# ---- calling ---------------------------------------------------------------------------------------------
def call(ref: str, signature: str, batch: RewardBatch, planned: str = "") -> list[float | None]:
    """One function on one batch -> a reward (or None) per completion; RewardError with the sample otherwise.
    ``planned``: the fingerprint of ``ref`` the trial started with; a file edited mid-trial stops it."""
    if planned and fingerprint([ref]) != planned:
        raise RewardError(f"reward {ref}: its file changed while the trial ran (planned {planned}, now "
                          f"{fingerprint([ref])}); rerun the command to plan it anew")  # fmt: skip
    fn = load(ref)  # imported once per process and contents (_import_file)
    if signature == "verl":
        by_name = _verl_by_name(fn)
        return [_verl_one(fn, ref, batch, i, by_name) for i in range(len(batch.completions))]
    try:
        out = fn(**_trl_kwargs(fn, batch))
    except Exception as e:
        raise RewardError(f"reward {ref} raised {_exc(e)} on a batch of {len(batch.completions)} completions "
                          f"(first: {_sample(batch, 0)})\n{traceback.format_exc()}") from None  # fmt: skip
    if not isinstance(out, (list, tuple)) and hasattr(out, "tolist"):
        out = out.tolist()  # a tensor or array
    if not isinstance(out, (list, tuple)) or len(out) != len(batch.completions):
        got = f"{len(out)} values" if isinstance(out, (list, tuple)) else type(out).__name__
        raise RewardError(f"reward {ref} returned {got} for {len(batch.completions)} completions (one per completion, or None)")  # fmt: skip
    return [_checked(v, ref, batch, i) for i, v in enumerate(out)]


def _trl_kwargs(fn, batch: RewardBatch) -> dict:
    cols = {
        k: [row.get(k) for row in batch.columns]
        for k in dict.fromkeys(k for row in batch.columns for k in row)
    }
    given = {**cols, "prompts": batch.prompts, "completions": batch.completions,
             "completion_ids": batch.completion_ids}  # fmt: skip
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return given
    return {k: v for k, v in given.items() if k in params}


def _verl_by_name(fn) -> bool:
    """verl passes its arguments by name: so does ablate where the function takes all four names."""
    params = inspect.signature(fn).parameters
    return _VERL_NAMES <= set(params) and ("extra_info" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()))  # fmt: skip


def _verl_one(fn, ref: str, batch: RewardBatch, i: int, by_name: bool) -> float | None:
    row = batch.columns[i]
    extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else dict(row)
    args = (row.get("data_source", batch.data_source), batch.completions[i], batch.answers[i], extra)
    try:
        out = fn(**dict(zip(_VERL_ARGS, args, strict=True))) if by_name else fn(*args)
    except Exception as e:
        raise RewardError(
            f"reward {ref} raised {_exc(e)} on {_sample(batch, i)}\n{traceback.format_exc()}"
        ) from None
    if isinstance(out, dict):
        if "score" not in out:
            raise RewardError(f"reward {ref} returned a dict without 'score' ({sorted(out)}) on {_sample(batch, i)}")  # fmt: skip
        out = out["score"]
    return _checked(out, ref, batch, i)


def _checked(v, ref: str, batch: RewardBatch, i: int) -> float | None:
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if not isinstance(v, (int, float)):  # bool is an int: True scores 1
        raise RewardError(f"reward {ref} returned {type(v).__name__} {v!r} on {_sample(batch, i)} (a number or None)")  # fmt: skip
    if not math.isfinite(v):
        raise RewardError(f"reward {ref} returned {v} on {_sample(batch, i)} (None means 'does not apply')")
    return float(v)


class UserRewards:
    """One trial's reward functions: each called on a batch (in the reward process with its time limit, or
    in-process with ``task.reward_timeout=0``), combined as ``scale * sum(weight * reward)``."""

    def __init__(self, t):
        self.refs = list(t.rewards)
        if t.reward_fingerprint and fingerprint(self.refs) != t.reward_fingerprint:
            raise ConfigError(f"task.rewards: the reward functions' files changed since the run was planned "
                              f"(fingerprint {t.reward_fingerprint}, now {fingerprint(self.refs)}); rerun the "
                              "command to plan it anew")  # fmt: skip
        self.weights = [float(w) for w in t.reward_weights] or [1.0] * len(self.refs)
        self.signatures = [signature_of(load(r), t.reward_signature, r) for r in self.refs]
        self.names = reward_names(self.refs)
        self.planned = {r: fingerprint([r]) for r in self.refs}  # each file as the trial found it
        self.timeout, self.scale, self.above = (
            float(t.reward_timeout),
            float(t.reward_scale),
            float(t.correct_above),
        )

    def score(self, batch: RewardBatch) -> tuple[list[float], list[float], dict]:
        """-> (reward per completion, correct per completion, {"reward/<name>/mean", ".../none_frac"})."""
        total = [0.0] * len(batch.completions)
        info = {}
        for ref, sig, name, w in zip(self.refs, self.signatures, self.names, self.weights, strict=True):
            values = self._call(ref, sig, batch)
            given = [v for v in values if v is not None]
            # over the samples it applies to (0 when none does: none_frac 1 says so; every rank has the key)
            info[f"reward/{name}/mean"] = sum(given) / len(given) if given else 0.0
            info[f"reward/{name}/none_frac"] = 1 - len(given) / max(len(values), 1)
            total = [t + w * (v or 0.0) for t, v in zip(total, values, strict=True)]
        return [self.scale * t for t in total], [float(t > self.above) for t in total], info

    def _call(self, ref: str, sig: str, batch: RewardBatch) -> list[float | None]:
        if self.timeout <= 0:
            return call(ref, sig, batch, self.planned[ref])
        from ablate.trainer.timeouts import WorkerDied, call_with_timeout

        try:
            return call_with_timeout(call, (ref, sig, batch, self.planned[ref]), self.timeout)
        except WorkerDied as e:
            raise RewardError(f"reward {ref}: {str(e).split(' ', 1)[1]} on a batch of {len(batch.completions)} "
                              f"completions (first: {_sample(batch, 0)})") from None  # fmt: skip
        except TimeoutError:
            raise RewardError(f"reward {ref} ran over task.reward_timeout={self.timeout:g} s on a batch of "
                              f"{len(batch.completions)} completions (first: {_sample(batch, 0)})") from None  # fmt: skip


def _exc(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{e.__class__.__name__}: {text[:200]}" if text else e.__class__.__name__


def _sample(batch: RewardBatch, i: int) -> str:
    def short(s: str) -> str:
        s = str(s)
        return repr(s if len(s) <= 120 else s[:117] + "...")

    return f"sample {i} (prompt {short(batch.prompts[i])}, completion {short(batch.completions[i])})"
