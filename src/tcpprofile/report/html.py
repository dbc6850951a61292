"""The report page: one static index.html with inlined CSS, referencing the PNGs beside it."""

from __future__ import annotations

from html import escape
from importlib import resources

from .common import Code, Figure, Heading, Note, Section, Table


def _item(item) -> str:
    if isinstance(item, Figure):
        return (f'<figure id="{item.id}" data-runs="{item.runs}"><img src="{escape(item.file)}" '
                f'alt="{escape(item.title)}"><figcaption><b>{escape(item.title)}.</b> {escape(item.caption)}'
                f'</figcaption></figure>')
    if isinstance(item, Note):
        return f'<p class="note"><b>{escape(item.title)}</b>: omitted — {escape(item.message)}.</p>'
    if isinstance(item, Table):
        head = "".join(f"<th>{escape(h)}</th>" for h in item.header)
        classes = item.row_classes or [""] * len(item.rows)
        body = "".join(f'<tr class="{c}">' + "".join(f"<td>{escape(x)}</td>" for x in row) + "</tr>"
                       for row, c in zip(item.rows, classes))
        return (f'<div class="table" id="{item.id}" data-runs="{item.runs}"><h3>{escape(item.title)}</h3>'
                f'<p class="caption">{escape(item.caption)}</p><div class="tablewrap"><table><thead><tr>{head}'
                f'</tr></thead><tbody>{body}</tbody></table></div></div>')
    if isinstance(item, Code):
        return (f'<div class="code" id="{item.id}"><h3>{escape(item.title)}</h3><p class="caption">'
                f'{escape(item.caption)}</p><pre>{escape(item.text)}</pre></div>')
    if isinstance(item, Heading):
        return f'<h3 class="path" id="{item.id}">{escape(item.title)}</h3><p class="caption">{escape(item.text)}</p>'
    raise TypeError(f"unknown report item {item!r}")


def page(title: str, subtitle: list[str], sections: list[Section]) -> str:
    css = resources.files(__package__).joinpath("style.css").read_text()
    nav = "".join(f'<a href="#{s.id}">{escape(s.title)}</a>' for s in sections)
    body = "".join(
        f'<section id="{s.id}"><h2>{escape(s.title)}</h2><p class="paper">{escape(s.paper)}</p>'
        + "".join(_item(i) for i in s.items) + "</section>" for s in sections)
    sub = "".join(f"<p>{escape(line)}</p>" for line in subtitle)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{css}</style></head><body>"
            f"<header><h1>{escape(title)}</h1>{sub}</header><nav>{nav}</nav><main>{body}</main></body></html>\n")
