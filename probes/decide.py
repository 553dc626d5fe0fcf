"""Decisions: a probe instance's observed outputs -> an :class:`Outcome` of its feature."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from mmaprobe.models.features import INTEGER_FEATURES
from mmaprobe.models.formats import Format

from . import expr as ex
from .probe import Instance, InstantiationError, Probe, same_value


@dataclass(frozen=True)
class Outcome:
    """A decision: 'inconclusive', a value, or a constraint (one_of / at_least / at_most)."""

    kind: str  # inconclusive, equals, one_of, at_least, at_most
    value: Any = None

    def holds(self, truth: Any) -> bool | None:
        """True/False whether the true value satisfies it; None for inconclusive."""
        if self.kind == "inconclusive":
            return None
        if self.kind == "equals":
            return same_value(truth, self.value)
        if self.kind == "one_of":
            return any(same_value(truth, v) for v in self.value)
        if truth is None:
            # None is 'unbounded' (carry_bits): above every bound, below none
            return self.kind == "at_least"
        if self.kind == "at_least":
            return truth >= self.value
        return truth <= self.value

    def describe(self) -> str:
        if self.kind == "inconclusive":
            return "inconclusive"
        if self.kind == "equals":
            return str(self.value)
        if self.kind == "one_of":
            return "one of " + ", ".join(str(v) for v in self.value)
        return f"{'>=' if self.kind == 'at_least' else '<='} {self.value}"


INCONCLUSIVE = Outcome("inconclusive")


def observe(fmt: Format, bits: int) -> ex.Observed:
    cls, sign, _, _ = fmt.decode(int(bits))
    value = fmt.to_fraction(int(bits)) if cls in ("zero", "finite") else None
    return ex.Observed(int(bits), cls, sign, value)


def decide(inst: Instance, outputs: list[int], fout: Format) -> Outcome:
    """Apply the probe's facts and rules to one instance's observed outputs."""
    probe = inst.probe
    env: dict[str, Any] = dict(inst.env)
    for name, row in inst.rows.items():
        env[name] = observe(fout, outputs[row])
    where: tuple = ("decide",)  # the field being evaluated, for messages
    try:
        for name, node in probe.facts:
            where = ("facts", name)
            env[name] = ex.evaluate(node, env)
        for rule in probe.rules:
            if rule.otherwise:
                where = rule.path + ("otherwise",)
                return _outcome(probe, rule.then, env, where)
            where = rule.path + ("if",)
            if rule.cond is not None and not ex._truth(ex.evaluate(rule.cond, env)):
                continue
            where = rule.path + ("then",)
            if rule.first is None:
                return _outcome(probe, rule.then, env, rule.path + ("then",))
            where = rule.path + ("first",)
            found = None
            others = {n: dict(items) for n, items in inst.sweeps.items()
                      if n != rule.first["sweep"]}
            for i, row in inst.sweeps[rule.first["sweep"]]:
                senv = dict(env)
                senv["i"] = Fraction(i)
                senv["d"] = observe(fout, outputs[row])
                for n, rows in others.items():
                    # another sweep's output at the same index (pairs of sweeps)
                    if i in rows:
                        senv[n] = observe(fout, outputs[rows[i]])
                if ex._truth(ex.evaluate(rule.first["where"], senv)):
                    found = senv
                    break
            if found is not None:
                where = rule.path + ("then",)
                return _outcome(probe, rule.then, found, where)
            if rule.not_found is not None:
                where = rule.path + ("not_found",)
                return _outcome(probe, rule.not_found, env, where)
    except ex.ExprError as e:
        raise InstantiationError(f"probe {probe.id} ({probe.file}:{probe.doc.line(where)}), "
                                 f"decision {'.'.join(map(str, where))}: {e}") from None
    return INCONCLUSIVE


def _outcome(probe: Probe, spec: Any, env: dict[str, Any], path: tuple) -> Outcome:
    if spec == "inconclusive":
        return INCONCLUSIVE
    if isinstance(spec, dict):
        (kind, val), = spec.items()
        if kind == "one_of":
            return Outcome("one_of", tuple(_scalar(probe, v, env) for v in val))
        return Outcome(kind, _scalar(probe, val, env))
    return Outcome("equals", _scalar(probe, spec, env))


def _scalar(probe: Probe, v: Any, env: dict[str, Any]) -> Any:
    if probe.feature in INTEGER_FEATURES and isinstance(v, str) and v not in ("none",):
        return ex.to_int(ex.evaluate(v, env), f"outcome of probe {probe.id}")
    if v == "none" and probe.feature in INTEGER_FEATURES:
        return None
    return v


