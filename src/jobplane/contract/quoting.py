"""How a rejected value is shown in an error message.

A value that fails validation may be anything a definition or a request could produce, a file's
contents or the environment included (a pull request's job file is hostile input). Messages name
the value so a person can find it, but quote at most ``LIMIT`` characters of it.
"""

from __future__ import annotations

import re

LIMIT = 80

#: Characters a terminal acts on: C0 and C1 controls, DEL, and the bidirectional overrides that
#: make text read differently from what it is. Text from a definition, a run or an import source
#: is printed with these escaped, so a job's ``argv`` of ``"\x1b]52;c;..."`` cannot write a
#: reviewer's clipboard (OSC 52), erase the ``reads secrets:`` line or repaint the screen.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: The same, but a newline and a tab stay (a whole message of several lines).
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    """``\\x1b`` for an ASCII control, ``\\u0085`` beyond (also a valid escape inside a JSON
    string, which ``--json`` output may carry with ``ensure_ascii=False``)."""
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x80 else f"\\u{c:04x}"


def inert(text: str) -> str:
    """One line of output with every terminal control in it shown as an escape (``\\x1b``)."""
    return _CONTROL.sub(_escape, text)


def terminal_safe(text: str) -> str:
    """Text for a terminal: every control shown as an escape but newlines and tabs. The one
    escaper of what the CLI prints (cli/terminal.py puts every write through it)."""
    return _CONTROL_IN_TEXT.sub(_escape, text)


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
