"""sweep.claims: checked at launch, one line per mistake (the forms: ablate/stats/claims.py)."""

from __future__ import annotations

import difflib
from typing import Any

from ablate.config.schema import ConfigError

FORMS = ("helps", "hurts", "equivalent", "negligible", "greater", "exceeds_all", "trend", "share")
# `curve: asymptote` decides a claim on the fitted curves' parameter (ablate/stats/curve_table.py) instead of
# the final scores; equivalence only on the asymptote, whose margin is sweep.stats.curve_sesoi
CURVES = ("asymptote", "efficiency", "midpoint")
SHAPES = ("increasing", "decreasing", "concave")

EXTRA = (
    "source",
    "says",
    "task",
    "curve",
)  # where a claim comes from (e.g. "Paper 3, Sec. 4"), its words, and the
# task it is about (`task: reverse_format`): decided from that task's arms of a task sweep (sweep.tasks), not
# tested in a sweep that does not run the task


def validate_claims(
    claims: Any,
    variants: list[str],
    baseline: str,
    sesoi: float | None,
    axes: list[str] = (),
    curve_sesoi: float | None = None,
) -> None:
    if not claims:
        return
    if not isinstance(claims, list):
        raise ConfigError("sweep.claims: a list of claims, e.g. [{helps: k_16}, {greater: [k_16, k_4]}]")
    for i, c in enumerate(claims):
        at = f"sweep.claims[{i}]"
        if not isinstance(c, dict):
            raise ConfigError(f"{at}={c!r}: a mapping with one form: {', '.join(FORMS)}")
        forms = [k for k in c if k in FORMS]
        unknown = [str(k) for k in c if k not in FORMS and k not in EXTRA]  # (YAML reads a bare on: as True)
        if unknown:
            near = difflib.get_close_matches(unknown[0], [*FORMS, *EXTRA], n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            raise ConfigError(
                f"{at}.{unknown[0]}: not a claim form; forms: {', '.join(FORMS)} (and {', '.join(EXTRA)}){hint}"
            )
        if len(forms) != 1:
            raise ConfigError(
                f"{at}: exactly one form per claim, got {forms or 'none'}; forms: {', '.join(FORMS)}"
            )
        form = forms[0]
        if "task" in c:
            _check_on(f"{at}.task", c["task"], form)
        if "curve" in c:
            _check_curve(f"{at}.curve", c, form)
        if form == "share":
            _check_share(f"{at}.share", c[form], list(axes))
        else:
            margin = curve_sesoi if "curve" in c else sesoi
            _check_arg(f"{at}.{form}", form, c[form], variants, baseline, margin, "curve" in c)


def _check_curve(at: str, c: dict, form: str) -> None:
    curve = c["curve"]
    if curve not in CURVES:
        raise ConfigError(f"{at}={curve!r}: a curve parameter; allowed: {', '.join(CURVES)}")
    if form == "share" or "task" in c:
        raise ConfigError(
            f"{at}: a {'share' if form == 'share' else 'task'} claim reads final scores; drop curve"
        )
    if form in ("equivalent", "negligible") and curve != "asymptote":
        raise ConfigError(
            f"{at}={curve}: equivalence has a margin on the asymptote only (sweep.stats.curve_sesoi)"
        )


def _check_on(at: str, task: Any, form: str) -> None:
    from ablate.compose import group_options

    tasks = group_options("task")
    if form == "share":
        raise ConfigError(f"{at}: a share claim reads a factorial sweep, which runs one task; drop task")
    if not isinstance(task, str) or task not in tasks:
        raise ConfigError(f"{at}={task!r}: a task option; allowed: {', '.join(tasks)}")


def _check_share(at: str, arg: Any, axes: list[str]) -> None:
    if not axes:
        raise ConfigError(f"{at}: a share claim needs a factorial sweep (sweep.axes); this sweep has none")
    if not isinstance(arg, dict) or set(arg) != {"factors", "at_least"}:
        raise ConfigError(f"{at}={arg!r}: {{factors: [axis, ...], at_least: 0.7}}")
    names = arg["factors"] if isinstance(arg["factors"], list) else [arg["factors"]]
    for a in names:
        if a not in axes:
            raise ConfigError(f"{at}.factors: {a!r} is not an axis of this sweep; axes: {', '.join(axes)}")
    if not isinstance(arg["at_least"], int | float) or not 0 < arg["at_least"] < 1:
        raise ConfigError(f"{at}.at_least={arg['at_least']!r}: a share in (0, 1)")


def _names(at: str, value: Any, variants: list[str], n: int | None = None, least: int = 1) -> list[str]:
    vals = [value] if isinstance(value, str) else value
    if not isinstance(vals, list) or not all(isinstance(v, str) for v in vals):
        raise ConfigError(f"{at}={value!r}: variant names (a name or a list)")
    if n is not None and len(vals) != n:
        raise ConfigError(f"{at}={vals}: needs exactly {n} variants")
    if len(vals) < least:
        raise ConfigError(f"{at}={vals}: needs at least {least} variants")
    for v in vals:
        if v not in variants:
            near = difflib.get_close_matches(v, variants, n=1)
            hint = f"; did you mean {near[0]}?" if near else f"; variants: {', '.join(variants)}"
            raise ConfigError(f"{at}: {v!r} is not a variant of this sweep{hint}")
    if len(set(vals)) != len(vals):
        raise ConfigError(f"{at}={vals}: a variant named twice")
    return vals


def _check_arg(
    at: str, form: str, arg: Any, variants: list[str], baseline: str, sesoi: float | None, curve: bool = False
) -> None:
    if form in ("helps", "hurts", "equivalent"):
        if not isinstance(arg, str):
            raise ConfigError(f"{at}={arg!r}: one variant name")
        (v,) = _names(at, arg, variants)
        if v == baseline:
            raise ConfigError(f"{at}: {v!r} is the baseline; a claim compares a variant with it")
    elif form == "negligible":
        for v in _names(at, arg, variants):
            if v == baseline:
                raise ConfigError(f"{at}: {v!r} is the baseline; a claim compares a variant with it")
    elif form == "greater":
        _names(at, arg, variants, n=2)
    elif form == "exceeds_all":
        if not isinstance(arg, dict) or set(arg) != {"effect", "than"}:
            raise ConfigError(
                f"{at}={arg!r}: {{effect: [A, B], than: [C, ...]}} (the gain A - B exceeds |C - baseline|)"
            )
        _names(f"{at}.effect", arg["effect"], variants, n=2)
        than = _names(f"{at}.than", arg["than"], variants)
        if baseline in than:
            raise ConfigError(f"{at}.than: the baseline's own Δ is 0; name variants")
    else:  # trend
        if not isinstance(arg, dict) or set(arg) != {"levels", "shape"}:
            raise ConfigError(
                f"{at}={arg!r}: {{levels: [V1, V2, ...] (in order), shape: {' | '.join(SHAPES)}}}"
            )
        if arg["shape"] not in SHAPES:
            raise ConfigError(f"{at}.shape={arg['shape']!r}: allowed: {', '.join(SHAPES)}")
        _names(f"{at}.levels", arg["levels"], variants, least=3 if arg["shape"] == "concave" else 2)
    if form in ("equivalent", "negligible") and not sesoi:
        key = "curve_sesoi" if curve else "sesoi"
        raise ConfigError(
            f"{at}: needs sweep.stats.{key} (the margin inside which a difference is negligible)"
        )


def claim_lines(
    claims: list[dict], baseline: str, sesoi: float | None, tasks: list[str] | None = None
) -> list[str]:
    """One line per sweep-file claim, with its source: for dry runs (no statistics imported). With ``tasks``
    (the tasks the run runs), a claim about another task says it will not be tested."""
    out = []
    for c in claims:
        form = next(k for k in c if k in FORMS)
        arg = c[form]
        if form in ("helps", "hurts"):
            text = f"{arg} {form} (vs {baseline})"
        elif form in ("equivalent", "negligible"):
            text = (
                f"{', '.join(arg) if isinstance(arg, list) else arg} {form} (within ±{sesoi:g} of {baseline})"
            )
        elif form == "greater":
            text = f"{arg[0]} > {arg[1]}"
        elif form == "exceeds_all":
            text = f"{arg['effect'][0]} - {arg['effect'][1]} exceeds |Δ| of each of {', '.join(arg['than'])}"
        elif form == "share":
            text = f"{', '.join(arg['factors'])} explain >= {arg['at_least']:.0%} of the variation"
        else:
            text = f"{arg['shape']} over {', '.join(arg['levels'])}"
        if c.get("curve"):
            text += f" in the curves' {c['curve']}"
        if c.get("task"):
            text += f" on {c['task']}"
            if tasks is not None and c["task"] not in tasks:
                text += " (not tested: the run has no such task)"
        source = ": ".join(x for x in (str(c.get("source", "")), str(c.get("says", ""))) if x)
        out.append(text + (f"  [{source}]" if source else ""))
    return out
