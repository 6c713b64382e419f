"""Tables for the terminal (`list`, the --dry-run plan, compare's table) whose identifiers and
numbers are never cut.

rich fits a table wider than its console by shrinking columns and cuts a cell that no longer
fits with "…": in 80 columns `list` showed "disjoint_s…" for both disjoint_smem and
disjoint_strided, and a plan in 50 columns rows of "163…".  Here a column is either kept (an
identifier, a number: as wide as its widest cell, never narrower) or prose (it folds onto
more lines, never narrower than PROSE_MIN or its widest cell, whichever is less).  Where
even so the table is wider than the console, it is not drawn: `show` prints one record a
line, each cell after its header, which the terminal wraps without cutting anything.
(harness/report/terminal.py does the same for the end-of-run tables by splitting them.)"""
from __future__ import annotations

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

PROSE_MIN = 12


def fitted(console, columns: list[tuple[str, bool]], rows: list[list[str]],
           title: str | None = None) -> Table | None:
    """The table of `rows` (plain text, never markup) under `columns` ((header, prose)
    pairs), or None where it cannot fit `console`'s width without cutting a kept cell.  A
    kept column's header is on one line where the table fits so, else folded at its spaces
    (never inside a word)."""
    for whole in (True, False):
        widths, need = [], len(columns) + 1            # the vertical rules
        for k, (header, prose) in enumerate(columns):
            widest = max((cell_len(r[k]) for r in rows), default=0)
            if prose:
                widths.append(None)
                need += min(PROSE_MIN, max(widest, 1))
            else:
                words = [header] if whole else header.split()
                widths.append(max([widest] + [cell_len(w) for w in words]))
                need += widths[-1]
            need += 2                                  # the column's padding
        if need <= console.width:
            break
    else:
        return None
    t = Table(title=Text(title) if title else None)
    for (header, _), width in zip(columns, widths):
        t.add_column(header, width=width, overflow="fold")
    for r in rows:
        t.add_row(*(Text(c) for c in r))
    return t


def show(console, columns: list[tuple[str, bool]], rows: list[list[str]],
         title: str | None = None) -> None:
    """Print the table of `rows`, or, where it cannot fit, its title and one record a line:
    'header: cell; header: cell; …' (an empty cell left out)."""
    t = fitted(console, columns, rows, title)
    if t is not None:
        console.print(t)
        return
    if title:
        console.print(title, markup=False, highlight=False, soft_wrap=True)
    for r in rows:
        console.print("; ".join(f"{h}: {c}" for (h, _), c in zip(columns, r) if c),
                      markup=False, highlight=False, soft_wrap=True)
