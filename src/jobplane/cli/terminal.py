"""Everything the CLI prints goes through one escaper (contract/quoting.py ``terminal_safe``).

Definitions come from pull requests and runs from anyone's code: a job's ``argv``, a map item,
an error line or a log line can hold terminal controls. Printed raw, ``jobplane plan`` let a
job's argv erase its own ``reads secrets:`` line (``\\x1b[2K``) or write the reviewer's clipboard
(OSC 52, ``\\x1b]52;c;...``), and an item reached the ``jobplane dev`` console's alert the same
way (issue 64 item 5). Escaping at each ``click.echo`` would leave the next new line of output
unescaped; instead the command group puts ``sys.stdout`` and ``sys.stderr`` behind
:class:`Escaped` before any command runs, so plan, validate, status, next, run, logs, the dev
console's log lines (logging's handler is made after it) and an uncaught traceback are all
escaped. Newlines and tabs pass; the CLI prints no colours or other controls of its own.
"""

from __future__ import annotations

import io
import sys
from typing import TextIO

from jobplane.contract.quoting import terminal_safe


class Escaped(io.TextIOBase):
    """A text stream that writes to ``inner`` with every terminal control escaped. It has no
    ``buffer``: click then writes text to it (a writer with a binary buffer could be bypassed)."""

    def __init__(self, inner: TextIO):
        self.inner = inner

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # click probes for a binary stream by writing b""
            raise TypeError("Escaped takes text")
        self.inner.write(terminal_safe(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)


def install() -> None:
    """Put stdout and stderr behind :class:`Escaped` (once: a nested invocation keeps them)."""
    if not isinstance(sys.stdout, Escaped):
        sys.stdout = Escaped(sys.stdout)
    if not isinstance(sys.stderr, Escaped):
        sys.stderr = Escaped(sys.stderr)
