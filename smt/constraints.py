"""Input constraints for synthesis queries: what the synthesised vectors may contain.

Hardware people need vectors that avoid special cases, so the default is finite inputs.
A constraints file (YAML, ``--constraints FILE``) is a mapping of the fields below, e.g.::

    finite: true
    normal: true            # nonzero entries are normal numbers (no subnormals)
    exp_range: [-4, 4]      # unbiased exponents of nonzero a and b entries
    c_exp_range: [-8, 8]    # unbiased exponent of a nonzero c
    zero_a: [3]             # positions of a fixed to +0
    zero_b: []
    zero_c: false
    sign_a: "+?+?"          # one character per position: + (sign 0), - (sign 1), ? (free)
    sign_b: null
    sign_c: "?"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import z3

from mmaprobe.models.errors import InputError
from mmaprobe.models.formats import Format
from mmaprobe.models.yamldoc import load_doc


@dataclass(frozen=True)
class Constraints:
    finite: bool = True
    normal: bool = False
    exp_range: tuple[int, int] | None = None
    c_exp_range: tuple[int, int] | None = None
    zero_a: frozenset[int] = field(default_factory=frozenset)
    zero_b: frozenset[int] = field(default_factory=frozenset)
    zero_c: bool = False
    sign_a: str | None = None
    sign_b: str | None = None
    sign_c: str = "?"

    @classmethod
    def from_dict(cls, data: Any, where: str = "constraints") -> Constraints:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise InputError(f"{where}: expected a mapping of constraint fields")
        known = {"finite", "normal", "exp_range", "c_exp_range", "zero_a", "zero_b",
                 "zero_c", "sign_a", "sign_b", "sign_c"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                             f"valid fields: {', '.join(sorted(known))}")
        kw: dict[str, Any] = {}
        for name in ("finite", "normal", "zero_c"):
            if name in data:
                if not isinstance(data[name], bool):
                    raise InputError(f"{where}: {name}: expected true or false")
                kw[name] = data[name]
        for name in ("exp_range", "c_exp_range"):
            v = data.get(name)
            if v is not None:
                if (not isinstance(v, list) or len(v) != 2
                        or not all(isinstance(x, int) and not isinstance(x, bool)
                                   and abs(x) < 1 << 20 for x in v) or v[0] > v[1]):
                    raise InputError(f"{where}: {name}: expected [lo, hi] integers, lo <= hi")
                kw[name] = (v[0], v[1])
        for name in ("zero_a", "zero_b"):
            v = data.get(name)
            if v is not None:
                if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                                      and 0 <= x < 1 << 20 for x in v):
                    raise InputError(f"{where}: {name}: expected a list of positions")
                kw[name] = frozenset(v)
        for name in ("sign_a", "sign_b", "sign_c"):
            v = data.get(name)
            if v is not None:
                if not isinstance(v, str) or set(v) - set("+-?"):
                    raise InputError(f"{where}: {name}: expected a string of + - ?")
                kw[name] = v
        return cls(**kw)

    @classmethod
    def load(cls, path: str | Path) -> Constraints:
        return cls.from_dict(load_doc(path, "constraints").data, str(path))

    def check(self, k: int) -> None:
        for name, s in (("sign_a", self.sign_a), ("sign_b", self.sign_b)):
            if s is not None and len(s) != k:
                raise InputError(f"constraints: {name} has {len(s)} characters, expected k={k}")
        if len(self.sign_c) != 1:
            raise InputError("constraints: sign_c must be one character")
        for name, z in (("zero_a", self.zero_a), ("zero_b", self.zero_b)):
            bad = sorted(i for i in z if i >= k)
            if bad:
                raise InputError(f"constraints: {name} positions {bad} outside 0..{k - 1}")

    def fixed_zero(self, i: int) -> bool:
        """Position i contributes a +0 product whatever the other factor (both finite)."""
        return i in self.zero_a or i in self.zero_b


def entry(fmt: Format, x: z3.BitVecRef, finite: bool, normal: bool,
          exp_range: tuple[int, int] | None, sign: str) -> list[z3.BoolRef]:
    """Constraints on one symbolic operand pattern x of format fmt."""
    out: list[z3.BoolRef] = []
    if fmt.pad:
        out.append(z3.Extract(fmt.pad - 1, 0, x) == 0)
    body = z3.Extract(fmt.pad + fmt.bits - 1, fmt.pad, x)
    efield = z3.Extract(fmt.t + fmt.ebits - 1, fmt.t, body)
    frac = z3.Extract(fmt.t - 1, 0, body)
    top = (1 << fmt.ebits) - 1
    nonzero = z3.Extract(fmt.bits - 2, 0, body) != 0
    if finite:
        if fmt.kind == "ieee":
            out.append(efield != top)
        elif fmt.kind == "fn":
            out.append(z3.Not(z3.And(efield == top, frac == (1 << fmt.t) - 1)))
        elif fmt.kind == "fnuz":
            out.append(body != (1 << (fmt.bits - 1)))
    if normal:
        out.append(z3.Or(efield != 0, frac == 0))
    if exp_range is not None:
        lo, hi = exp_range
        e = z3.ZeroExt(4, efield)
        ebias = z3.If(efield == 0, z3.BitVecVal(1, fmt.ebits + 4), e)
        lo_f, hi_f = lo + fmt.bias, hi + fmt.bias
        out.append(z3.Implies(nonzero, z3.And(
            z3.UGE(ebias, max(0, lo_f)) if lo_f > 0 else z3.BoolVal(True),
            z3.ULE(ebias, hi_f) if hi_f >= 0 else z3.BoolVal(False))))
    if sign == "+":
        out.append(z3.Extract(fmt.bits - 1, fmt.bits - 1, body) == 0)
    elif sign == "-":
        out.append(z3.Extract(fmt.bits - 1, fmt.bits - 1, body) == 1)
    return out
