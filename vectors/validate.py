"""Bit-exact validation of presets against recorded GPU outputs.

Two layouts: the MATLAB-tensor-core ``model_validation`` one (``<GPU>/<informat>/``) and one
file per PTX instruction (``<DEVICE>-ptx/`` folders of rows files, vectors/rowsfile.py).  A
combination without a preset is a failing row ("no preset for this shape"), not an abort.
"""

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

from .matlab_tc import (
    BINARY32,
    FOLDER_FORMATS,
    convert_exact,
    find_datasets,
    load_dataset,
    output_files,
)
from .rowsfile import read_rows

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
    instruction: str = ""  # the PTX instruction (per-instruction files)
    error: str = ""        # why no preset could be run ("no preset for this shape: ...")

    @property
    def failed(self) -> bool:
        return bool(self.mismatches or self.error)

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
    cands = [p for p in presets_for(gpu, in_format, out_format, k)
             if p.config.b_format is None and p.config.scale_format is None]
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


def choose_ptx_preset(device: str, instruction: str, a_format: str, b_format: str,
                      c_format: str, d_format: str, k: int) -> Preset:
    """The preset of one PTX instruction on a device: its formats and K; for fp8 mma.sync on
    Hopper and Blackwell the interleaved '-mma' presets ([KM25] Sec. IV-A5), for wgmma the
    others; the plainest name wins.  InputError "no preset for this shape" otherwise."""
    family = instruction.split(".")[0]
    cands = [p for p in presets_for(device) if p.config.scale_format is None and (
        p.config.in_format, p.config.b_fmt, p.config.c_format, p.config.out_format,
        p.config.k) == (a_format, b_format, c_format, d_format, k)]
    if a_format in FP8 or b_format in FP8:
        if family == "mma":
            cands = [p for p in cands if p.name.endswith("-mma") or "-mma-" in p.name] or cands
        else:
            cands = [p for p in cands if "-mma" not in p.name]
    if not cands:
        raise InputError(f"no preset for this shape: {device} {instruction} ({a_format} x "
                         f"{b_format}, c {c_format}, d {d_format}, K={k})")
    return min(cands, key=lambda p: (len(p.name), p.name))


def _first(show: int, bad: np.ndarray, rows: list[tuple[str, np.ndarray, int]],
           model: np.ndarray, hw: np.ndarray, width: int) -> list[dict]:
    out = []
    for i in bad[:show]:
        rec = {"row": int(i) + 1}
        for name, arr, w in rows:
            rec[name] = ([f"{int(x):0{w}x}" for x in arr[i]] if arr.ndim == 2
                         else f"{int(arr[i]):0{w}x}")
        rec["model"] = f"{int(model[i]):0{width}x}"
        rec["hardware"] = f"{int(hw[i]):0{width}x}"
        out.append(rec)
    return out


#: the suffix of a folder of per-instruction rows files; the device is the name before it
PTX_FOLDER = "-ptx"


def find_ptx_folders(root: Path) -> list[tuple[str, Path]]:
    """(device, folder) for every ``<DEVICE>-ptx`` folder in root (or root itself)."""
    root = Path(root)
    folders = [root] if root.name.endswith(PTX_FOLDER) else sorted(
        p for p in root.iterdir() if p.is_dir() and p.name.endswith(PTX_FOLDER))
    return [(f.name[:-len(PTX_FOLDER)], f) for f in folders]


def _overridden(preset: Preset, overrides: dict | None) -> tuple[AccumulatorConfig, str]:
    """The preset's configuration with ``overrides`` set, and its name ('NAME+f=v,...')."""
    if not overrides:
        return preset.config, preset.name
    cfg = AccumulatorConfig.from_dict({**preset.config.to_dict(), **overrides},
                                      f"--set on {preset.name}")
    return cfg, preset.name + "+" + ",".join(f"{k}={v}" for k, v in overrides.items())


