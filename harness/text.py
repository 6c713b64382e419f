"""Small text helpers shared by the harness: one-line messages that never fail themselves,
shell commands printed for the user to paste, and numbers typed on a command line."""
from __future__ import annotations

import re
import shlex

_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


_DECIMAL = re.compile(r"[ \t]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[ \t]*")


def decimal(text: object) -> float | None:
    """A number as a command-line option's value is written: ASCII digits with an optional
    sign, point and exponent (blanks around it allowed, as --shard's and --shape's); None
    for any other text, where float() also reads '２', '1_0' (10), 'inf' and 'nan' -- which
    a config's numbers are refused as."""
    return float(text) if isinstance(text, str) and _DECIMAL.fullmatch(text) else None


def count_of(text: object) -> int | None:
    """A count written in ASCII decimal digits (blanks around it allowed), else None (int()
    also reads '２', '2_0' and '+2')."""
    m = re.fullmatch(r"[ \t]*([0-9]{1,18})[ \t]*", text) if isinstance(text, str) else None
    return int(m.group(1)) if m else None


def one_line(text: object) -> str:
    """`text` with every run of whitespace (newlines included) folded into one space."""
    return " ".join(safe_str(text).split())


def count(n: int, noun: str) -> str:
    """'1 record', '2 records', '0 records': `noun` (a regular plural) counted."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def safe_str(value: object) -> str:
    """str(value), or a placeholder naming its type when its __str__ itself raises."""
    try:
        return str(value)
    except BaseException:      # a plugin's exception whose __str__ raises (or exits)
        return f"<{type(value).__name__} whose str() fails>"


def describe_exception(e: BaseException, limit: int = 500) -> str:
    """'ExcType: message' on one line, at most `limit` characters."""
    msg = one_line(e)
    text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text[:limit]


def shell_quote(word: str) -> str:
    """`word` as one shell word that gives it back exactly: shlex.quote's, or, for a word
    holding a character a terminal line cannot show as it is (a tab, a newline, any other
    control or non-printing character, a path's undecodable byte), bash's $'…' (zsh and ksh
    read it too) with such a character escaped: \\t, \\n, \\r or \\xNN for each byte of its
    UTF-8 (of the byte itself for an undecodable one).  Never a line break, never a tab."""
    if all(c.isprintable() for c in word):       # ' '.isprintable(); '\xa0', '\u2028' not
        return shlex.quote(word)
    out = []
    for c in word:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        else:
            try:
                raw = c.encode("utf-8", "surrogateescape")     # os.fsencode's byte
            except UnicodeEncodeError:                         # a lone surrogate no path has
                raw = c.encode("utf-8", "surrogatepass")
            out.append("".join(f"\\x{b:02x}" for b in raw))
    return "$'" + "".join(out) + "'"


def shell_join(words) -> str:
    """The command `words` on one line for a shell (bash, zsh, ksh; POSIX sh where no word
    needs $'…'): pasted, it runs with exactly these arguments.  Print it as it is -- one_line
    would fold the spaces inside a quoted word ('my  runs' became 'my runs')."""
    return " ".join(shell_quote(str(w)) for w in words)


def md_fence(text: str) -> list[str]:
    """`text` as a Markdown fenced code block, one line a list item: the fence is a run of
    backticks longer than any in `text` (at least three), so no line of `text` (``` with any
    indentation included) can close it early, as CommonMark closes a fence only with one at
    least as long as the opening."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text.rstrip("\n"), fence]
