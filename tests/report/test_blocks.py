"""report.md and report.html come from one list of blocks: both carry every block, html escaped."""

import pandas as pd

from ablate.report.blocks import Figure, Heading, Note, Para, Pre, Table, to_html, to_markdown

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)


def test_both_pages_carry_every_block(tmp_path):
    (tmp_path / "f.png").write_bytes(PNG)
    blocks = [
        Heading("Report", 1),
        Para("metric `eval/x` is **better** higher"),
        Para("α < 0.05 & `not code`", verbatim=True),
        Note("2 trial(s) diverged"),
        Table(pd.DataFrame({"a|b": ["x|y"], "Δ": ["+0.1"]}), caption="the table's caption"),
        Table(pd.DataFrame(), empty="No flags raised."),
        Figure(tmp_path / "f.png", "band = 95% bootstrap"),
        Pre("python -m ablate report runs/x"),
    ]
    md, html = to_markdown(blocks), to_html(blocks, "t")
    assert md.startswith("# Report\n")
    assert "| a\\|b | Δ |" in md and "*the table's caption*" in md and "> 2 trial(s) diverged" in md
    assert "![f](f.png)" in md and "*Figure: band = 95% bootstrap*" in md and "No flags raised." in md
    assert "<h1>Report</h1>" in html and "<code>eval/x</code>" in html and "<strong>better</strong>" in html
    assert "α &lt; 0.05 &amp; `not code`" in html  # verbatim: escaped, no markup
    assert "<blockquote>2 trial(s) diverged</blockquote>" in html
    assert "the table&#x27;s caption" in html or "the table's caption" in html
    assert "<figcaption>Figure: band = 95% bootstrap</figcaption>" in html
    assert html.count("data:image/png;base64,") == 1 and "No flags raised." in html
    assert "<pre>python -m ablate report runs/x</pre>" in html


def test_html_table_headers_are_left_aligned():
    """pandas right-aligns every header by default: text headers over text columns read wrong."""
    html = to_html([Table(pd.DataFrame({"variant": ["kl_k3_loss"], "verdict": ["helps"]}))], "t")
    assert "text-align: right" not in html and "text-align: left" in html
