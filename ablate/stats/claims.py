"""Claims a sweep file states (`claims:`), each decided from the same paired data as the table.

A claim is a contrast of the variants' final scores, computed per seed over the seeds finished in every
variant it names, with a t-interval at one level for the sweep's claims (Bonferroni: 1 - alpha/m, m = the
claims after `negligible` lists are expanded), so a false claim is called supported at most alpha of the
time over the whole family. The verdict is read off that interval: supported / contradicted / inconclusive.

Forms (the estimate is oriented so that positive means "as claimed"; helps, hurts, greater and exceeds_all
read "better" by the sweep's higher_is_better, trends read the metric itself):
- helps: V / hurts: V          V - baseline;  supported: interval > 0;  contradicted: interval < 0
- equivalent: V                V - baseline;  supported: inside +-sesoi;  contradicted: beyond +-sesoi
- negligible: [V, ...]         one `equivalent` claim per variant
- greater: [A, B]              A - B;  as helps
- exceeds_all: {effect: [A, B], than: [C, ...]}   the gain A - B exceeds |C - baseline| for every C: an
                               intersection-union test of (A-B) - (C-base) > 0 and (A-B) + (C-base) > 0 for
                               every C; supported when every component is, contradicted when one component's
                               interval is < 0; the row shows the weakest component
- share: {factors: [lr, batch, k], at_least: 0.7}   factorial sweeps: the share of the seed-adjusted variation
                               of the scores that those axes' main effects and two-way interactions explain
                               (balanced over the seeds finished in every cell), with a percentile interval from
                               resampling seeds; supported: interval >= at_least; contradicted: interval < it
- trend: {levels: [V1, V2, ...], shape: increasing | decreasing | concave}   a contrast over the ordered
                               levels (equally spaced ranks r): the slope per level for increasing/decreasing,
                               the curvature c of a + b r + c r² for concave (c < 0 = as claimed)
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ablate.config.claims import FORMS, SHAPES  # noqa: F401  (the one list of forms: checked at launch)
from ablate.stats.tests import paired_half_width

VERDICTS = ("supported", "contradicted", "inconclusive")


def expand(claims: list[dict]) -> list[dict]:
    """Sweep-file claims -> one dict per tested claim: form, variants (what it reads), shape/than, source,
    says. ``negligible`` lists become one claim per variant. Assumes validate_claims passed."""
    out = []
    for c in claims:
        form = next(k for k in c if k in FORMS)
        arg = c[form]
        base = {"form": form, "source": str(c.get("source", "")), "says": str(c.get("says", "")),
                "on": str(c.get("task") or ""), "curve": str(c.get("curve") or "")}  # fmt: skip
        if form == "negligible":
            out += [{**base, "variants": [v]} for v in arg]
        elif form in ("helps", "hurts", "equivalent"):
            out.append({**base, "variants": [arg]})
        elif form == "greater":
            out.append({**base, "variants": list(arg)})
        elif form == "exceeds_all":
            out.append({**base, "variants": list(arg["effect"]), "than": list(arg["than"])})
        elif form == "share":
            out.append(
                {**base, "variants": [], "factors": list(arg["factors"]), "at_least": float(arg["at_least"])}
            )
        else:
            out.append({**base, "variants": list(arg["levels"]), "shape": arg["shape"]})
    return out


def named_variants(claim: dict) -> list[str]:
    return [*claim["variants"], *claim.get("than", [])]


def label(c: dict, baseline: str, sesoi: float | None) -> str:
    text = _label(c, baseline, sesoi)
    text = f"{text} in the {c['curve']}" if c.get("curve") else text
    return f"{text} on {c['on']}" if c.get("on") else text


def _label(c: dict, baseline: str, sesoi: float | None) -> str:
    v, form = c["variants"], c["form"]
    if form in ("helps", "hurts"):
        return f"{v[0]} {form}"
    if form in ("equivalent", "negligible"):
        return f"{v[0]} {form} (±{sesoi:g})"
    if form == "greater":
        return f"{v[0]} > {v[1]}"
    if form == "exceeds_all":
        return f"{v[0]} - {v[1]} exceeds |Δ| of each of {', '.join(c['than'])}"
    if form == "share":
        return f"{', '.join(c['factors'])} explain >= {c['at_least']:.0%} of the variation"
    return f"{c['shape']} over {', '.join(v)}"


def _interval(x: np.ndarray, level: float, pooled: tuple[float, int]) -> tuple[float, float, float, str]:
    """(estimate, low, high, sd source) under the table's rule for spreads (ablate.stats.tests)."""
    m, h, source = paired_half_width(x, 1 - (1 - level) / 2, pooled)
    return m, m - h, m + h, source


