"""Load YAML keeping line numbers: plain data plus a map from field paths to lines.

Anchors and aliases are refused (they make exponential expansion possible), and so are
files over a size cap.  Errors name the file and the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from mmaprobe.models.errors import MmaprobeError

MAX_FILE_BYTES = 1 << 20

Path_ = tuple  # a path of keys/indices inside a document


class SchemaError(MmaprobeError, ValueError):
    """A probe or space file that does not follow the schema (file, line, field, expected)."""


class Doc:
    """One YAML document: its data, where it came from, and the line of every field."""

    def __init__(self, data: Any, file: str, lines: dict[Path_, int]):
        self.data = data
        self.file = file
        self.lines = lines

    def line(self, path: Path_) -> int:
        """The line of path, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 1)

    def error(self, path: Path_, message: str) -> SchemaError:
        field = ".".join(str(x) for x in path) or "(document)"
        return SchemaError(f"{self.file}:{self.line(path)}: {field}: {message}")


def _build(node: yaml.Node, path: Path_, lines: dict[Path_, int], seen: set[int],
           file: str) -> Any:
    if id(node) in seen:
        raise SchemaError(f"{file}:{node.start_mark.line + 1}: anchors/aliases are not "
                          f"supported in probe files")
    seen.add(id(node))
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        return SafeConstructor().construct_scalar(node) if node.tag.endswith(":str") \
            else SafeConstructor().construct_object(node)
    if isinstance(node, yaml.SequenceNode):
        return [_build(n, path + (i,), lines, seen, file) for i, n in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                raise SchemaError(f"{file}:{knode.start_mark.line + 1}: mapping keys must be "
                                  f"plain scalars")
            key = SafeConstructor().construct_object(knode)
            if isinstance(key, (list, dict)):
                raise SchemaError(f"{file}:{knode.start_mark.line + 1}: bad key")
            if key in out:
                raise SchemaError(f"{file}:{knode.start_mark.line + 1}: duplicate key {key!r}")
            out[key] = _build(vnode, path + (key,), lines, seen, file)
        return out
    raise SchemaError(f"{file}:{node.start_mark.line + 1}: unsupported YAML node")


def load_docs(source: str | Path, text: str | None = None) -> list[Doc]:
    """Every document of a YAML file (a top-level list counts as several documents)."""
    file = str(source)
    if text is None:
        p = Path(source)
        try:
            if p.stat().st_size > MAX_FILE_BYTES:
                raise SchemaError(f"{file}: larger than {MAX_FILE_BYTES} bytes")
            text = p.read_text(encoding="utf-8")
        except OSError as e:
            raise SchemaError(f"{file}: cannot read: {e.strerror}") from None
        except UnicodeDecodeError:
            raise SchemaError(f"{file}: not UTF-8 text") from None
    if len(text) > MAX_FILE_BYTES:
        raise SchemaError(f"{file}: larger than {MAX_FILE_BYTES} bytes")
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        problem = getattr(e, "problem", None) or str(e)
        raise SchemaError(f"{where}: malformed YAML: {problem}") from None
    docs: list[Doc] = []
    for node in nodes:
        if node is None:
            continue
        lines: dict[Path_, int] = {}
        data = _build(node, (), lines, set(), file)
        if isinstance(data, list):
            for i, item in enumerate(data):
                sub = {p[1:]: ln for p, ln in lines.items() if p[:1] == (i,)}
                docs.append(Doc(item, file, sub))
        else:
            docs.append(Doc(data, file, lines))
    return docs
