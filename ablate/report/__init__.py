"""Reports from the store: report.md, a self-contained report.html, table.csv, table.tex and PNG figures."""