def _components(c: dict, y: pd.DataFrame, baseline: str, sign: float) -> list[np.ndarray]:
    """Per-seed contrasts, oriented so that > 0 is as claimed (several for exceeds_all)."""
    v, form = c["variants"], c["form"]
    if form in ("helps", "equivalent", "negligible"):
        return [sign * (y[v[0]] - y[baseline]).to_numpy()]
    if form == "hurts":
        return [-sign * (y[v[0]] - y[baseline]).to_numpy()]
    if form == "greater":
        return [sign * (y[v[0]] - y[v[1]]).to_numpy()]
    if form == "exceeds_all":
        gain = y[v[0]] - y[v[1]]
        return [sign * (gain + s * (y[t] - y[baseline])).to_numpy() for t in c["than"] for s in (-1.0, 1.0)]
    r = np.arange(len(v), dtype=float) - (len(v) - 1) / 2  # centered ranks of the levels
    w = r if c["shape"] != "concave" else r**2 - np.mean(r**2)
    w = w / (w @ (r if c["shape"] != "concave" else r**2))  # slope per level / curvature c of a + b r + c r²
    value = y[v].to_numpy() @ w
    return [value if c["shape"] == "increasing" else -value]


def _verdict(form: str, lo: float, hi: float, sesoi: float | None) -> str:
    if math.isnan(lo):
        return "inconclusive"
    if form in ("equivalent", "negligible"):
        if -sesoi < lo and hi < sesoi:
            return "supported"
        return "contradicted" if lo > sesoi or hi < -sesoi else "inconclusive"
    return "supported" if lo > 0 else "contradicted" if hi < 0 else "inconclusive"


def _balanced(summ: pd.DataFrame, factors: dict[str, dict[str, str]]) -> pd.DataFrame:
    """seed x cell scores of the factorial grid, over the seeds finished in every cell."""
    ok = summ[(summ.status == "done") & summ.final.map(lambda x: math.isfinite(float(x)))]
    ok = ok[ok.variant.isin(list(factors))]
    return (
        ok.pivot_table(index="seed", columns="variant", values="final", aggfunc="first")
        .reindex(columns=list(factors))
        .dropna()
    )


def _share(y: np.ndarray, levels: dict[str, np.ndarray], names: list[str]) -> float:
    """Balanced design, y: seeds x cells. SS of the named axes' main effects and two-way interactions over
    the variation left after the seed block."""
    cell = y.mean(axis=0)
    grand = cell.mean()
    total = float(((y - y.mean(axis=1, keepdims=True)) ** 2).sum())
    n = y.shape[0]

    def fitted(axes: tuple[str, ...]) -> np.ndarray:  # each cell's mean over the cells sharing its levels
        key = np.array(["|".join(levels[a][i] for a in axes) for i in range(len(cell))])
        return np.array([cell[key == k].mean() for k in key])

    ss = 0.0
    for i, a in enumerate(names):
        ma = fitted((a,))
        ss += n * float(((ma - grand) ** 2).sum())
        for b in names[i + 1 :]:
            mab, mb = fitted((a, b)), fitted((b,))
            ss += n * float(((mab - ma - mb + grand) ** 2).sum())
    return ss / total if total > 0 else math.nan


def variance_share(summ: pd.DataFrame, factors: dict[str, dict[str, str]], names: list[str]) -> float:
    y = _balanced(summ, factors)
    levels = {a: np.array([factors[c][a] for c in y.columns]) for a in names}
    return _share(y.to_numpy(), levels, names)


