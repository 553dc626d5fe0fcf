"""The probes' small, safe expression language: exact rationals, no ``eval``.

A hand-written tokenizer and recursive-descent parser build a tiny tree of tuples; the
evaluator walks it with a whitelist of names and functions.  Hostile input is rejected with
a clear :class:`ExprError`: over-long text, deep nesting, huge exponents or integers,
division by zero, unknown names.  Nothing here can hang: every loop is bounded by the input
length and every number by an explicit cap.

Grammar (lowest precedence first)::

    expr    := or
    or      := and ('or' and)*
    and     := not ('and' not)*
    not     := 'not' not | cmp
    cmp     := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
    sum     := term (('+'|'-') term)*
    term    := unary (('*'|'/') unary)*
    unary   := ('-'|'+') unary | power
    power   := atom (('^'|'**') unary)?          (right associative)
    atom    := NUMBER | HEX | NAME | NAME '(' args ')' | '(' expr ')'
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from mmaprobe.models.errors import MmaprobeError

MAX_LENGTH = 400
MAX_DEPTH = 40
MAX_EXPONENT = 2048
MAX_INT_BITS = 4096


class ExprError(MmaprobeError, ValueError):
    """A malformed, unsafe or unevaluable expression."""


@dataclass(frozen=True)
class Observed:
    """An observed output: its bit pattern, class and exact value (finite only)."""

    bits: int
    cls: str  # zero, finite, inf, nan
    sign: int
    value: Fraction | None

    def number(self) -> Fraction | float:
        if self.cls == "nan":
            return math.nan
        if self.cls == "inf":
            return -math.inf if self.sign else math.inf
        assert self.value is not None
        return self.value


Value = Fraction | bool | Observed | float

# -- tokenizer -----------------------------------------------------------------

_OPS2 = ("**", "==", "!=", "<=", ">=")
_OPS1 = "+-*/^()<>,"
_KEYWORDS = ("and", "or", "not")
#: ASCII digits only: str.isdigit() also holds for '²', full-width and other scripts' digits
_DIGITS = "0123456789"


def tokenize(text: str) -> list[tuple[str, str]]:
    """Tokens as (kind, text): num, hex, name, op, kw."""
    if not isinstance(text, str):
        raise ExprError(f"expected an expression string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters ({len(text)})")
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if text.startswith(("0x", "0X"), i):
            j = i + 2
            while j < n and text[j] in "0123456789abcdefABCDEF_":
                j += 1
            if j == i + 2:
                raise ExprError(f"malformed hexadecimal number at column {i + 1} in {text!r}")
            out.append(("hex", text[i:j]))
            i = j
            continue
        if ch in _DIGITS or (ch == "." and i + 1 < n and text[i + 1] in _DIGITS):
            j = i
            while j < n and (text[j] in _DIGITS or text[j] == "."):
                j += 1
            lit = text[i:j]
            if lit.count(".") > 1:
                raise ExprError(f"malformed number {lit!r} in {text!r}")
            out.append(("num", lit))
            i = j
            continue
        if ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_."):
                j += 1
            word = text[i:j]
            if word.endswith(".") or ".." in word:
                raise ExprError(f"malformed name {word!r} in {text!r}")
            out.append(("kw" if word in _KEYWORDS else "name", word))
            i = j
            continue
        two = text[i:i + 2]
        if two in _OPS2:
            out.append(("op", two))
            i += 2
            continue
        if ch in _OPS1:
            out.append(("op", ch))
            i += 1
            continue
        raise ExprError(f"unexpected character {ch!r} at column {i + 1} in {text!r}")
    return out


# -- parser ------------------------------------------------------------------------

Node = tuple


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokenize(text)
        self.pos = 0
        self.depth = 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise ExprError(f"unexpected end of expression {self.text!r}")
        self.pos += 1
        return tok

    def accept(self, kind: str, text: str) -> bool:
        tok = self.peek()
        if tok == (kind, text):
            self.pos += 1
            return True
        return False

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"expression nested deeper than {MAX_DEPTH} levels")

    def parse(self) -> Node:
        if not self.toks:
            raise ExprError("empty expression")
        node = self.expr()
        tok = self.peek()
        if tok is not None:
            raise ExprError(f"unexpected {tok[1]!r} in {self.text!r}")
        return node

    def expr(self) -> Node:
        self.enter()
        node = self.or_()
        self.depth -= 1
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.accept("kw", "or"):
            node = ("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.accept("kw", "and"):
            node = ("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.accept("kw", "not"):
            self.enter()
            node = ("not", self.not_())
            self.depth -= 1
            return node
        return self.cmp()

    def cmp(self) -> Node:
        node = self.sum()
        tok = self.peek()
        if tok and tok[0] == "op" and tok[1] in ("==", "!=", "<", "<=", ">", ">="):
            self.pos += 1
            node = ("cmp", tok[1], node, self.sum())
            nxt = self.peek()
            if nxt and nxt[0] == "op" and nxt[1] in ("==", "!=", "<", "<=", ">", ">="):
                raise ExprError(f"chained comparison in {self.text!r}; use 'and'")
        return node

    def sum(self) -> Node:
        node = self.term()
        while True:
            tok = self.peek()
            if tok and tok[0] == "op" and tok[1] in "+-" and len(tok[1]) == 1:
                self.pos += 1
                node = ("bin", tok[1], node, self.term())
            else:
                return node

    def term(self) -> Node:
        node = self.unary()
        while True:
            tok = self.peek()
            if tok and tok[0] == "op" and tok[1] in ("*", "/"):
                self.pos += 1
                node = ("bin", tok[1], node, self.unary())
            else:
                return node

    def unary(self) -> Node:
        tok = self.peek()
        if tok and tok[0] == "op" and tok[1] in ("-", "+"):
            self.pos += 1
            self.enter()
            node = self.unary()
            self.depth -= 1
            return ("neg", node) if tok[1] == "-" else node
        return self.power()

    def power(self) -> Node:
        base = self.atom()
        tok = self.peek()
        if tok and tok[0] == "op" and tok[1] in ("^", "**"):
            self.pos += 1
            self.enter()
            node = ("bin", "^", base, self.unary())
            self.depth -= 1
            return node
        return base

    def atom(self) -> Node:
        kind, text = self.take()
        if kind == "num":
            return ("num", Fraction(text))
        if kind == "hex":
            digits = text[2:].replace("_", "")
            if len(digits) * 4 > MAX_INT_BITS:
                raise ExprError(f"hexadecimal number longer than {MAX_INT_BITS} bits")
            return ("num", Fraction(int(digits, 16)))
        if kind == "name":
            if self.accept("op", "("):
                self.enter()
                args: list[Node] = []
                if not self.accept("op", ")"):
                    args.append(self.expr())
                    while self.accept("op", ","):
                        args.append(self.expr())
                    if not self.accept("op", ")"):
                        raise ExprError(f"expected ')' after the arguments of {text}() "
                                        f"in {self.text!r}")
                self.depth -= 1
                return ("call", text, args)
            return ("name", text)
        if (kind, text) == ("op", "("):
            self.enter()
            node = self.expr()
            self.depth -= 1
            if not self.accept("op", ")"):
                raise ExprError(f"missing ')' in {self.text!r}")
            return node
        raise ExprError(f"unexpected {text!r} in {self.text!r}")


def parse(text: str) -> Node:
    """The tree of an expression (memoised: probes re-evaluate the same texts for every
    format, K and sweep index; a tree is an immutable tuple, errors are not cached)."""
    if not isinstance(text, str):
        return _Parser(text).parse()  # raises the tokenizer's clear error
    return _parse_cached(text)


@functools.lru_cache(maxsize=8192)
def _parse_cached(text: str) -> Node:
    return _Parser(text).parse()


def names_in(node: Node) -> set[str]:
    """The free names an expression refers to."""
    kind = node[0]
    if kind == "name":
        return {node[1]}
    if kind == "num":
        return set()
    if kind == "call":
        out: set[str] = set()
        for a in node[2]:
            out |= names_in(a)
        return out
    out = set()
    for part in node[1:]:
        if isinstance(part, tuple):
            out |= names_in(part)
    return out


# -- evaluator --------------------------------------------------------------------------

FUNCTIONS = ("min", "max", "abs", "floor", "ceil", "log2", "flog2",
             "isnan", "isinf", "isneg", "iszero", "bits")


def _num(v: Value, what: str) -> Fraction | float:
    if isinstance(v, Observed):
        return v.number()
    if isinstance(v, bool):
        raise ExprError(f"{what}: expected a number, got a truth value")
    return v


def _exact(v: Value, what: str) -> Fraction:
    x = _num(v, what)
    if isinstance(x, float):
        raise ExprError(f"{what}: expected a finite number, got {x}")
    return x


def _check_size(x: Fraction) -> Fraction:
    if x.numerator.bit_length() > MAX_INT_BITS or x.denominator.bit_length() > MAX_INT_BITS:
        raise ExprError(f"intermediate value larger than {MAX_INT_BITS} bits")
    return x


def _pow(base: Fraction, e: Fraction) -> Fraction:
    if e.denominator != 1:
        raise ExprError(f"exponent {e} is not an integer")
    n = int(e)
    if abs(n) > MAX_EXPONENT:
        raise ExprError(f"exponent {n} outside [-{MAX_EXPONENT}, {MAX_EXPONENT}]")
    if base == 0 and n < 0:
        raise ExprError("division by zero (0 to a negative power)")
    bits = max(base.numerator.bit_length(), base.denominator.bit_length())
    if bits * abs(n) > MAX_INT_BITS:
        raise ExprError(f"power result larger than {MAX_INT_BITS} bits")
    return base ** n


def evaluate(node: Node | str, env: Mapping[str, Value]) -> Value:
    """Evaluate an expression (text or parsed tree) with the given names."""
    if isinstance(node, str):
        node = parse(node)
    return _eval(node, env)


def _eval(node: Node, env: Mapping[str, Value]) -> Value:
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "name":
        name = node[1]
        if name in ("true", "false"):
            return name == "true"
        if name not in env:
            valid = ", ".join(sorted(env)) or "(none)"
            raise ExprError(f"unknown name {name!r}; valid names here: {valid}")
        v = env[name]
        return Fraction(v) if isinstance(v, int) and not isinstance(v, bool) else v
    if kind == "neg":
        return -_num(_eval(node[1], env), "unary minus")
    if kind == "not":
        return not _truth(_eval(node[1], env))
    if kind == "and":
        return _truth(_eval(node[1], env)) and _truth(_eval(node[2], env))
    if kind == "or":
        return _truth(_eval(node[1], env)) or _truth(_eval(node[2], env))
    if kind == "cmp":
        return _compare(node[1], _eval(node[2], env), _eval(node[3], env))
    if kind == "bin":
        op = node[1]
        x = _num(_eval(node[2], env), f"left of {op!r}")
        y = _num(_eval(node[3], env), f"right of {op!r}")
        if isinstance(x, float) or isinstance(y, float):
            raise ExprError(f"arithmetic {op!r} on an infinite or NaN output")
        if op == "+":
            return _check_size(x + y)
        if op == "-":
            return _check_size(x - y)
        if op == "*":
            return _check_size(x * y)
        if op == "/":
            if y == 0:
                raise ExprError("division by zero")
            return _check_size(x / y)
        return _check_size(_pow(x, y))
    if kind == "call":
        return _call(node[1], [_eval(a, env) for a in node[2]])
    raise ExprError(f"internal: unknown node {kind}")


def _truth(v: Value) -> bool:
    if isinstance(v, bool):
        return v
    raise ExprError(f"expected a truth value (a comparison), got {v!r}")


def _compare(op: str, a: Value, b: Value) -> bool:
    x = _num(a, f"left of {op!r}")
    y = _num(b, f"right of {op!r}")
    if op == "==":
        return x == y
    if op == "!=":
        return not x == y  # NaN != everything
    if op == "<":
        return x < y
    if op == "<=":
        return x <= y
    if op == ">":
        return x > y
    return x >= y


def _observed(name: str, args: list[Value]) -> Observed:
    if len(args) != 1 or not isinstance(args[0], Observed):
        raise ExprError(f"{name}() takes one observed output (a vector's name)")
    return args[0]


def _call(name: str, args: list[Value]) -> Value:
    if name not in FUNCTIONS:
        raise ExprError(f"unknown function {name!r}; valid functions: {', '.join(FUNCTIONS)}")
    if name in ("min", "max"):
        if not args:
            raise ExprError(f"{name}() needs at least one argument")
        vals = [_num(a, name) for a in args]
        return min(vals) if name == "min" else max(vals)
    if name in ("abs", "floor", "ceil", "log2", "flog2"):
        if len(args) != 1:
            raise ExprError(f"{name}() takes one argument")
        x = _exact(args[0], name)
        if name == "abs":
            return abs(x)
        if name == "floor":
            return Fraction(math.floor(x))
        if name == "ceil":
            return Fraction(math.ceil(x))
        if x <= 0:
            raise ExprError(f"{name}() of non-positive {x}")
        e = x.numerator.bit_length() - x.denominator.bit_length()
        if name == "flog2":
            # floor(log2 x): 2^e <= x < 2^(e+1), with e from the bit lengths (+-1)
            while Fraction(2) ** e > x:
                e -= 1
            while Fraction(2) ** (e + 1) <= x:
                e += 1
            return Fraction(e)
        for cand in (e - 1, e, e + 1):
            if Fraction(2) ** cand == x:
                return Fraction(cand)
        raise ExprError(f"log2() of {x}, which is not a power of two")
    o = _observed(name, args)
    if name == "isnan":
        return o.cls == "nan"
    if name == "isinf":
        return o.cls == "inf"
    if name == "isneg":
        return bool(o.sign) and o.cls != "nan"
    if name == "iszero":
        return o.cls == "zero"
    return Fraction(o.bits)


def to_int(v: Value, what: str) -> int:
    x = _exact(v, what)
    if x.denominator != 1:
        raise ExprError(f"{what}: expected an integer, got {x}")
    return int(x)
