"""Candidate spaces for suite / infer / identify: a --space FILE, or the default neighbourhood.

The default neighbourhood (neighbourhood.yaml beside this module) is a union of cartesian
families of configuration fields for one format triple and K, plus every preset with those
formats and K, so that the devices we know are always candidates.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mmaprobe.models.config import AccumulatorConfig, ConfigError
from mmaprobe.models.errors import InputError
from mmaprobe.models.formats import FormatError, get_format
from mmaprobe.models.presets import Preset, list_presets

NEIGHBOURHOOD_FILE = Path(__file__).resolve().parent / "neighbourhood.yaml"


@dataclass
class CandidateSpace:
    id: str
    source: str
    configs: list[AccumulatorConfig]
    in_format: str
    c_format: str
    out_format: str
    k: int

    def describe(self) -> str:
        return f"{self.id} ({len(self.configs)} configurations, {self.source})"


def canonical_formats(fin: str, fc: str | None, fout: str, k: int) -> tuple[str, str, str, int]:
    """Canonical format names; c defaults to the output format's accumulator (binary16 ->
    binary16, else binary32 or binary64 for binary64 outputs)."""
    try:
        fi = get_format(fin).name
        fo = get_format(fout).name
        fcn = get_format(fc).name if fc else fo
    except FormatError as e:
        raise InputError(str(e)) from None
    if not isinstance(k, int) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    return fi, fcn, fo, k


def presets_with(fin: str, fc: str, fout: str, k: int) -> list[Preset]:
    return [p for p in list_presets() if p.config.in_format == fin and p.config.c_format == fc
            and p.config.out_format == fout and p.config.k == k]


def _nfma_values(spec: Any, k: int) -> list[Any]:
    divs = [d for d in range(1, k + 1) if k % d == 0]
    table = {"divisors": divs, "divisors_ge2": [d for d in divs if d >= 2],
             "pow2_divisors": [d for d in divs if d & (d - 1) == 0],
             "k": [k], "half": [k // 2] if k % 2 == 0 else []}
    if isinstance(spec, str):
        if spec not in table:
            raise InputError(f"{NEIGHBOURHOOD_FILE}: unknown nfma keyword {spec!r}")
        return table[spec]
    out: list[Any] = []
    for v in spec:
        out.extend(table[v] if isinstance(v, str) else [v])
    return out


def neighbourhood(fin: str, fc: str, fout: str, k: int) -> CandidateSpace:
    """The default candidate space around formats (fin, fc, fout) and K."""
    data = yaml.safe_load(NEIGHBOURHOOD_FILE.read_text())
    configs: list[AccumulatorConfig] = []
    seen: set[AccumulatorConfig] = set()
    for fam in data["families"]:
        only = fam.get("only_out")
        if only and fout not in only:
            continue
        vary = dict(fam.get("vary", {}))
        if "nfma" in vary:
            vary["nfma"] = _nfma_values(vary["nfma"], k)
        names = list(vary)
        for combo in itertools.product(*(vary[n] for n in names)):
            values: dict[str, Any] = dict(fam.get("fixed", {}))
            values.update(zip(names, combo))
            values.update({"in_format": fin, "c_format": fc, "out_format": fout, "k": k})
            try:
                cfg = AccumulatorConfig.from_dict(values)
            except ConfigError:
                continue
            if cfg not in seen:
                seen.add(cfg)
                configs.append(cfg)
    for p in presets_with(fin, fc, fout, k):
        if p.config not in seen:
            seen.add(p.config)
            configs.append(p.config)
    return CandidateSpace(f"neighbourhood-{fin}-{fout}-k{k}", "default neighbourhood "
                          f"({NEIGHBOURHOOD_FILE.name})", configs, fin, fc, fout, k)


def load_space(path: str | Path, fin: str, fc: str, fout: str, k: int) -> CandidateSpace:
    """The configurations of a space file (probes/README.md format) with these formats and K."""
    from mmaprobe.probes.space import load_spaces

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: space file not found")
    spaces = load_spaces([p])
    configs: list[AccumulatorConfig] = []
    seen: set[AccumulatorConfig] = set()
    ids = []
    for sp in spaces:
        ids.append(sp.id)
        for cfg in sp.configs:
            if (cfg.in_format, cfg.c_format, cfg.out_format, cfg.k) == (fin, fc, fout, k) \
                    and cfg not in seen:
                seen.add(cfg)
                configs.append(cfg)
    if not configs:
        raise InputError(f"{p}: no configuration of space(s) {', '.join(ids)} has formats "
                         f"{fin}/{fc}->{fout} and k={k}")
    return CandidateSpace("+".join(ids), str(p), configs, fin, fc, fout, k)


def get_space(path: str | Path | None, fin: str, fc: str, fout: str, k: int) -> CandidateSpace:
    if path:
        return load_space(path, fin, fc, fout, k)
    return neighbourhood(fin, fc, fout, k)
