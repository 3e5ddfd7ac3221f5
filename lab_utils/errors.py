"""Turn pydantic's validation errors into one line that names the field and the problem."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError


def field_path(loc: Sequence[str | int]) -> str:
    """('fact', 'valid_from') -> 'fact.valid_from'; list positions become [i]."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def message(error: dict) -> str:
    text = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        return "unknown field, not allowed here"
    # Our own validators already quote the value; pydantic's built-in messages do not.
    scalar = not isinstance(error["input"], (dict, list))
    if scalar and error["type"] not in ("missing", "value_error"):
        text += f" (got {error['input']!r})"
    return text


def describe(error: ValidationError) -> str:
    """All problems of one validation error, e.g. "fact.valid_from: '2026-1-5' is not ..."."""
    return "; ".join(
        f"{field_path(e['loc']) or 'input'}: {message(e)}" for e in error.errors())
