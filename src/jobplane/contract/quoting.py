"""How a rejected value is shown in an error message.

A value that fails validation may be anything a definition or a request could produce, a file's
contents or the environment included (a pull request's job file is hostile input). Messages name
the value so a person can find it, but quote at most ``LIMIT`` characters of it.
"""

from __future__ import annotations

LIMIT = 80


def quoted(value: object, limit: int = LIMIT) -> str:
    """``repr`` of the value, cut to ``limit`` characters of its text with the length said."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit + 2 else f"{text[:limit]}… ({len(text)} characters)"


def closest(word: str, options: list[str]) -> str | None:
    """The option closest to ``word``, if any is close enough to be what was meant."""
    import difflib

    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, options: list[str]) -> str:
    """' (did you mean 'X'?)' for the closest option, or '' (unknown fields, teams, enums, jobs)."""
    close = closest(word, options)
    return f" (did you mean {quoted(close)}?)" if close else ""
