"""Devices: anything that maps rows (a, b, c) of bit patterns to outputs d.

One spec names a device in every flow (``run``, ``identify``, ``survey``, ``validate``):

====================  =================================================================
``preset:NAME``       the numpy model of a preset (a virtual device)
``config:FILE``       the numpy model of an accumulator configuration YAML
``cuda:INSTR``        a real instruction on the local NVIDIA GPU (``mmaprobe devices``
                      lists them), through the CUDA harness the package ships
``exec:CMD``          any external harness (AMD/HIP, a simulator, a remote runner): see
                      :class:`ExecDevice` for the file protocol
``recorded:FILE``     outputs someone recorded, as a rows file (shared/hwdata/H100-ptx
                      layout): the device answers only the rows it holds
====================  =================================================================

A :class:`Device` knows its formats and K when it can (every kind but ``exec:``, which takes
them from the flow) and runs whole batches: ``device.run(a, b, c)`` with a, b of shape
(N, k) and c of shape (N,).  A device whose b has a format of its own, or that takes scale
factors, says so in ``operands`` (b's format, scale_format, scale_block); its scale factors
travel packed after the k values of a and b (``AccumulatorConfig.row_width``).

>>> dev = parse_device("preset:h100-fp16-fp32")
>>> dev.name, dev.shape
('preset:h100-fp16-fp32', ('binary16', 'binary32', 'binary32', 16))
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from mmaprobe.models.accumulator import evaluate
from mmaprobe.models.config import AccumulatorConfig
from mmaprobe.models.errors import InputError, MmaprobeError
from mmaprobe.models.formats import FormatError, get_format
from mmaprobe.models.presets import get_preset
from mmaprobe.models.space import canonical_shape

from . import cuda
from .rowsfile import read_rows
from .suitefile import Suite, read_observed, write_suite

Shape = tuple[str, str, str, int]
#: device kinds and how a spec of each is written
KINDS = {"preset": "preset:NAME", "config": "config:FILE", "cuda": "cuda:INSTR",
         "exec": "exec:CMD", "recorded": "recorded:FILE"}
#: seconds an external harness may take for one batch (``--device-timeout``)
EXEC_TIMEOUT = 600.0


class DeviceError(MmaprobeError):
    """A device that cannot run, or that answered something other than outputs."""


@dataclass
class Device:
    """A named device: ``run(a, b, c) -> d`` on bit-pattern arrays, in batches.

    ``shape`` is (in, c, out, k), or None when the flow must say (``exec:``); ``config`` is
    set for virtual devices; ``rows`` holds the inputs a recorded device can answer.
    """

    name: str
    shape: Shape | None
    runner: Callable[[Shape, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    config: AccumulatorConfig | None = None
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    calls: int = field(default=0, compare=False)
    rows_run: int = field(default=0, compare=False)
    operands: tuple[str, str | None, int | None] | None = None  # b format, scale fmt, block

    def run(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        if self.shape is None:
            raise DeviceError(f"{self.name}: formats and K unknown; the flow must give them "
                              f"(e.g. --in/--out/--k)")
        a, b, c = (np.asarray(x, dtype=np.uint64) for x in (a, b, c))
        k = self.shape[3]
        sblock = self.operands[2] if self.operands else None
        k = k + (k // sblock if sblock else 0)  # packed scale factors
        if a.ndim != 2 or a.shape[1] != k or b.shape != a.shape or c.shape != (a.shape[0],):
            raise InputError(f"{self.name}: rows must have shapes (N, {k}), (N, {k}), (N,); "
                             f"got {a.shape}, {b.shape}, {c.shape}")
        d = np.asarray(self.runner(self.shape, a, b, c), dtype=np.uint64).reshape(-1)
        if d.shape != (a.shape[0],):
            raise DeviceError(f"{self.name}: answered {d.size} outputs for {a.shape[0]} rows")
        self.calls += 1
        self.rows_run += a.shape[0]
        return d

    __call__ = run

    def with_shape(self, shape: Shape,
                   operands: tuple[str, str | None, int | None] | None = None) -> Device:
        """This device for rows of ``shape`` (an error if it has another).  A device that
        knows no shape (``exec:``) also takes the flow's ``operands`` (b's format and block
        scaling), and passes them on to its harness."""
        if self.shape is None:
            ops = None if operands is None or tuple(operands) == (shape[0], None, None) \
                else tuple(operands)
            runner = self.runner
            if isinstance(runner, ExecDevice):
                runner = replace(runner, operands=ops)
            return replace(self, shape=tuple(shape), operands=ops, runner=runner)
        self.check_shape(shape, self.name, operands)
        return self

    def check_shape(self, shape: Shape, what: str,
                    operands: tuple[str, str | None, int | None] | None = None) -> None:
        """An InputError when the device's formats and K differ from ``shape``, or, with
        ``operands`` given, its b format and block scaling from them."""
        if self.shape is not None and tuple(shape) != tuple(self.shape):
            raise InputError(f"{what}: formats/k {tuple(shape)} do not match the device "
                             f"{self.name} {tuple(self.shape)}")
        if operands is None:
            return
        mine = self.operands or (shape[0], None, None)
        theirs = operands
        if tuple(mine) != tuple(theirs):
            raise InputError(f"{what}: b format and block scaling ({_ops(theirs)}) do not "
                             f"match the device {self.name} ({_ops(mine)})")


def _ops(ops: tuple[str, str | None, int | None]) -> str:
    b, sf, sb = ops
    return f"b {b}, " + (f"scale factors {sf} per {sb} products" if sf else "no scale factors")


def virtual_device(cfg: AccumulatorConfig, name: str | None = None) -> Device:
    """A device backed by the numpy model of cfg."""
    return Device(name or f"config:{cfg.describe()}",
                  (cfg.in_format, cfg.c_format, cfg.out_format, cfg.k),
                  lambda shape, a, b, c: evaluate(cfg, a, b, c), cfg,
                  operands=cfg.operands)


# -- exec: ------------------------------------------------------------------------------------

@dataclass
class ExecDevice:
    """``exec:CMD``: an external harness, one process per batch.

    Protocol: mmaprobe writes the rows as a suite file (JSON, ``schema: mmaprobe-suite``,
    version 1: ``formats`` {in, c, out}, ``k``, and ``vectors``, each with an ``id`` and
    hex bit patterns ``a`` (K), ``b`` (K), ``c``; where b has a format of its own,
    ``formats.b``; with block scaling, ``formats.scale``, ``scale_block`` and each vector's
    ``scale_a`` and ``scale_b``) to a temporary file IN and runs
    ``CMD IN OUT`` (CMD split like a shell command line, no shell).  The harness writes an
    observed file (JSON, ``schema: mmaprobe-observed``, version 1, the same ``formats`` and
    ``k``, and ``outputs``: one {``id``, ``d``} per vector, d a hex bit pattern) to OUT and
    exits 0.  A nonzero exit, a timeout, a missing or malformed OUT, or outputs that do not
    match the vectors one for one are errors naming the command; the temporary files are
    always removed.  The README has a complete example harness.
    """

    command: str
    timeout: float = EXEC_TIMEOUT
    operands: tuple[str, str | None, int | None] | None = None  # b format, scale fmt, block

    def argv(self) -> list[str]:
        try:
            argv = shlex.split(self.command)
        except ValueError as e:
            raise InputError(f"exec:{self.command}: cannot split the command: {e}") from None
        if not argv:
            raise InputError("exec: needs a command, e.g. exec:./harness or "
                             "exec:'python3 sim.py --gpu 0'")
        return argv

    def __call__(self, shape: Shape, a: np.ndarray, b: np.ndarray, c: np.ndarray
                 ) -> np.ndarray:
        fin, fc, fout, k = shape
        ids = [f"row.{i:07d}" for i in range(len(c))]
        b_fmt, scale_format, scale_block = self.operands or (None, None, None)
        suite = Suite(fin, fc, fout, k, ids, a, b, c, [{"kind": "row"}] * len(c),
                      b_format=b_fmt, scale_format=scale_format, scale_block=scale_block)
        argv = self.argv()
        with tempfile.TemporaryDirectory(prefix="mmaprobe-exec-") as tmp:
            src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
            write_suite(src, suite)
            self._run(argv + [str(src), str(dst)])
            if not dst.is_file():
                raise DeviceError(f"exec:{self.command}: exited 0 but wrote no output file")
            try:
                obs = read_observed(dst, suite, "the rows it was given")
            except InputError as e:
                raise DeviceError(f"exec:{self.command}: bad output: "
                                  f"{str(e).replace(str(dst), 'OUT')}") from None
        return obs.d

    def _run(self, argv: list[str]) -> None:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            raise DeviceError(f"exec:{self.command}: cannot start {argv[0]!r}: "
                              f"{e.strerror or e}") from None
        try:
            _, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise DeviceError(f"exec:{self.command}: no answer within {self.timeout:g} s "
                              f"(killed; raise --device-timeout)") from None
        except BaseException:
            _kill_group(proc)
            raise
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-5:]
            raise DeviceError(f"exec:{self.command}: exited with code {proc.returncode}"
                              + ("; last stderr lines:\n  " + "\n  ".join(tail) if tail
                                 else " (no stderr)"))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, ProcessLookupError):
        pass
    proc.wait()


# -- cuda: and recorded: ----------------------------------------------------------------------

def cuda_device(name: str) -> Device:
    """``cuda:INSTR``: the instruction on the local GPU (discovered and built on first use)."""
    instr = cuda.get_instruction(name)
    harness = cuda.local_harness()
    if not harness.supported(instr):
        raise InputError(f"cuda:{instr.name}: not supported by this GPU "
                         f"({harness.gpu.name if harness.gpu else 'unknown'}); "
                         f"`mmaprobe devices` lists the ones it has")
    shape = (instr.a_format, instr.c_format, instr.out_format, instr.K)
    return Device(f"cuda:{instr.name}", shape,
                  lambda shp, a, b, c: harness.run_rows(instr, a, b, c),
                  operands=(instr.b_format, None, None))


def recorded_device(path: str) -> Device:
    """``recorded:FILE``: a rows file's outputs, for exactly the rows it holds."""
    rec = read_rows(path)
    fa, fb, fc, fd = rec.formats
    table: dict[bytes, int] = {}
    for i in range(len(rec.c)):
        table.setdefault(_key(rec.a[i], rec.b[i], rec.c[i]), int(rec.d[i]))

    def answer(shape: Shape, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        out = np.empty(len(c), dtype=np.uint64)
        for i in range(len(c)):
            d = table.get(_key(a[i], b[i], c[i]))
            if d is None:
                raise DeviceError(f"recorded:{path}: row {i} is not in the recording")
            out[i] = d
        return out

    return Device(f"recorded:{path}", (fa, fc, fd, rec.k), answer,
                  rows=(rec.a, rec.b, rec.c), operands=(fb, None, None))


def _key(a: np.ndarray, b: np.ndarray, c) -> bytes:
    return (np.asarray(a, np.uint64).tobytes() + np.asarray(b, np.uint64).tobytes()
            + np.uint64(c).tobytes())


# -- specs --------------------------------------------------------------------------------------

def parse_device(spec: str, timeout: float = EXEC_TIMEOUT) -> Device:
    """The device a spec names (see the module docstring)."""
    kind, sep, rest = str(spec).partition(":")
    if not sep or not rest or kind not in KINDS:
        raise InputError(f"device {spec!r}: expected one of {', '.join(KINDS.values())}")
    if kind == "preset":
        p = get_preset(rest)
        return virtual_device(p.config, f"preset:{p.name}")
    if kind == "config":
        return virtual_device(AccumulatorConfig.load(rest), f"config:{rest}")
    if kind == "cuda":
        return cuda_device(rest)
    if kind == "recorded":
        return recorded_device(rest)
    if not (timeout > 0):
        raise InputError(f"--device-timeout must be a positive number of seconds, got "
                         f"{timeout}")
    ex = ExecDevice(rest, timeout)
    ex.argv()
    return Device(f"exec:{rest}", None, ex)


def device_from_args(args) -> Device:
    """The device of --preset NAME, --config FILE or --device SPEC (exactly one given),
    with the shape of --in/--c/--out/--k where the flow has them and the device lacks it."""
    given = [(k, getattr(args, k, None)) for k in ("preset", "config", "device")]
    given = [(k, v) for k, v in given if v]
    if len(given) != 1:
        raise InputError("give exactly one of --preset NAME, --config FILE, --device SPEC")
    kind, value = given[0]
    dev = parse_device(value if kind == "device" else f"{kind}:{value}",
                       getattr(args, "device_timeout", EXEC_TIMEOUT))
    fin, fout, k = (getattr(args, n, None) for n in ("fin", "fout", "k"))
    if not (fin or fout or k) and any(getattr(args, n, None) for n in (
            "fb", "scale_format", "scale_block")):
        raise InputError("--b, --scale and --scale-block describe an exec: device's operands: "
                         "give them with --in, --out and --k")
    if fin or fout or k:
        if not (fin and fout and k):
            raise InputError("--in, --out and --k go together (the device's formats and K)")
        shape = canonical_shape(fin, getattr(args, "fc", None), fout, k)
        dev = dev.with_shape(shape, operands_from_args(args, shape[0], shape[3]))
    return dev


def operands_from_args(args, fin: str, k: int) -> tuple[str, str | None, int | None] | None:
    """(b format, scale_format, scale_block) from --b, --scale and --scale-block, or None."""
    fb = None
    if getattr(args, "fb", None):
        try:
            fb = get_format(args.fb).name
        except FormatError as e:
            raise InputError(f"--b: {e}") from None
    scale_format = getattr(args, "scale_format", None)
    scale_block = getattr(args, "scale_block", None)
    if (scale_format is None) != (scale_block is None):
        raise InputError("--scale and --scale-block go together (block scaling)")
    if scale_block is not None and (scale_block < 1 or k % scale_block):
        raise InputError(f"--scale-block must divide --k {k}, got {scale_block}")
    if fb in (None, fin) and scale_format is None:
        return None
    return fb or fin, scale_format, scale_block
