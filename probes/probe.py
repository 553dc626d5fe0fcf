"""Probes: the parsed form of a probe document, its applicability and its instantiation.

See probes/README.md for the language.  A :class:`Probe` comes from
:func:`mmaprobe.probes.schema.parse_probe` (which validates the document);
:meth:`Probe.instantiate` turns it into concrete bit patterns for one format triple, K and
set of decided features (an :class:`Instance`); :mod:`mmaprobe.probes.decide` maps the
observed outputs of an instance to an outcome.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from mmaprobe.models import limits
from mmaprobe.models.accumulator import pack, unit_scales
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import MmaprobeError, SchemaError
from mmaprobe.models.formats import Format, FormatError, get_format
from mmaprobe.models.space import parse_space
from mmaprobe.models.yamldoc import Doc

from . import expr as ex

FORMAT_ROLES = ("in", "c", "out")
SPECIAL_VALUES = ("+0", "-0", "inf", "-inf", "nan")
#: fields of a probe document that hold text, not expressions
PROSE_FIELDS = ("id", "title", "feature", "source", "suite", "notes")
HEX_RE = re.compile(r"0[xX][0-9a-fA-F_]+")
#: Most rows one sweep may instantiate (a probe's sweeps together: MAX_PROBE_ROWS).
MAX_SWEEP = 4096
MAX_PROBE_ROWS = 8192


class InstantiationError(MmaprobeError, ValueError):
    """A probe value that a format cannot represent, or a bad position (names the term)."""


def same_value(truth: Any, value: Any) -> bool:
    """Whether a feature's true value equals a value written in a probe (YAML spelling:
    booleans case-insensitively, lists for tuples, numbers as strings)."""
    if isinstance(truth, bool) or isinstance(value, bool):
        return truth is value or str(truth).lower() == str(value).lower()
    if isinstance(truth, tuple):
        return list(truth) == (value if isinstance(value, list) else [value])
    return truth == value or str(truth) == str(value)



@dataclass
class VectorSpec:
    name: str
    path: tuple
    a: Any
    b: Any
    c: Any
    sweep: dict[str, Any] | None
    sa: Any = None  # block scaling: scale factor index -> value (1 where not given)
    sb: Any = None


@dataclass
class Rule:
    path: tuple
    cond: Any = None  # parsed expression or None
    first: dict[str, Any] | None = None
    then: Any = None
    not_found: Any = None
    otherwise: bool = False


@dataclass
class Instance:
    """Concrete vectors of one probe for one format triple / K / decided features."""

    probe: Probe
    key: tuple
    a: list[list[int]]
    b: list[list[int]]
    c: list[int]
    rows: dict[str, int] = field(default_factory=dict)  # plain vector -> row
    sweeps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # (i, row)
    env: dict[str, Any] = field(default_factory=dict)
    #: a scaled probe's scale factors per row (k / scale_block patterns each); None for
    #: other probes, whose rows a block-scaled unit reads with scale factors of 1
    sa: list[list[int]] | None = None
    sb: list[list[int]] | None = None

    def packed(self, cfg: AccumulatorConfig) -> tuple[np.ndarray, np.ndarray]:
        """The rows of a and b as cfg reads them: on a block-scaled unit each packed with its
        scale factors (the probe's own, else 1) after the k values (accumulator.pack)."""
        if not self.c:
            empty = np.empty((0, cfg.row_width), dtype=np.uint64)
            return empty, empty.copy()
        scales = ((self.sa, self.sb) if self.sa is not None
                  else unit_scales(cfg, len(self.c)) or (None, None))
        return pack(cfg, self.a, self.b, *scales)


@dataclass
class Probe:
    doc: Doc
    id: str
    title: str
    feature: str
    source: str
    suite: str
    formats: dict[str, tuple[str, ...] | None]
    ks: tuple[int, ...] | None
    applies_if: Any
    requires: tuple[str, ...]
    when: dict[str, tuple[Any, ...]]
    let: list[tuple[str, Any]]
    vectors: list[VectorSpec]
    facts: list[tuple[str, Any]]
    rules: list[Rule]
    may_be_inconclusive: bool
    notes: str = ""
    applies_when: Any = None  # parsed ``applies_when:`` expression, or None
    #: ``verified_on:`` the configurations (a template space: fixed, vary, families,
    #: exclude) a synthesised probe was verified on; it applies to no other
    verified_on: Any = None
    _verified: dict = field(default_factory=dict, repr=False, compare=False)
    _names: dict = field(default_factory=dict, repr=False, compare=False)
    _values: dict = field(default_factory=dict, repr=False, compare=False)
    #: the environment after ``let`` per (formats, k, decided): applies_when_holds and
    #: instantiate evaluate the same names for the same instance
    _lets: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        # the memo tables stay behind when a probe is pickled (to and from check's workers)
        state = dict(self.__dict__)
        for name in ("_verified", "_names", "_values", "_lets"):
            state[name] = {}
        return state

    @property
    def file(self) -> str:
        return self.doc.file

    @property
    def document(self) -> Any:
        """The probe's document as JSON data (mapping keys as strings): what a suite embeds,
        and what parses back to this probe."""
        return _json_data(self.doc.data)

    @property
    def digest(self) -> str:
        """A content digest of the document: equal digests, same probe."""
        text = json.dumps(self.document, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def per_side(self) -> bool:
        """Whether the probe names ``a.*`` or ``b.*`` constants: it is written for a's and b's
        own formats (instantiated with ``fb``), not through a carrier (probes/port.py)."""
        hit = self.__dict__.get("_per_side")
        if hit is None:
            exprs = {key: v for key, v in self.doc.data.items() if key not in PROSE_FIELDS}
            hit = self.__dict__["_per_side"] = any(
                n.startswith(("a.", "b.")) for n in _names_in_data(exprs))
        return hit

    @property
    def scaled(self) -> bool:
        """Whether the probe writes scale factors of its own (``sa``, ``sb``; it requires
        scale_block): it applies to block-scaled units only, instantiated with their scale
        format (``s.*`` constants)."""
        return "scale_block" in self.requires

    # -- applicability ---------------------------------------------------------------
    def applies_to_formats(self, fin: str, fc: str, fout: str, k: int,
                           fb: str | None = None, fs: str | None = None) -> bool:
        """``formats:``, ``k:`` and ``applies_if``; fb: b's format where it differs from
        fin (a's), for a probe written per side; fs: the scale factors' format of a
        block-scaled unit, which a scaled probe needs."""
        if self.scaled and fs is None:
            return False
        for role, name in zip(FORMAT_ROLES, (fin, fc, fout)):
            allowed = self.formats.get(role)
            # a pair's virtual carrier "A~B" (probes/port.py) is of the formats it joins
            if allowed is not None and not all(n in allowed for n in name.split("~")):
                return False
        if self.ks is not None and k not in self.ks:
            return False
        if self.applies_if is not None:
            env = base_env(fin, fc, fout, k, fb, fs if self.scaled else None)
            try:
                return bool(ex._truth(ex.evaluate(self.applies_if, env)))
            except ex.ExprError as e:
                raise self.doc.error(("applies_if",), str(e)) from None
        return True

    def applies_when_holds(self, fin: str, fc: str, fout: str, k: int,
                           decided: dict[str, int], fb: str | None = None,
                           fs: str | None = None) -> bool:
        """``applies_when:``, a boolean over format constants, decided integer features and
        the probe's ``let`` names."""
        if self.applies_when is None:
            return True
        try:
            env = self._let_env(fin, fc, fout, k, decided,
                                lambda name, node, env: ex.evaluate(node, env), fb, fs)
            return bool(ex._truth(ex.evaluate(self.applies_when, env)))
        except ex.ExprError as e:
            raise self.doc.error(("applies_when",), str(e)) from None

    def applies_to_config(self, cfg: AccumulatorConfig) -> bool:
        """``verified_on:``: the configuration is one the probe was verified on."""
        if self.verified_on is None:
            return True
        shape = (cfg.in_format, cfg.c_format, cfg.out_format, cfg.k)
        configs = self._verified.get(shape)
        if configs is None:
            configs = self._verified[shape] = verified_configs(self.doc, self.verified_on,
                                                               shape)
        return cfg in configs

    def when_matches(self, truth: dict[str, Any]) -> bool:
        """``when:``, the true values of the required features are among those listed."""
        for name, allowed in self.when.items():
            if not any(same_value(truth[name], v) for v in allowed):
                return False
        return True

    def _let_env(self, fin: str, fc: str, fout: str, k: int, decided: dict[str, int],
                 evaluate: Callable[[str, Any, dict[str, Any]], Any],
                 fb: str | None = None, fs: str | None = None) -> dict[str, Any]:
        """The names after ``let`` for these formats, k and decided features (memoised;
        the caller copies it before adding names).  ``evaluate(name, node, env)`` computes
        one ``let`` and reports its errors the caller's way."""
        fs = fs if self.scaled else None
        key = (fin, fc, fout, k, tuple(sorted(decided.items())), fb, fs)
        env = self._lets.get(key)
        if env is None:
            env = base_env(fin, fc, fout, k, fb, fs)
            env.update({n: Fraction(v) for n, v in decided.items()})
            for name, node in self.let:
                env[name] = evaluate(name, node, env)
            self._lets[key] = env
        return env

    # -- instantiation --------------------------------------------------------------
    def instantiate(self, fin: str, fc: str, fout: str, k: int,
                    decided: dict[str, int] | None = None, fb: str | None = None,
                    fs: str | None = None) -> Instance:
        """Concrete vectors; ``decided`` binds the integer names of ``requires``; ``fb``:
        b's format where it differs from fin (a's), b's values then written in it; ``fs``:
        the scale factors' format, in which a scaled probe's ``sa`` and ``sb`` are
        written (``decided`` then binds scale_block)."""
        decided = dict(decided or {})
        fb = None if fb == fin else fb
        fs = fs if self.scaled else None
        if self.scaled and (fs is None or "scale_block" not in decided):
            raise self._error(("requires",), f"formats {fin}->{fout}: a scaled probe needs "
                              f"the scale factors' format and scale_block")
        key = (fin, fc, fout, k, tuple(sorted(decided.items()))) + ((fb,) if fb else ()) \
            + ((("scale", fs),) if fs else ())
        fmt_in, fmt_c = get_format(fin), get_format(fc)
        fmt_b = get_format(fb or fin)
        env = dict(self._let_env(
            fin, fc, fout, k, decided,
            lambda name, node, env: self._eval(node, env, ("let", name), fin, fout), fb, fs))
        inst = Instance(self, key, [], [], [], env=env)
        fmt_s = get_format(fs) if fs is not None else None
        if fmt_s is not None:
            inst.sa, inst.sb = [], []
        for vec in self.vectors:
            if vec.sweep is None:
                inst.rows[vec.name] = len(inst.c)
                self._row(inst, vec, env, (fmt_in, fmt_b), fmt_c, k, fout, fs=fmt_s)
                continue
            var = vec.sweep["var"]
            lo, hi, step = (self._int(vec.sweep[n], env, vec.path + ("sweep", n), fin, fout)
                            for n in ("from", "to", "step"))
            where = vec.path + ("sweep",)
            if step <= 0:
                raise self._error(where + ("step",), f"formats {fin}->{fout}: sweep "
                                  f"{vec.name} needs a positive step, got {step}")
            count = max(0, (hi - lo) // step + 1)  # empty where to < from (e.g. nfma = 1)
            if count > MAX_SWEEP:
                raise self._error(where, f"formats {fin}->{fout}: sweep {vec.name} from {lo} "
                                  f"to {hi} has {count} values; at most {MAX_SWEEP}")
            limits.PROBE_ROWS.check(len(inst.c) + count, f"{self._where(where)}: the probe's "
                                    f"rows up to sweep {vec.name}")
            inst.sweeps[vec.name] = []
            for i in range(lo, hi + 1, step):
                senv = dict(env)
                senv[var] = Fraction(i)
                inst.sweeps[vec.name].append((i, len(inst.c)))
                self._row(inst, vec, senv, (fmt_in, fmt_b), fmt_c, k, fout, f"{var}={i}",
                          fmt_s)
        return inst

    def _where(self, path: tuple) -> str:
        return f"probe {self.id} ({self.file}:{self.doc.line(path)})"

    def _error(self, path: tuple, message: str) -> InstantiationError:
        return InstantiationError(f"{self._where(path)}, {message}")

    def _int(self, node: Any, env: dict[str, Any], path: tuple, fin: str, fout: str) -> int:
        value = self._eval(node, env, path, fin, fout)
        try:
            return ex.to_int(value, ".".join(map(str, path)))
        except ex.ExprError as e:
            raise self._error(path, f"formats {fin}->{fout}, {e}") from None

    def _eval(self, node: Any, env: dict[str, Any], path: tuple, fin: str, fout: str) -> Any:
        try:
            return ex.evaluate(node, env)
        except ex.ExprError as e:
            raise InstantiationError(f"probe {self.id} ({self.file}:{self.doc.line(path)}), "
                                     f"formats {fin}->{fout}, {'.'.join(map(str, path))}: "
                                     f"{e}") from None

    def _row(self, inst: Instance, vec: VectorSpec, env: dict[str, Any],
             sides: tuple[Format, Format], fmt_c: Format, k: int, fout: str,
             tag: str = "", fs: Format | None = None) -> None:
        row = {}
        for side, fmt_in in zip(("a", "b"), sides):
            bits = [fmt_in.zero_bits(0)] * k
            spec = getattr(vec, side)
            items = _entries(spec)
            for pos_src, val_src in items:
                where = vec.path + (side, pos_src)
                positions = self._positions(pos_src, env, where, fmt_in.name, fout, k)
                # 'pos': the position a value of a range is written at; a value that does
                # not name it is the same at every position of the range
                ranged = not (len(positions) == 1 and not isinstance(pos_src, str))
                per_pos = ranged and "pos" in self._names_of(val_src)
                value = None
                for pos in positions:
                    if value is None or per_pos:
                        term = f"vector {vec.name}{f' ({tag})' if tag else ''} {side}[{pos}]"
                        penv = {**env, "pos": Fraction(pos)} if ranged else env
                        value = self._value(val_src, penv, fmt_in, term, where, fout)
                    bits[pos] = value
            row[side] = bits
        c = self._value(vec.c, env, fmt_c, f"vector {vec.name}{f' ({tag})' if tag else ''} c",
                        vec.path + ("c",), fout) if vec.c is not None else fmt_c.zero_bits(0)
        inst.a.append(row["a"])
        inst.b.append(row["b"])
        inst.c.append(c)
        if fs is not None:
            self._scale_row(inst, vec, env, fs, k, fout, tag)

    def _scale_row(self, inst: Instance, vec: VectorSpec, env: dict[str, Any], fs: Format,
                   k: int, fout: str, tag: str) -> None:
        """The row's scale factors: k / scale_block of each operand, 1 where not given."""
        n = k // int(env["scale_block"])
        for side in ("sa", "sb"):
            bits = [fs.exact_bits(1)] * n
            for pos_src, val_src in _entries(getattr(vec, side)):
                where = vec.path + (side, pos_src)
                for pos in self._positions(pos_src, env, where, fs.name, fout, n,
                                           "k/scale_block"):
                    term = f"vector {vec.name}{f' ({tag})' if tag else ''} {side}[{pos}]"
                    penv = {**env, "pos": Fraction(pos)}
                    bits[pos] = self._value(val_src, penv, fs, term, where, fout)
            getattr(inst, side).append(bits)

    def _positions(self, src: Any, env: dict[str, Any], where: tuple, fin: str, fout: str,
                   k: int, count: str = "k") -> list[int]:
        """The positions an entry names, within 0 .. k - 1 (``count``: what k counts)."""
        if isinstance(src, int) and not isinstance(src, bool):
            lo = hi = src
        else:
            text = str(src)
            if ".." in text:
                left, right = text.split("..", 1)
                lo = self._int(left, env, where, fin, fout)
                hi = self._int(right, env, where, fin, fout)
            else:
                lo = hi = self._int(text, env, where, fin, fout)
        if not (0 <= lo <= hi < k):
            raise InstantiationError(f"probe {self.id} ({self.file}:{self.doc.line(where)}), "
                                     f"formats {fin}->{fout}: position {src!r} gives "
                                     f"{lo}..{hi}, outside 0..{k - 1} for {count}={k}")
        return list(range(lo, hi + 1))

    def _names_of(self, src: Any) -> tuple[str, ...]:
        """The names an expression reads (none for special values, bit patterns and text
        that does not parse, whose error _value reports)."""
        text = str(src) if not isinstance(src, str) else src
        names = self._names.get(text)
        if names is None:
            try:
                names = tuple(sorted(ex.names_in(ex.parse(text))))
            except ex.ExprError:
                names = ()
            self._names[text] = names
        return names

    def _value(self, src: Any, env: dict[str, Any], fmt: Format, term: str, where: tuple,
               fout: str) -> int:
        if isinstance(src, str):
            s = src.strip()
            if s in SPECIAL_VALUES:
                try:
                    if s in ("+0", "-0"):
                        return fmt.zero_bits(int(s == "-0"))
                    if s == "nan":
                        return fmt.nan_bits()
                    return fmt.inf_bits(int(s == "-inf"))
                except FormatError as e:
                    raise self._error(where, f"format {fmt.name}, {term}: {e}") from None
            if HEX_RE.fullmatch(s):
                bits = int(s[2:].replace("_", ""), 16)
                width = fmt.width or fmt.bits
                if bits >> width:
                    raise self._error(where, f"format {fmt.name}, {term}: bit pattern {s} "
                                             f"wider than {width} bits")
                return bits
        text = str(src) if not isinstance(src, str) else src
        # the same expression with the same values of its names gives the same value:
        # memoised per probe (instances differ in a few bindings, sweeps in one variable)
        names = self._names_of(text)
        ckey = (text, fmt.name, tuple(env.get(n) for n in names))
        hit = self._values.get(ckey)
        if hit is not None:
            return hit
        x = self._eval(text, env, where, fmt.name, fout)
        if not isinstance(x, Fraction):
            raise self._error(where, f"format {fmt.name}, {term}: expected a number, got "
                                     f"{x!r}")
        bits = fmt.exact_bits(x)
        if bits is None:
            raise InstantiationError(f"probe {self.id} ({self.file}:{self.doc.line(where)}), "
                                     f"format {fmt.name}, {term}: {src!r} = {_show(x)} is not "
                                     f"representable in {fmt.name}")
        if len(self._values) < 200000:
            self._values[ckey] = bits
        return bits


def _show(x: Fraction) -> str:
    if x.denominator == 1 or x.numerator.bit_length() > 64:
        return str(x) if x.numerator.bit_length() < 64 else f"~{_approx(x)}"
    return f"{x} (~{_approx(x)})"


def _approx(x: Fraction) -> str:
    """x to 6 digits, or as a power of two when beyond the float range."""
    try:
        return f"{float(x):.6g}"
    except OverflowError:
        return f"2^{x.numerator.bit_length() - x.denominator.bit_length()}"


def _json_data(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _json_data(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_data(v) for v in x]
    return x


def _names_in_data(x: Any) -> set[str]:
    """Every name the expressions of a document's strings read (text that does not parse
    contributes none; the schema reports it)."""
    if isinstance(x, dict):
        return set().union(*(_names_in_data(v) for v in (*x.keys(), *x.values())))
    if isinstance(x, list):
        return set().union(*(_names_in_data(v) for v in x))
    if isinstance(x, str):
        try:
            return set(ex.names_in(ex.parse(x)))
        except ex.ExprError:
            return set()
    return set()


def _entries(spec: Any) -> list[tuple[Any, Any]]:
    if spec is None:
        return []
    if isinstance(spec, dict):
        return list(spec.items())
    return [(i, v) for i, v in enumerate(spec)]


def verified_configs(doc: Doc, spec: dict[str, Any], shape: tuple) -> frozenset:
    """The configurations of a ``verified_on:`` template space for one format/K shape
    (errors name the probe file and the line of the field)."""
    lines = {path[1:]: ln for path, ln in doc.lines.items()
             if path[:1] == ("verified_on",)}
    sub = Doc({"id": "verified-on", "template": True, **spec}, doc.file, lines)
    try:
        space = parse_space(sub, shape)
    except SchemaError as e:
        if "no valid configuration" in str(e):
            return frozenset()
        raise
    return frozenset(space.configs)


def base_env(fin: str, fc: str, fout: str, k: int, fb: str | None = None,
             fs: str | None = None) -> dict[str, Any]:
    """The names every probe expression may use: k and the constants of the input (in, and
    per side a and b: b's are fb's where given), accumulator (c) and output formats, and
    of the scale factors' format (s) where fs is given (a fresh dict the caller may
    extend)."""
    return dict(_base_env(fin, fc, fout, k, fb or fin, fs))


@functools.lru_cache(maxsize=1024)
def _base_env(fin: str, fc: str, fout: str, k: int, fb: str, fs: str | None
              ) -> dict[str, Any]:
    env: dict[str, Any] = {"k": Fraction(k)}
    roles = [("in", fin), ("a", fin), ("b", fb), ("acc", fc), ("out", fout)]
    for prefix, name in roles + ([("s", fs)] if fs else []):
        for cname, v in get_format(name).constants().items():
            env[f"{prefix}.{cname}"] = Fraction(v)
    return env


