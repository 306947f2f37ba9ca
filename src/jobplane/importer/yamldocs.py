"""YAML documents with the line each mapping starts on, so a problem names ``file:line``.

PyYAML's safe loader (no tags that build Python objects: a manifest is input, not code), with
each mapping built as a :class:`Lined` dict that remembers its line. Aliases (``*name``) are
refused: a few hundred bytes of nested aliases expand to gigabytes when anything walks the
result (a 701-byte one took 270 s and 5.7 GB), and no schedule needs them.
"""

from __future__ import annotations

import yaml

from jobplane.contract.types import JsonValue


class Lined(dict):  # type: ignore[type-arg]  # a plain dict to every reader, plus .line
    line: int = 0


#: How deep collections may nest. The composer and the constructor recurse once a level, so
#: without a bound of its own a hostile file's depth met whatever recursion limit the process had
#: (a test runner's raised one let 2,000 levels through as a document); no schedule nests past a
#: few dozen.
MAX_DEPTH = 200


class _TooDeep(Exception):
    def __init__(self, line: int):
        self.line = line


class _Loader(yaml.SafeLoader):
    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, f"an alias (*{event.anchor}) refers to another value: "
                                              "aliases are not read (they can expand without bound); write the "
                                              "value out", event.start_mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark.line + 1)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _mapping(loader: _Loader, node: yaml.MappingNode) -> Lined:
    value = Lined(loader.construct_mapping(node, deep=True))
    value.line = node.start_mark.line + 1
    return value


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


class YamlError(ValueError):
    def __init__(self, line: int | None, message: str):
        super().__init__(message)
        self.line = line


def documents(text: str) -> list[JsonValue]:
    """Every document of a multi-document stream; a syntax error names its line."""
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except _TooDeep as e:
        raise YamlError(e.line, f"invalid YAML: nested too deep (more than {MAX_DEPTH} levels)") from None
    except RecursionError:
        raise YamlError(None, "invalid YAML: nested too deep") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        raise YamlError(mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None


def line_of(value: JsonValue, default: int | None = None) -> int | None:
    return value.line if isinstance(value, Lined) else default
