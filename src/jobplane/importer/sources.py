"""What an import format is: a name, a test that a file looks like it, a reader, and the schedule
dialects its schedules speak. Each format is one module that declares one :class:`SourceFormat`
(``FORMAT``); :mod:`jobplane.importer.formats` lists them, and everything that names formats
(``--format``'s choices, auto-detection, the verifier's dialects) reads that list.

A reader gets the file as a :class:`Source` (its text, and its YAML parsed once for every format
that asks) and a :class:`ReadContext` (the team, and the other files of the same format: an
EventBridge rule's targets are a file beside it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from jobplane.contract.types import JsonValue
from jobplane.importer.dialects import Dialect
from jobplane.importer.entries import Reading
from jobplane.importer.yamldocs import YamlError, documents


@dataclass(frozen=True)
class Source:
    path: Path
    text: str
    #: each text parsed as YAML (the file's, or a rewriting of it a reader asks for) and what came
    #: of it: auto-detection asks several formats, and each used to parse the file again (a deep
    #: nesting took 1.1 CPU s a parse, three times for one file: issue 66 item 7)
    _parsed: dict[str, list[JsonValue] | YamlError] = field(default_factory=dict, init=False, repr=False,
                                                           compare=False)

    @property
    def name(self) -> str:
        return str(self.path)

    @property
    def suffix(self) -> str:
        return self.path.suffix.lower()

    @property
    def is_yaml(self) -> bool:
        return self.suffix in (".yaml", ".yml")

    def documents(self, text: str | None = None) -> list[JsonValue]:
        """The YAML documents of the file's text (or of ``text``, a reader's rewriting of it),
        parsed once for every format that asks; not YAML raises :class:`YamlError` each time.
        The documents are shared: readers only read them."""
        key = self.text if text is None else text
        if key not in self._parsed:
            try:
                self._parsed[key] = documents(key)
            except YamlError as e:
                self._parsed[key] = e
        got = self._parsed[key]
        if isinstance(got, YamlError):
            raise YamlError(got.line, str(got))
        return got

    @cached_property
    def yaml_documents(self) -> list[JsonValue] | None:
        """The YAML documents, or None when the text is not YAML (the reader reports why)."""
        try:
            return self.documents()
        except YamlError:
            return None


@dataclass(frozen=True)
class ReadContext:
    team: str
    #: every file read as the same format in this import (this one included)
    siblings: tuple[Source, ...] = ()
    #: the format was detected, not given with --format (a reader may then refuse an ambiguous file)
    detected: bool = True


@dataclass(frozen=True)
class SourceFormat:
    name: str
    #: how auto-detection recognises it, in words (``--format``'s help, docs/import.md)
    detection: str
    looks_like: Callable[[Source], bool]
    read: Callable[[Source, ReadContext], Reading]
    dialects: tuple[Dialect, ...]
