"""The one YAML reader: plain data (strings, numbers, booleans, null, lists, maps) with the
line of every field, and limits that keep hostile files cheap.

Every YAML file mmaprobe reads (probes, candidate spaces, configurations, constraints,
presets) goes through :func:`load_docs` or :func:`load_data`.  What it refuses, with an
error naming the file and line: anchors and aliases (exponential expansion), merge keys
(``<<:``), null mapping keys, explicit tags other than the plain ones (``!!python/...``,
``!!binary``, ...), scalars the plain tags cannot construct (``!!int abc``), integers of more than
:data:`MAX_INT_DIGITS` digits, nesting deeper than :data:`MAX_DEPTH`, files larger than
:data:`MAX_FILE_BYTES`, and anything that is not a regular UTF-8 text file.

>>> doc, = load_docs("example.yaml", text="k: 16\\nvary:\\n  neab: [0, 1]\\n")
>>> doc.data, doc.line(("vary", "neab"))
({'k': 16, 'vary': {'neab': [0, 1]}}, 3)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from .errors import SchemaError, read_text

MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 40
MAX_INT_DIGITS = 400

FieldPath = tuple  # keys and indices from the document root to a field

#: the folders of the files mmaprobe ships (probes, spaces, presets, tables): read on every
#: command, so through libyaml's parser where it is installed.  Every other file goes
#: through the pure-Python one, whose limits are checked: libyaml's composer recurses in C
#: and crashes the interpreter on deep enough nesting instead of raising RecursionError.
_SHIPPED = tuple(str(Path(__file__).resolve().parents[1] / d) + os.sep
                 for d in ("models", "probes"))

_PLAIN = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_PLAIN + t for t in ("str", "int", "float", "bool", "null")}


class Doc:
    """One YAML document: its data, where it came from, and the line of every field."""

    def __init__(self, data: Any, file: str, lines: dict[FieldPath, int]):
        self.data = data
        self.file = file
        self.lines = lines

    def line(self, path: FieldPath) -> int:
        """The line of path, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 1)

    def error(self, path: FieldPath, message: str) -> SchemaError:
        field = ".".join(str(x) for x in path) or "(document)"
        return SchemaError(f"{self.file}:{self.line(path)}: {field}: {message}")

    def check_keys(self, path: FieldPath, mapping: dict, valid: Iterable[str],
                   label: str = "valid") -> None:
        """A SchemaError at the first unknown key of ``mapping`` (sorted), listing the valid
        ones."""
        unknown = sorted(str(k) for k in set(mapping) - set(valid))
        if unknown:
            raise self.error(path + (unknown[0],),
                             f"unknown field; {label}: {', '.join(sorted(valid))}")


def _scalar(node: yaml.ScalarNode, file: str) -> Any:
    where = f"{file}:{node.start_mark.line + 1}"
    if node.tag not in _SCALAR_TAGS:
        raise SchemaError(f"{where}: tag {node.tag!r} is not allowed (only plain strings, "
                          f"numbers, booleans and null)")
    if node.tag == _PLAIN + "int":
        digits = sum(ch.isdigit() for ch in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise SchemaError(f"{where}: integer of {digits} digits (at most "
                              f"{MAX_INT_DIGITS})")
    try:
        return SafeConstructor().construct_object(node)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as e:
        raise SchemaError(f"{where}: cannot read {node.value!r} as "
                          f"{node.tag.rsplit(':', 1)[-1]}: {e}") from None


def _build(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int], seen: set[int],
           file: str) -> Any:
    where = f"{file}:{node.start_mark.line + 1}"
    if id(node) in seen:
        raise SchemaError(f"{where}: anchors/aliases are not allowed")
    if len(path) > MAX_DEPTH:
        raise SchemaError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    seen.add(id(node))
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node, file)
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _PLAIN + "seq":
            raise SchemaError(f"{where}: tag {node.tag!r} is not allowed")
        return [_build(n, path + (i,), lines, seen, file) for i, n in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        if node.tag != _PLAIN + "map":
            raise SchemaError(f"{where}: tag {node.tag!r} is not allowed")
        out: dict[Any, Any] = {}
        for knode, vnode in node.value:
            kwhere = f"{file}:{knode.start_mark.line + 1}"
            if not isinstance(knode, yaml.ScalarNode):
                raise SchemaError(f"{kwhere}: mapping keys must be plain scalars")
            if knode.tag == _PLAIN + "merge":
                raise SchemaError(f"{kwhere}: merge keys ('<<') are not allowed")
            key = _scalar(knode, file)
            if key is None:
                raise SchemaError(f"{kwhere}: a mapping key must not be null ('~' or empty)")
            if key in out:
                raise SchemaError(f"{kwhere}: duplicate key {key!r}")
            out[key] = _build(vnode, path + (key,), lines, seen, file)
        return out
    raise SchemaError(f"{where}: unsupported YAML node")


def _loader(source: str | Path, text_given: bool) -> type:
    """libyaml's parser for a file mmaprobe ships (read from disk), else the Python one."""
    if text_given or not getattr(yaml, "__with_libyaml__", False):
        return yaml.SafeLoader
    path = os.path.realpath(source)
    return yaml.CSafeLoader if path.startswith(_SHIPPED) else yaml.SafeLoader


def load_docs(source: str | Path, text: str | None = None, what: str = "YAML") -> list[Doc]:
    """Every document of a YAML file (a top-level list counts as several documents)."""
    file = str(source)
    loader = _loader(source, text is not None)
    if text is None:
        text = read_text(source, what, MAX_FILE_BYTES, SchemaError)
    if len(text) > MAX_FILE_BYTES:
        raise SchemaError(f"{file}: larger than {MAX_FILE_BYTES} bytes")
    try:
        nodes = list(yaml.compose_all(text, Loader=loader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        problem = getattr(e, "problem", None) or str(e)
        raise SchemaError(f"{where}: malformed YAML: {problem}") from None
    except RecursionError:
        raise SchemaError(f"{file}: nested too deeply") from None
    docs: list[Doc] = []
    for node in nodes:
        if node is None:
            continue
        lines: dict[FieldPath, int] = {}
        data = _build(node, (), lines, set(), file)
        if isinstance(data, list):
            for i, item in enumerate(data):
                sub = {p[1:]: ln for p, ln in lines.items() if p[:1] == (i,)}
                docs.append(Doc(item, file, sub))
        else:
            docs.append(Doc(data, file, lines))
    return docs


def load_doc(source: str | Path, what: str, text: str | None = None) -> Doc:
    """The single document of a YAML file (a configuration, a constraints file)."""
    file = str(source)
    loader = _loader(source, text is not None)
    if text is None:
        text = read_text(source, what, MAX_FILE_BYTES, SchemaError)
    try:
        nodes = [n for n in yaml.compose_all(text, Loader=loader) if n is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        raise SchemaError(f"{where}: malformed YAML {what}: "
                          f"{getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise SchemaError(f"{file}: nested too deeply") from None
    if len(nodes) != 1:
        raise SchemaError(f"{file}: expected one YAML document ({what}), found {len(nodes)}")
    lines: dict[FieldPath, int] = {}
    return Doc(_build(nodes[0], (), lines, set(), file), file, lines)
