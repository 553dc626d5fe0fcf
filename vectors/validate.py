"""Bit-exact validation of presets against recorded GPU outputs (MATLAB-tensor-core layout)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError
from mmaprobe.models.formats import get_format
from mmaprobe.models.presets import Preset, list_presets, presets_for

from .matlab_tc import BINARY32, convert_exact, find_datasets, load_dataset, output_files

FP8 = ("e4m3", "e5m2")


@dataclass
class Result:
    gpu: str
    in_format: str
    out_format: str
    preset: str
    k: int
    rows: int
    mismatches: int
    first: list[dict] = field(default_factory=list)
    path: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def recorded_with_mma_sync(gpu: str, in_format: str, out_format: str) -> bool:
    """The dataset's fp8 -> fp16 rows come from mma.sync m16n8k32 (its CUDA source
    mma_fp8_output_fp16.cu), not wgmma: on Hopper that is two chained fp16 HMMAs over
    interleaved pairs with c added last ([KM25] Sec. IV-A5)."""
    if in_format not in FP8:
        return False
    if gpu.upper() == "B200":  # [KM25] Sec. IV-A6: B200 fp8 was tested only through mma
        return True
    return out_format == "binary16" and gpu.upper() in ("H100", "H200")


def choose_preset(gpu: str, in_format: str, out_format: str, k: int) -> Preset:
    """The preset describing the dataset's instruction (the plainest name wins)."""
    cands = presets_for(gpu, in_format, out_format, k)
    if recorded_with_mma_sync(gpu, in_format, out_format):
        cands = [p for p in cands if p.name.endswith("-mma")] or cands
    if not cands:
        known = sorted({p.device for p in list_presets()})
        if gpu.lower() not in {d.lower() for d in known}:
            raise InputError(f"no presets for GPU {gpu!r}; known devices: {', '.join(known)}")
        have = [f"{p.name} (k={p.config.k})" for p in presets_for(gpu)]
        raise InputError(f"no {gpu} preset for {in_format} -> {out_format} with k={k}; "
                         f"{gpu} presets: {', '.join(have)}")
    return min(cands, key=lambda p: (len(p.name), p.name))


def dataset_c(gpu: str, in_format: str, out_format: str, c32: np.ndarray,
              c_format: str) -> np.ndarray:
    """c as the recording used it (shared/hwdata/README.md)."""
    if gpu.upper() in ("H100", "H200") and in_format in FP8 and out_format == "binary32":
        return np.zeros_like(c32)  # recorded with wgmma and C = 0
    # where the output is fp16, c was rounded to fp16 (RNE) before the call
    return convert_exact(c32, BINARY32, get_format(c_format), mode="rne")


def validate(root: Path, gpus: list[str] | None = None, limit: int | None = None,
             show: int = 3, progress: Callable[[str], None] | None = None,
             overrides: dict | None = None) -> list[Result]:
    """Every recorded combination against its preset; ``overrides`` changes configuration
    fields of every chosen preset (a claimed feature), which is then named
    'NAME+field=value,...'."""
    results = []
    for gpu, folder, path in find_datasets(root, gpus):
        for out in output_files(path, gpu):
            ds = load_dataset(gpu, folder, path, out, limit)
            preset = choose_preset(gpu, ds.in_format, ds.out_format, ds.k)
            cfg, name = preset.config, preset.name
            if overrides:
                cfg = AccumulatorConfig.from_dict({**cfg.to_dict(), **overrides},
                                                  f"--set on {preset.name}")
                name += "+" + ",".join(f"{k}={v}" for k, v in overrides.items())
            if progress:
                progress(f"{gpu}/{folder} -> {out}: {ds.rows} rows on {name}")
            fin, fout = get_format(cfg.in_format), get_format(cfg.out_format)
            a = convert_exact(ds.a, BINARY32, fin, path / f"a_{gpu}_{folder}.txt")
            b = convert_exact(ds.b, BINARY32, fin, path / f"b_{gpu}_{folder}.txt")
            c = dataset_c(gpu, ds.in_format, ds.out_format, ds.c, cfg.c_format)
            d = evaluate(cfg, a, b, c)
            d32 = d if fout.name == "binary32" else convert_exact(d, fout, BINARY32)
            if fout.name != "binary32":
                # fp16 NaNs were widened by the recording harness; compare NaN-ness there
                nan_m = np.array([BINARY32.decode(int(x))[0] == "nan" for x in d32])
                nan_h = np.array([BINARY32.decode(int(x))[0] == "nan" for x in ds.d])
                ok = (d32 == ds.d) | (nan_m & nan_h)
            else:
                ok = d32 == ds.d
            bad = np.nonzero(~ok)[0]
            first = []
            for i in bad[:show]:
                first.append({"row": int(i) + 1,
                              "a": [f"{int(x):08x}" for x in ds.a[i]],
                              "b": [f"{int(x):08x}" for x in ds.b[i]],
                              "c": f"{int(ds.c[i]):08x}",
                              "model": f"{int(d32[i]):08x}", "hardware": f"{int(ds.d[i]):08x}"})
            results.append(Result(gpu, ds.in_format, ds.out_format, name, ds.k, ds.rows,
                                  int(len(bad)), first, str(path)))
    return results
