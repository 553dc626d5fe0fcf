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

from .encode import NotEncodable, check_encodable
from .synth import distinguish, robust_probe

SPACE = Path(__file__).parent / "spaces" / "fp16-fp32-k8.yaml"


def _pairs() -> list[tuple[str, str, AccumulatorConfig, AccumulatorConfig]]:
    from mmaprobe.models.presets import list_presets

    groups: dict[tuple, list] = {}
    for p in list_presets():
        try:
            check_encodable(p.config)
        except NotEncodable:
            continue
        key = (p.config.in_format, p.config.c_format, p.config.out_format, p.config.k)
        if all(p.config != q.config for q in groups.get(key, [])):
            groups.setdefault(key, []).append(p)
    return [(x.name, y.name, x.config, y.config) for mem in groups.values()
            for x, y in itertools.combinations(mem, 2)]


def bench_smt(timeout: float = 60.0, synth_timeout: float = 300.0, synthesis: bool = True,
              out=print) -> dict:
    """Distinguish every pair of distinct encodable presets sharing formats and K, then
    synthesise robust probes for neab and nfma over a 48-configuration space."""
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
        from mmaprobe.probes.features import feature_value
        from mmaprobe.probes.space import load_spaces

        space = load_spaces([SPACE])[0].configs
        for feat in ("neab", "nfma"):
            t0 = time.monotonic()
            p = robust_probe(feat, space, lambda c, f=feat: feature_value(c, f),
                             timeout=synth_timeout)
            dt = time.monotonic() - t0
            res[f"synth_{feat}"] = dt
            if p is None:
                out(f"synthesize {feat}: timeout after {dt:.1f} s ({len(space)} configurations)")
            else:
                out(f"synthesize {feat}: {dt:.1f} s, {len(p.vectors)} vector(s) over "
                    f"{len(space)} configurations, {p.inconclusive} inconclusive ({p.method})")
    return res


if __name__ == "__main__":
    bench_smt()