def _share_claim(summ, factors, c, level, n_boot=2000):
    y = _balanced(summ, factors)
    levels = {a: np.array([factors[cell][a] for cell in y.columns]) for a in c["factors"]}
    arr = y.to_numpy()
    est = _share(arr, levels, c["factors"]) if len(arr) >= 2 else math.nan
    if len(arr) < 2:
        return len(arr), est, math.nan, math.nan
    rng = np.random.default_rng(0)  # the same interval on every read of the same store
    boot = [_share(arr[rng.integers(0, len(arr), len(arr))], levels, c["factors"]) for _ in range(n_boot)]
    q = (1 - level) / 2
    lo, hi = np.nanquantile(boot, [q, 1 - q])
    return len(arr), est, float(lo), float(hi)


def claims_table(
    summ: pd.DataFrame,
    claims: list[dict],
    baseline: str,
    alpha: float,
    sesoi: float | None,
    higher_is_better: bool = True,
    factors: dict[str, dict[str, str]] | None = None,
    tasks: list[str] | None = None,
    task_summ: pd.DataFrame | None = None,
    spread: tuple[float, int] = (math.nan, 0),
    curves: dict[str, pd.DataFrame] | None = None,
    curve_sesoi: float | None = None,
) -> pd.DataFrame:
    """One row per claim: claim, form, source, says, n_pairs, estimate, ci_low, ci_high, ci_level, verdict.
    ``summ``: one row per trial (variant, seed, status, final), as ablate.stats.summary makes it (a task sweep's
    pooled one); ``task_summ``: a task sweep's trials (<variant>@<task>), for the claims made ``on`` a task.
    A claim on a task the run did not run is 'not tested' and outside the family. ``spread``: the table's
    pooled (sd, df) of paired differences, for a contrast identical on every seed."""
    every = expand(claims)
    if not every:
        return pd.DataFrame()
    tasks = list(tasks or [])
    tested = [c for c in every if not c["on"] or c["on"] in tasks]
    level = 1 - alpha / max(len(tested), 1)
    sign = 1.0 if higher_is_better else -1.0

    def wide_of(frame: pd.DataFrame) -> pd.DataFrame:
        ok = frame[(frame.status == "done") & frame.final.map(lambda x: math.isfinite(float(x)))]
        return ok.pivot_table(index="seed", columns="variant", values="final", aggfunc="first")

    pooled = wide_of(summ)
    per_task = wide_of(task_summ) if task_summ is not None and len(task_summ) else pd.DataFrame()
    rows = []
    for c in every:
        head = {
            "claim": label(c, baseline, sesoi),
            "form": c["form"],
            "source": c["source"],
            "says": c["says"],
        }
        if c["on"] and c["on"] not in tasks:
            rows.append(head | {"n_pairs": 0, "estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                                "ci_level": math.nan, "verdict": "not tested",
                                "why": f"the run has no task {c['on']} (run it with sweep.tasks)"})  # fmt: skip
        elif c["form"] == "share":
            rows.append(head | _share_row(summ, factors or {}, c, level))
        elif c["curve"]:  # the fits' parameter per seed; a smaller C_mid is better whatever the metric
            up = sign if c["curve"] != "midpoint" else -1.0
            head["claim"] = label(c, baseline, curve_sesoi)
            wide = (curves or {}).get(c["curve"], pd.DataFrame())
            rows.append(head | _paired_row(c, wide, baseline, up, level, curve_sesoi, (math.nan, 0)))
        else:
            wide = pooled
            if c["on"]:  # that task's arms, named as the pooled ones
                mine = [col for col in per_task.columns if col.endswith(f"@{c['on']}")]
                wide = per_task[mine].rename(columns=lambda col: col.rpartition("@")[0])
            rows.append(head | _paired_row(c, wide, baseline, sign, level, sesoi, spread))
    return pd.DataFrame(rows)


def _share_row(summ: pd.DataFrame, factors: dict, c: dict, level: float) -> dict:
    n, est, lo, hi = _share_claim(summ, factors, c, level)
    verdict = (
        "inconclusive" if math.isnan(lo)
        else "supported" if lo >= c["at_least"] else "contradicted" if hi < c["at_least"] else "inconclusive"
    )  # fmt: skip
    return {"n_pairs": n, "estimate": est, "ci_low": lo, "ci_high": hi, "ci_level": level, "verdict": verdict}


