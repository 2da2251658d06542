"""YAML with positions: plain values plus the line and column each one came from.

A workload file is parsed with ``yaml``'s composer (SafeLoader rules: no Python tags), so
that every value keeps the position of its node. The result is a :class:`Document`: the
plain data (dicts with string keys, lists, scalars) and a table from *paths* to positions.
A path is a tuple of keys and list indexes, ``("applications", 2, "taskGroups", 0)``, and
renders as ``applications[2].taskGroups[0]``.

Errors are :class:`SourceError` values that render as ``file:line:column: path: message``,
the way compilers report them, so editors can jump to the spot. Lines and columns are
1-based. Syntax errors, duplicate keys, non-string keys and recursive aliases are
reported here; everything about meaning is the schema's job (:mod:`gangsched.sim.workload`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import yaml

Path = tuple[str | int, ...]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Mark:
    """A 1-based position in a file."""

    line: int
    column: int


def render_path(path: Path) -> str:
    """``("a", 2, "b")`` -> ``a[2].b``; the empty path is ``(top level)``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "(top level)"


@dataclass(frozen=True, slots=True)
class SourceError:
    """One problem in a file: where it is, which field, and what is wrong."""

    file: str
    mark: Mark | None
    path: Path
    message: str

    def __str__(self) -> str:
        where = self.file if self.mark is None else (
            f"{self.file}:{self.mark.line}:{self.mark.column}")
        return f"{where}: {render_path(self.path)}: {self.message}"


class WorkloadError(Exception):
    """A file that cannot be used, with every problem found (at least one)."""

    def __init__(self, errors: Sequence[SourceError]) -> None:
        self.errors = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


@dataclass(slots=True)
class Document:
    """Plain data parsed from one file, with the position of every value and key."""

    file: str
    data: object
    marks: dict[Path, Mark] = field(default_factory=dict)
    key_marks: dict[Path, Mark] = field(default_factory=dict)

    def mark(self, path: Path, *, key: bool = False) -> Mark | None:
        """The position of the value at ``path`` (of its key with ``key=True``).

        Falls back to the closest enclosing value that has a position, so an error about
        a missing field points at the mapping it is missing from.
        """
        if key and path in self.key_marks:
            return self.key_marks[path]
        probe = path
        while True:
            found = self.marks.get(probe)
            if found is not None:
                return found
            if not probe:
                return None
            probe = probe[:-1]

    def error(self, path: Path, message: str, *, key: bool = False) -> SourceError:
        return SourceError(self.file, self.mark(path, key=key), path, message)


def _mark(node: yaml.Node) -> Mark:
    return Mark(node.start_mark.line + 1, node.start_mark.column + 1)


class _Converter:
    def __init__(self, file: str, loader: yaml.SafeLoader) -> None:
        self.doc = Document(file, None)
        self.loader = loader
        self.errors: list[SourceError] = []
        self._stack: set[int] = set()

    def convert(self, node: yaml.Node, path: Path) -> object:
        self.doc.marks[path] = _mark(node)
        if id(node) in self._stack:
            self.errors.append(self.doc.error(path, "recursive alias is not allowed"))
            return None
        if isinstance(node, yaml.MappingNode):
            self._stack.add(id(node))
            try:
                return self._mapping(node, path)
            finally:
                self._stack.discard(id(node))
        if isinstance(node, yaml.SequenceNode):
            self._stack.add(id(node))
            try:
                return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
            finally:
                self._stack.discard(id(node))
        return self.loader.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, object]:
        self.loader.flatten_mapping(node)  # resolves "<<" merge keys
        result: dict[str, object] = {}
        for key_node, value_node in node.value:
            key = self.loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                where = SourceError(self.doc.file, _mark(key_node), path,
                                    f"keys must be strings, got {key!r}")
                self.errors.append(where)
                continue
            child = (*path, key)
            if key in result:
                self.errors.append(SourceError(self.doc.file, _mark(key_node), child,
                                               "duplicate key"))
                continue
            self.doc.key_marks[child] = _mark(key_node)
            result[key] = self.convert(value_node, child)
        return result


def parse(text: str, file: str) -> Document:
    """Parse one YAML document; raise :class:`WorkloadError` on syntax or structure errors.

    An empty file gives a document whose data is None. A file holding several documents
    is an error (only one is read, so the others would be silently ignored).
    """
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            where = Mark(mark.line + 1, mark.column + 1) if mark is not None else None
            problem = error.problem or error.context or "invalid YAML"
            raise WorkloadError([SourceError(file, where, (), f"YAML syntax: {problem}")]
                                ) from None
        except yaml.YAMLError as error:
            raise WorkloadError([SourceError(file, None, (), f"YAML: {error}")]) from None
        if node is None:
            return Document(file, None)
        converter = _Converter(file, loader)
        data = converter.convert(node, ())
    finally:
        loader.dispose()
    if converter.errors:
        raise WorkloadError(converter.errors)
    converter.doc.data = data
    return converter.doc


def read(path: str) -> Document:
    """Read and parse a file; an unreadable file is a :class:`WorkloadError` too."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise WorkloadError([SourceError(path, None, (), f"cannot read the file: {reason}")]
                            ) from None
    return parse(text, path)
