"""The report as one list of blocks, rendered to Markdown and to self-contained HTML.

Why one source: two hand-written pages drift apart (one loses a note the other keeps); with one list of
blocks both pages carry the same headings, paragraphs, tables, captions and notes by construction.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    text: str  # inline `code` and **bold** are kept in md and turned into tags in html
    verbatim: bool = False  # html: escape only (text written by another module, e.g. the method paragraph)


@dataclass(frozen=True)
class Note:
    text: str  # a warning the reader must not miss: a blockquote in both pages


@dataclass(frozen=True)
class Table:
    df: pd.DataFrame
    caption: str = ""
    empty: str = "(none)"


@dataclass(frozen=True)
class Figure:
    path: Path  # a PNG in the report folder: linked from md, embedded in html
    caption: str


@dataclass(frozen=True)
class Pre:
    text: str


Block = Heading | Para | Note | Table | Figure | Pre


def _md_cell(v) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def md_table(df: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(_md_cell, df.columns)) + " |\n|" + "---|" * len(df.columns) + "\n"
    return head + "".join(
        "| " + " | ".join(_md_cell(v) for v in row) + " |\n" for row in df.itertuples(index=False)
    )


def to_markdown(blocks: list[Block]) -> str:
    out = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Note):
            out.append("> " + b.text)
        elif isinstance(b, Table):
            out.append(md_table(b.df).rstrip("\n") if len(b.df) else b.empty)
            if b.caption:
                out.append(f"*{b.caption}*")
        elif isinstance(b, Figure):
            out.append(f"![{b.path.stem}]({b.path.name})")
            out.append(f"*Figure: {b.caption}*")
        elif isinstance(b, Pre):
            out.append("```\n" + b.text + "\n```")
    return "\n\n".join(out) + "\n"


def inline_html(text: str) -> str:
    """Escapes, then renders `code` and **bold** (the only inline markup the report's own text uses)."""
    s = html.escape(text, quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)


STYLE = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;line-height:1.4}"
    "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}"
    "img{max-width:100%}"
    "blockquote{border-left:4px solid #c60;margin:1em 0;padding:.3em 1em;background:#fff6ee}"
    "figcaption,.caption{font-size:13px;color:#444;font-style:italic}code{background:#f3f3f3}"
)


def to_html(blocks: list[Block], title: str) -> str:
    body = []
    for b in blocks:
        if isinstance(b, Heading):
            body.append(f"<h{b.level}>{html.escape(b.text, quote=False)}</h{b.level}>")
        elif isinstance(b, Para):
            body.append(f"<p>{html.escape(b.text, quote=False) if b.verbatim else inline_html(b.text)}</p>")
        elif isinstance(b, Note):
            body.append(f"<blockquote>{inline_html(b.text)}</blockquote>")
        elif isinstance(b, Table):
            body.append(
                b.df.to_html(index=False, escape=True, justify="left")
                if len(b.df)
                else f"<p>{html.escape(b.empty)}</p>"
            )
            if b.caption:
                body.append(f"<p class='caption'>{inline_html(b.caption)}</p>")
        elif isinstance(b, Figure):
            data = base64.b64encode(b.path.read_bytes()).decode()
            body.append(
                f"<figure><img alt='{html.escape(b.path.stem)}' src='data:image/png;base64,{data}'>"
                f"<figcaption>Figure: {inline_html(b.caption)}</figcaption></figure>"
            )
        elif isinstance(b, Pre):
            body.append(f"<pre>{html.escape(b.text, quote=False)}</pre>")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
