"""One table cell: is it missing, is it a finite number, that number, and a markdown table of
cells.  The one definition every reader of records uses (compare, export, the report, the
host-load flag), whatever loaded the value: None, NaN, pd.NA, NaT, numpy scalars, text."""
from __future__ import annotations

import math


def is_missing(v) -> bool:
    """None, NaN, pd.NA or NaT.  Any other value (text, a list, an array) is present."""
    if v is None:
        return True
    try:
        return bool(v != v)          # NaN and NaT are not equal to themselves
    except TypeError:                # pd.NA: bool(pd.NA != pd.NA) raises
        return True
    except ValueError:               # an array: elementwise, so a value
        return False


def is_finite(v) -> bool:
    """A real, finite number (bools and numeric text count; None, NaN, pd.NA, inf do not)."""
    if is_missing(v):
        return False
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError, OverflowError):
        return False


def num(v) -> float | None:
    """The value as a float when it is a finite number, else None."""
    return float(v) if is_finite(v) else None


def sig(v, digits: int = 3) -> str:
    """A number with `digits` significant digits, never in scientific notation and never
    rounded to zero: 0.00123, 0.853, 1.29, 12.3, 123, 1234 ("" when not a finite number)."""
    if not is_finite(v):
        return ""
    x = float(v)
    if x == 0:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{max(decimals, 0)}f}"


def md_cell(v) -> str:
    """A markdown table cell: missing -> '', '|' escaped, '<' and '>' as entities (an error
    text or a plugin's name is shown, never rendered as HTML by a viewer), on one line."""
    text = "" if is_missing(v) else str(v)
    return (text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\n", " "))


def md_table(header, rows) -> list[str]:
    """A markdown table (one string per line) from a header and rows of cells."""
    out = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(md_cell(x) for x in r) + " |" for r in rows]