def _paired_row(c: dict, wide: pd.DataFrame, baseline: str, sign: float, level: float, sesoi, pooled) -> dict:
    """A claim on paired differences: its components' intervals, the weakest read (exceeds_all: every one).
    A component identical on every seed is read with the sweep's pooled sd, or not at all (the table's rule)."""
    named = [*named_variants(c), *([baseline] if c["form"] not in ("greater", "trend") else [])]
    y = wide.reindex(columns=list(dict.fromkeys(named))).dropna()
    comps = [_interval(x, level, pooled) for x in _components(c, y, baseline, sign)]
    est, lo, hi, source = min(comps, key=lambda r: math.inf if math.isnan(r[1]) else r[1])
    if c["form"] == "exceeds_all" and any(r[2] < 0 for r in comps):
        verdict = "contradicted"
    elif c["form"] == "exceeds_all":
        verdict = "supported" if all(r[1] > 0 for r in comps) else "inconclusive"
    else:
        verdict = _verdict(c["form"], lo, hi, sesoi)
    row = {
        "n_pairs": len(y),
        "estimate": est,
        "ci_low": lo,
        "ci_high": hi,
        "ci_level": level,
        "verdict": verdict,
    }
    flat = {r[3] for r in comps if len(y) >= 2 and r[3] != "own"}
    if flat:
        row["why"] = (
            "identical differences on every seed and no other row's spread to pool: no interval, no evidence"
            if "none" in flat
            else "identical differences on every seed: sd pooled from the sweep's rows"
        )
    return row


def claims_for(rt) -> pd.DataFrame:
    """The claims table of a run (ablate.stats.run_table.RunTable): what the report and the API show."""
    curves = None
    if any(isinstance(c, dict) and c.get("curve") for c in rt.spec.get("claims") or []):
        from ablate.stats.curve_table import fits_for, parameter_wide

        curves = parameter_wide(fits_for(rt))
    return claims_table(
        rt.summaries,
        rt.spec.get("claims") or [],
        rt.plan["baseline"],
        rt.stats.alpha,
        rt.stats.sesoi,
        rt.spec.get("higher_is_better", True),
        rt.plan.get("factors") or {},
        rt.tasks,
        rt.task_summaries,
        pooled_spread(rt),
        curves,
        rt.stats.curve_sesoi,
    )


def pooled_spread(rt) -> tuple[float, int]:
    """The run table's pooled (sd, df) of paired differences: what a spreadless contrast borrows."""
    fam = rt.table.attrs.get("family", {})
    return float(fam.get("sd_plan", math.nan)), int(fam.get("sd_df", 0) or 0)


def method_sentence(claims: pd.DataFrame, alpha: float, task_sweep: bool = False) -> str:
    m = int((claims.verdict != "not tested").sum())
    untested = len(claims) - m
    if m == 0:
        return f"Claims: none of the sweep's {untested} claims is about a task this run ran: none tested."
    return (
        f"Claims: each of the sweep's {m} claims is a contrast of final scores computed per seed over the seeds "
        f"finished in every variant it names, with a paired t-interval at {1 - alpha / m:.4g} (Bonferroni over "
        f"the {m} claims, so a false claim is called supported at most α = {alpha:g} of the time over the "
        "family); supported when the interval lies on the claimed side of 0 (inside ±sesoi for equivalent and "
        "negligible), contradicted when it lies on the other (beyond ±sesoi), else inconclusive. exceeds_all is "
        "an intersection-union test: every component must be supported; the row shows the weakest one. A "
        "contrast identical on every seed is read as the table reads such a row: with the table's pooled sd, or, "
        "with none to pool, with no interval (never supported). A share claim "
        "reads the share of the seed-adjusted variation its axes explain, with a percentile interval from "
        "resampling seeds (2000 draws)."
        + (
            " In a task sweep a claim reads the pooled scores (each seed's mean over the tasks), or, when it names "
            "a task (task: NAME), that task's arms."
            if task_sweep
            else ""
        )
        + (
            f" {untested} claim(s) about a task this run did not run: not tested, outside the family."
            if untested
            else ""
        )
    )
