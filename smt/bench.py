"""SMT benchmark: wall times of distinguish per preset pair and of robust-probe synthesis.

Prints figures; asserts nothing (goals: median distinguish < 10 s for K <= 16, every pair
< 60 s, synthesis < 5 min).
"""

from __future__ import annotations

import itertools
import statistics
import time
from pathlib import Path

from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.features import feature_value
from mmaprobe.models.presets import list_presets
from mmaprobe.models.space import SPACES_DIR, load_spaces

from .distinguish import distinguish, shape
from .encode import NotEncodable, check_encodable
from .synth import robust_probe

SPACE = SPACES_DIR / "smt-fp16-fp32-k8.yaml"
#: the shipped default candidate space of the fp16 -> fp32 units (K = 4, 8, 16)
DEFAULT_SPACE = SPACES_DIR / "fp16-fp32.yaml"


def _pairs() -> list[tuple[str, str, AccumulatorConfig, AccumulatorConfig]]:
    groups: dict[tuple, list] = {}
    for p in list_presets():
        try:
            check_encodable(p.config)
        except NotEncodable:
            continue
        key = shape(p.config)
        if all(p.config != q.config for q in groups.get(key, [])):
            groups.setdefault(key, []).append(p)
    return [(x.name, y.name, x.config, y.config) for mem in groups.values()
            for x, y in itertools.combinations(mem, 2)]


def bench_smt(timeout: float = 60.0, synth_timeout: float = 300.0, synthesis: bool = True,
              out=print) -> dict:
    """Distinguish every pair of distinct encodable presets sharing formats and K, then
    synthesise robust probes for neab and nfma over the 48-configuration space and the
    default fp16-fp32 space (one probe per K).

    Per feature and space, res[f"synth_{feature}"] (48-configuration space) and
    res[f"synth_{feature}_default"] hold {"seconds", "vectors", "configs", "inconclusive",
    "wrong", "queries", "probes"}; "seconds" is the total over the space's shapes."""
    times: list[tuple[float, int, str]] = []
    for na, nb, a, b in _pairs():
        d = distinguish(a, b, timeout=timeout)
        times.append((d.seconds, a.k, d.status))
        out(f"distinguish {na:26s} {nb:26s} K={a.k:<2d} {d.status:10s} {d.seconds:7.2f} s  "
            f"({d.detail})")
    small = [t for t, k, _ in times if k <= 16]
    res: dict = {"pairs": len(times),
                 "median_k16": statistics.median(small) if small else None,
                 "max": max((t for t, _, _ in times), default=None),
                 "unknown": sum(1 for _, _, s in times if s == "unknown")}
    out(f"distinguish: {len(times)} pairs; median (K <= 16) {res['median_k16']:.2f} s; "
        f"max {res['max']:.2f} s; unknown {res['unknown']}")
    if synthesis:
        for feat in ("neab", "nfma"):
            for path in (SPACE, DEFAULT_SPACE):
                _bench_synthesis(feat, path, synth_timeout, res, out)
    return res


if __name__ == "__main__":
    bench_smt()


def _bench_synthesis(feat: str, path: Path, synth_timeout: float, res: dict, out) -> None:
    """Synthesise a robust probe for feat per shape of the space at path; print and record
    time, vectors, inconclusive and wrong counts (wrong is re-verified on the model)."""
    shapes: dict[tuple, list[AccumulatorConfig]] = {}
    for sp in load_spaces([path]):
        for cfg in sp.configs:
            shapes.setdefault((cfg.in_format, cfg.out_format, cfg.k), []).append(cfg)
    fig = {"seconds": 0.0, "vectors": 0, "configs": 0, "inconclusive": 0, "wrong": 0,
           "queries": 0, "probes": 0, "timeouts": 0}
    for key, cfgs in shapes.items():
        t0 = time.monotonic()
        p = robust_probe(feat, cfgs, lambda c, f=feat: feature_value(c, f),
                         timeout=synth_timeout)
        dt = time.monotonic() - t0
        fig["seconds"] += dt
        fig["configs"] += len(cfgs)
        if p is None:
            fig["timeouts"] += 1
            fig["inconclusive"] += len(cfgs)
            out(f"synthesize {feat:5s} {path.stem} K={key[2]:<2d}: no vector after {dt:.1f} s "
                f"({len(cfgs)} configurations)")
            continue
        fig["probes"] += 1
        fig["vectors"] += len(p.vectors)
        fig["inconclusive"] += p.inconclusive
        fig["wrong"] += p.wrong
        fig["queries"] += p.rounds
        out(f"synthesize {feat:5s} {path.stem} K={key[2]:<2d}: {dt:6.1f} s, "
            f"{len(p.vectors)} vector(s), {len(cfgs)} configurations, {p.inconclusive} "
            f"inconclusive, {p.wrong} wrong, {p.rounds} solver queries, "
            f"{p.pool_rows} pool rows ({p.method})")
    name = f"synth_{feat}" if path == SPACE else f"synth_{feat}_default"
    res[name] = fig
    out(f"synthesize {feat:5s} {path.stem}: {fig['seconds']:.1f} s total, {fig['vectors']} "
        f"vector(s) in {fig['probes']} probe(s), {fig['configs']} configurations, "
        f"{fig['inconclusive']} inconclusive, {fig['wrong']} wrong")
