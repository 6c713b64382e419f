"""The document model: a report is a title, a list of blocks and its figures, rendered to
markdown (report.md) and to HTML (report.html, through templates/page.html.j2)."""
from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field

import pandas as pd

from normbench.harness import cells
from normbench.harness.text import md_fence

from .fmt import PLOTS_DIR, STEM_MAX, na, safe_name


@dataclass
class PlotFigure:
    name: str        # file stem under plots/
    title: str
    png: bytes
    caption: str = ""


@dataclass
class Report:
    title: str
    blocks: list = field(default_factory=list)
    figures: list[PlotFigure] = field(default_factory=list)

    # -- building
    def h(self, level: int, text: str, anchor: str = "") -> None:
        self.blocks.append(("h", level, text, anchor))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def warn(self, text: str) -> None:
        self.blocks.append(("warn", text))

    def bullets(self, items: list[str]) -> None:
        if items:
            self.blocks.append(("ul", list(items)))

    def table(self, df: pd.DataFrame, cls: str = "", html_only: bool = False,
              summary: str = "") -> None:
        """summary: put the table in a collapsed <details> (HTML) under this text."""
        self.blocks.append(("table", df, cls, html_only, summary))

    def figure(self, fig: PlotFigure) -> None:
        """Add a figure; its name becomes a safe file stem, unique within the report."""
        stem, taken, k = safe_name(fig.name), {f.name for f in self.figures}, 2
        fig.name = stem
        while fig.name in taken:     # the suffix replaces the end of a stem cut to STEM_MAX
            suffix = f"-{k}"
            fig.name, k = stem[:STEM_MAX - len(suffix)] + suffix, k + 1
        self.figures.append(fig)
        self.blocks.append(("fig", fig))

    def pre(self, text: str, summary: str) -> None:
        self.blocks.append(("pre", text, summary))

    def raw_html(self, text: str, md_alternative: str = "") -> None:
        self.blocks.append(("html", text, md_alternative))

    # -- rendering
    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                out += ["#" * b[1] + " " + b[2], ""]
            elif kind == "p":
                out += [b[1], ""]
            elif kind == "warn":
                out += [f"> **Warning:** {b[1]}", ""]
            elif kind == "ul":
                out += [f"- {x}" for x in b[1]] + [""]
            elif kind == "table":
                if not b[3]:
                    out += md_table(b[1]) + [""]
            elif kind == "fig":
                f = b[1]
                out += [f"![{f.title}]({PLOTS_DIR}/{f.name}.png)", ""]
                if f.caption:
                    out += [f"*{f.caption}*", ""]
            elif kind == "pre":
                out += [f"<details><summary>{b[2]}</summary>", "", *md_fence(b[1]), "",
                        "</details>", ""]
            elif kind == "html":
                if b[2]:
                    out += [b[2], ""]
        return "\n".join(out).rstrip("\n") + "\n"

    def html(self) -> str:
        body = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                anchor = f' id="{html.escape(b[3])}"' if b[3] else ""
                body.append(f"<h{b[1]}{anchor}>{_inline(b[2])}</h{b[1]}>")
            elif kind == "p":
                body.append(f"<p>{_inline(b[1])}</p>")
            elif kind == "warn":
                body.append(f'<div class="warn"><strong>Warning:</strong> {_inline(b[1])}</div>')
            elif kind == "ul":
                body.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in b[1]) + "</ul>")
            elif kind == "table":
                t = html_table(b[1], b[2])
                if b[4]:
                    t = f"<details><summary>{_inline(b[4])}</summary>{t}</details>"
                body.append(t)
            elif kind == "fig":
                f = b[1]
                data = base64.b64encode(f.png).decode("ascii")
                cap = f"<figcaption>{_inline(f.caption)}</figcaption>" if f.caption else ""
                body.append(f'<figure id="plot-{html.escape(f.name)}"><img alt="{html.escape(f.title)}'
                            f' ({PLOTS_DIR}/{html.escape(f.name)}.png)" '
                            f'src="data:image/png;base64,{data}">{cap}</figure>')
            elif kind == "pre":
                body.append(f"<details><summary>{_inline(b[2])}</summary>"
                            f"<pre>{html.escape(b[1])}</pre></details>")
            elif kind == "html":
                body.append(b[1])
        from .assets import render_page
        return render_page(self.title, "\n".join(body))


def _inline(text: str) -> str:
    """Escape, then `code` and **bold**."""
    s = html.escape(str(text), quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)


def md_table(df: pd.DataFrame) -> list[str]:
    if df is None or df.empty:
        return ["(none)"]
    return cells.md_table(list(df.columns), df.itertuples(index=False))


def html_table(df: pd.DataFrame, cls: str = "") -> str:
    if df is None or df.empty:
        return "<p><em>(none)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for row in df.itertuples(index=False):
        rows.append("<tr>" + "".join(f"<td>{'' if na(v) else html.escape(str(v))}</td>"
                                     for v in row) + "</tr>")
    return (f'<div class="scroll"><table class="{html.escape(cls)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')
