"""A table as LaTeX (booktabs), for table.tex."""

from __future__ import annotations

import pandas as pd


def to_latex(table: pd.DataFrame, caption: str) -> str:
    """A booktabs table of the report columns (no jinja2 needed)."""
    cols = list(table.columns)

    def esc(x) -> str:
        s = f"{x:.4g}" if isinstance(x, float) else str(x)
        for a, b in (
            ("\\", "\\textbackslash{}"),
            ("&", "\\&"),
            ("%", "\\%"),
            ("_", "\\_"),
            ("#", "\\#"),
            ("±", "$\\pm$"),
            ("Δ", "$\\Delta$"),
        ):
            s = s.replace(a, b)
        return s

    lines = [
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{esc(caption)}}}",
        "\\begin{tabular}{" + "l" * len(cols) + "}",
        "\\toprule",
        " & ".join(esc(c) for c in cols) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(esc(v) for v in row) + " \\\\" for row in table.itertuples(index=False)]
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)
