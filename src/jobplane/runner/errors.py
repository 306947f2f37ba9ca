"""The runner's own outcomes that end a step other than by an exception of its code: a target
that cannot be run as defined, and a shell step's exit status. Their own module, importing
nothing, so runner/main.py catches them without importing what runs a step (runner/dispatch.py
imports that for the step's kind only)."""

from __future__ import annotations


class PermanentError(Exception):
    """The target cannot be run as defined; the state machine must not retry."""


class ExitCode(Exception):
    """A shell step's own exit status, passed through."""

    def __init__(self, code: int):
        super().__init__(f"exit status {code}")
        self.code = code
