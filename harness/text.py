"""Small text helpers shared by the harness: one-line messages that never fail themselves."""
from __future__ import annotations


def one_line(text: object) -> str:
    """`text` with every run of whitespace (newlines included) folded into one space."""
    return " ".join(safe_str(text).split())


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