def validate_ptx(root: Path, devices: list[str] | None = None, limit: int | None = None,
                 show: int = 3, progress: Callable[[str], None] | None = None,
                 overrides: dict | None = None) -> list[Result]:
    """Every per-instruction file of the ``<DEVICE>-ptx`` folders in root, bit for bit."""
    results = []
    wanted = None if not devices else {d.lower() for d in devices}
    for device, folder in find_ptx_folders(root):
        if wanted and device.lower() not in wanted:
            continue
        for path in sorted(folder.glob("*.txt")):
            f = read_rows(path)
            a_n, b_n, c_n, d_n = f.formats
            label = a_n if b_n == a_n else f"{a_n}x{b_n}"
            n = len(f.c) if not limit else min(limit, len(f.c))
            try:
                preset = choose_ptx_preset(device, f.instruction, a_n, b_n, c_n, d_n, f.k)
            except InputError as e:
                results.append(Result(device, label, d_n, "", f.k, n, 0, [],
                                      str(path), f.instruction, str(e)))
                continue
            cfg, name = _overridden(preset, overrides)
            if progress:
                progress(f"{device} {f.instruction}: {n} rows on {name}")
            d = evaluate(cfg, f.a[:n], f.b[:n], f.c[:n])
            bad = np.nonzero(d != f.d[:n])[0]
            fa, fb, fc, fd = (get_format(x) for x in f.formats)
            first = _first(show, bad, [("a", f.a, (fa.width + 3) // 4),
                                       ("b", f.b, (fb.width + 3) // 4),
                                       ("c", f.c, (fc.width + 3) // 4)],
                           d, f.d, (fd.width + 3) // 4)
            results.append(Result(device, label, d_n, name, f.k, n, int(len(bad)),
                                  first, str(path), f.instruction))
    return results


def validate(root: Path, gpus: list[str] | None = None, limit: int | None = None,
             show: int = 3, progress: Callable[[str], None] | None = None,
             overrides: dict | None = None) -> list[Result]:
    """Both layouts below root: MATLAB-tensor-core datasets and ``<DEVICE>-ptx`` folders,
    every recorded combination against its preset.  ``overrides`` changes configuration
    fields of every chosen preset (a claimed feature), which is then named
    'NAME+field=value,...'."""
    if show < 0:
        raise InputError(f"--show must be >= 0, got {show}")
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    ptx = find_ptx_folders(root)
    ptx_devices = {d.lower() for d, _ in ptx}
    gdirs = [] if root.name.endswith("-ptx") else [
        p.name for p in root.iterdir() if p.is_dir() and not p.name.endswith("-ptx")]
    if gpus:
        present = {g.lower() for g in gdirs} | ptx_devices
        missing = {g.lower() for g in gpus} - present
        if missing:
            raise InputError(f"{root}: no data for GPU(s) {', '.join(sorted(missing))}; "
                             f"present: {', '.join(sorted(present)) or 'none'}")
    want_matlab = None if not gpus else [g for g in gpus if g.lower() in {
        x.lower() for x in gdirs}]
    matlab = []
    if gdirs and (want_matlab is None or want_matlab):
        matlab = find_datasets(root, want_matlab)
    elif not ptx:
        matlab = find_datasets(root, gpus)  # says what is missing
    results = []
    for gpu, folder, path in matlab:
        if not all(part in FOLDER_FORMATS for part in folder.lower().split("x")):
            raise InputError(f"{path}: unknown input format folder {folder!r}; expected one "
                             f"of {', '.join(FOLDER_FORMATS)}")
        outs = output_files(path, gpu)
        if not outs:
            raise InputError(f"{path}: no output file d_{gpu}_fp32.txt or d_{gpu}_fp16.txt "
                             f"(a folder of the MATLAB-tensor-core layout needs one)")
        for out in outs:
            ds = load_dataset(gpu, folder, path, out, limit)
            try:
                preset = choose_preset(gpu, ds.in_format, ds.out_format, ds.k)
            except InputError as e:
                results.append(Result(gpu, ds.in_format, ds.out_format, "", ds.k, ds.rows, 0,
                                      [], str(path), "", f"no preset for this shape: {e}"))
                continue
            cfg, name = _overridden(preset, overrides)
            if progress:
                progress(f"{gpu}/{folder} -> {out}: {ds.rows} rows on {name}")
            fin, fout = get_format(cfg.in_format), get_format(cfg.out_format)
            a = convert_exact(ds.a, BINARY32, fin, path / f"a_{gpu}_{folder}.txt",
                              lines=ds.lines.get("a"))
            b = convert_exact(ds.b, BINARY32, fin, path / f"b_{gpu}_{folder}.txt",
                              lines=ds.lines.get("b"))
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
    results += validate_ptx(root, gpus, limit, show, progress, overrides)
    return results
