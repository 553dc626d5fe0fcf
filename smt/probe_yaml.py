"""Synthesised robust probes written in the probe language (probes/README.md).

The vectors are concrete bit patterns and the decision table maps the observed output bit
patterns of the first n vectors (n: the depth at which the configuration's class became
pure during synthesis) to a feature value; anything else is inconclusive.
"""

from __future__ import annotations

from typing import Any

import yaml

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.formats import get_format

from .synth import RobustProbe


def _hex(bits: int, width: int) -> str:
    return f"0x{bits:0{(width + 3) // 4}x}"


def _value(v: Any) -> Any:
    if v is None:
        return "none"
    if isinstance(v, bool) or isinstance(v, int):
        return v
    return str(v)


def probe_document(probe: RobustProbe, cfg: AccumulatorConfig, space_id: str,
                   algorithms: list[str], verified_on: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The YAML document (as a mapping) of a synthesised probe for cfg's formats and k.

    ``verified_on`` (the space's fixed/vary/families/exclude) limits the probe to the
    configurations it was verified on: `mmaprobe check` counts every other one not
    applicable rather than trusting the table outside the space."""
    fin, fc = get_format(cfg.in_format), get_format(cfg.c_format)
    fout = get_format(cfg.out_format)
    vectors = []
    for n, v in enumerate(probe.vectors):
        vectors.append({"name": f"v{n}",
                        "a": [_hex(x, fin.width) for x in v.a],
                        "b": [_hex(x, fin.width) for x in v.b],
                        "c": _hex(v.c, fc.width)})
    decide: list[dict[str, Any]] = []
    for key, value in sorted(probe.table.items(), key=lambda kv: str(kv[1])):
        cond = " and ".join(f"bits(v{n}) == {_hex(o, fout.width)}" for n, o in enumerate(key))
        decide.append({"if": cond, "then": _value(value)})
    decide.append({"otherwise": "inconclusive"})
    slug = f"{cfg.in_format}-{cfg.c_format}-{cfg.out_format}-k{cfg.k}"
    return {
        "id": f"smt-{probe.feature.replace('_', '-')}-{slug}".lower(),
        "title": f"decides {probe.feature} on space {space_id} (synthesised, "
                 f"{len(probe.vectors)} vector{'s' if len(probe.vectors) > 1 else ''})",
        "feature": probe.feature,
        "source": f"mmaprobe synthesize --feature {probe.feature} (space {space_id}, "
                  f"{probe.configs} configurations)",
        "formats": {"in": [cfg.in_format], "out": [cfg.out_format], "c": [cfg.c_format]},
        "k": [cfg.k],
        "when": {"algorithm": sorted(algorithms)},
        **({"verified_on": verified_on} if verified_on else {}),
        "may_be_inconclusive": probe.inconclusive > 0,
        "vectors": vectors,
        "decide": decide,
    }


def dump_probes(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=None, width=100)
