"""What the report pages share: the style sheet, tables and how numbers are written."""

from __future__ import annotations

import datetime
import math
from html import escape

from burnish import __version__

__all__ = ["STYLE", "document", "number", "table"]

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       margin: 0 auto; max-width: 1200px; padding: 24px; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; } h3 { font-size: 15px; margin: 0 0 6px; }
.meta { color: #666; margin: 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(580px, 1fr)); gap: 16px; }
.card { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 12px; }
.chart { max-width: 100%; height: auto; display: block; }
.chart .tick { font: 11px sans-serif; fill: #555; }
.chart .axis { font: 12px sans-serif; fill: #333; }
.chart .legend { font: 12px sans-serif; fill: #222; }
.last { color: #555; font-size: 13px; margin: 6px 0 0; }
table { border-collapse: collapse; background: #fff; } th, td { border: 1px solid #ddd;
        padding: 4px 10px; text-align: left; } th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 12px;
      overflow-x: auto; font-size: 13px; }
.note { color: #777; font-style: italic; }
.wide { overflow-x: auto; }
.missing { color: #999; font-style: italic; }
.swatch { display: inline-block; width: 14px; height: 4px; margin: 0 6px 3px 0;
          vertical-align: middle; }
footer { color: #888; font-size: 12px; margin-top: 32px; }
"""


def document(title: str, body: str) -> str:
    """A whole page: `title` (plain text), the style sheet, `body` (HTML) and the footer."""
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        + body
        + f"<footer>Written by burnish {escape(__version__)} on {escape(now)}. "
        "This page is self-contained: no scripts, nothing loaded from the network.</footer>"
        "</body></html>\n"
    )


def table(
    header: list[str],
    rows: list[list[str]],
    numeric: set[int],
    head_html: str | None = None,
) -> str:
    """An HTML table; `rows` hold HTML (escaped by the caller), `header` plain text.

    Args:
        header: The column titles.
        rows: The cells of each row, as HTML.
        numeric: The columns aligned right (numbers).
        head_html: The whole `<thead>` content instead of one row of `header`.
    """
    head = head_html or "<tr>" + "".join(f"<th>{escape(cell)}</th>" for cell in header) + "</tr>"
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


def number(value: float) -> str:
    """`value` in 4 significant digits (NaN as `NaN`, huge ones in scientific notation)."""
    if math.isnan(value):
        return "NaN"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.3e}"
