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


class _Loader(yaml.SafeLoader):
    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, f"an alias (*{event.anchor}) refers to another value: "
                                              "aliases are not read (they can expand without bound); write the "
                                              "value out", event.start_mark)
        return super().compose_node(parent, index)


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
    except RecursionError:
        raise YamlError(None, "invalid YAML: nested too deep") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        raise YamlError(mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None


def line_of(value: JsonValue, default: int | None = None) -> int | None:
    return value.line if isinstance(value, Lined) else default
