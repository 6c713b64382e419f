"""The terminal's tables of `list` and of a --dry-run plan (harness/tables.py): identifiers and
numbers are never cut with "…" whatever the terminal's width; prose folds, and a table that
cannot fit is one record a line."""
import io
import re
from types import SimpleNamespace

import pytest
from rich.console import Console

from normbench.harness import cli, tables


def _console(width):
    return Console(file=io.StringIO(), width=width, color_system=None, highlight=False)


def _whole(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w…]){re.escape(word)}(?![\w…])", text) is not None


@pytest.mark.parametrize("width", [200, 100, 80, 50])
def test_list_never_cuts_a_name(monkeypatch, width):
    """In 80 columns `list` showed "disjoint_s…" for both disjoint_smem and disjoint_strided."""
    from normbench import strategies
    monkeypatch.setattr(cli, "out", _console(width))
    cli.list_()
    text = cli.out.file.getvalue()
    names = [e.name for e in strategies.entries()]
    assert names and all(_whole(text, n) for n in names), text
    assert not re.search(r"\w…", text.replace("p+G, …", "")), text
    assert ("┃" in text) == (width >= 100), text      # a table where it fits, else lines


@pytest.mark.parametrize("width", [200, 80, 50, 30])
def test_a_plan_never_cuts_a_number_or_a_name(monkeypatch, width):
    """In 50 columns a plan's rows read "163…" (16384), in 80 an implementation
    "disjoint_…"."""
    monkeypatch.setattr(cli, "out", _console(width))
    cases = [SimpleNamespace(norm=n, rows=16384, d=12288, dtype="bf16", weight_dtype="bf16",
                             implementation=i, groups="auto")
             for n in ("layernorm", "rmsnorm") for i in ("disjoint_strided", "torch_compile")]
    cli._print_plan(cases, "4 records", 60.0, SimpleNamespace(name="p"), {})
    text = cli.out.file.getvalue()
    for word in ("16384", "12288", "disjoint_strided", "torch_compile", "layernorm", "rmsnorm"):
        assert _whole(text, word), (word, text)
    assert "…" not in text, text
    monkeypatch.setattr(cli, "out", _console(width))
    cli._print_plan(cases, "4 records", 60.0, SimpleNamespace(name="p"),
                    {"disjoint_strided": "needs a GPU"})
    text = cli.out.file.getvalue()
    assert text.count("skipped here") == 2 + 1 and "…" not in text, text


def test_prose_folds_and_kept_columns_keep_their_width():
    rows = [["a_rather_long_identifier", "12345678", "some prose " * 12]]
    cols = [("name", False), ("n", False), ("about", True)]
    c = _console(60)
    t = tables.fitted(c, cols, rows)
    assert t is not None
    c.print(t)
    text = c.file.getvalue()
    assert "a_rather_long_identifier" in text and "12345678" in text and "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 60
    # too narrow for the kept columns and a prose minimum: one record a line, nothing cut
    c = _console(40)
    assert tables.fitted(c, cols, rows) is None
    tables.show(c, cols, rows, title="things")
    assert c.file.getvalue().splitlines() == [
        "things", "name: a_rather_long_identifier; n: 12345678; about: " + "some prose " * 12]
