"""Run rows through real tensor-core instructions on the local NVIDIA GPU.

Each row is one dot product ``d = c + sum_i a_i*b_i`` given as bit patterns.  A row goes on
the diagonal of one instruction's tile: A row r = a, B column r = b, C[r][r] = c, every other
entry +0, and D[r][r] is read back; so an m16n8 / m8n8 mma.sync or an m64n8 wgmma measures
8 rows at a time with nothing but the PTX ISA's fragment maps (and K products per row in the
tile's k order).  The instruction list is :data:`INSTRUCTIONS`; :func:`run_rows` is the entry
point, :class:`CudaHarness` the object behind it.

How it runs
-----------
The package ships ``harness.cu``.  It is compiled with the user's ``nvcc`` once per GPU
architecture (``-gencode=arch=compute_XY,code=sm_XY``; ``sm_90a`` on Hopper, which wgmma
needs) into ``$MMAPROBE_CACHE_DIR`` or ``$XDG_CACHE_HOME/mmaprobe`` (default
``~/.cache/mmaprobe``), under ``cuda/<arch>/<digest of source, nvcc version and flags>/``;
the build goes to a temporary directory renamed into place, so a crash or a concurrent build
never leaves a half-written binary.  The host side packs every operand into the registers
each thread holds (numpy fancy indexing through precomputed slot maps), writes one binary
file per batch into a temporary directory (always removed), runs ``harness run IN OUT`` once,
and reads the D registers back.  The kernel only loads registers, issues the instruction
and stores D; every layout decision is made here.

Environment: ``MMAPROBE_NVCC`` (the compiler; else ``nvcc`` on PATH, ``$CUDA_HOME/bin``,
``/usr/local/cuda/bin``), ``MMAPROBE_NVIDIA_SMI`` (GPU discovery; else ``nvidia-smi`` on
PATH), ``CUDA_VISIBLE_DEVICES`` (the first visible GPU is used), ``TMPDIR`` (batch files).

Binary file protocol (little-endian; mirrored by the structs in harness.cu)
---------------------------------------------------------------------------
Input, 128-byte header then three images::

    char[8]  magic "MMAPRIN1"     u32 version = 1        u32 threads per tile (32 or 128)
    u64      tiles                u32 a_words            u32 b_words
    u32      c_words              u32 d_words            u32 b_tile_bytes
    u32[5]   zero                 char[64] instruction name (catalogue name, NUL-padded)

    A image   tiles x threads x a_words  u32 words
    B image   tiles x threads x b_words  u32 words       (mma.sync)
              tiles x b_tile_bytes       bytes           (wgmma: the shared-memory image)
    C image   tiles x threads x c_words  u32 words

``*_words`` count 32-bit register words per thread.  A thread's words hold its fragment's
elements in order, low to high (PTX "Elements (low to high)"): two f16/bf16 per word, four
fp8 per word, one tf32 (its binary32 container) per word, one f64 per two words (low word
first).  Register word w of thread s of tile t is word ``(t*threads + s)*words + w``.

Output, 128-byte header then the D image::

    char[8] magic "MMAPROU1"   u32 version   u32 threads   u64 tiles   u32 d_words
    u32[9]  zero               char[64] instruction name
    D image  tiles x threads x d_words u32 words

The harness exits 0 on success, 2 on a malformed input or an instruction missing from the
build, 3 on a CUDA error (each CUDA call is checked, the message names it), 4 when the GPU
left an output untouched.

Fragment maps (sources)
-----------------------
Every map is a function (thread, element) -> (row, col) transcribed from the PTX ISA
(version 9.0), section "Warp-level matrix multiply-accumulate instructions", subsections
"Matrix Fragments for mma.m16n8k4" (tf32), "... mma.m16n8k8" (f16/bf16 and tf32),
"... mma.m16n8k16 with floating point type" (f16/bf16), "... mma.m16n8k16 with integer type"
(the u8/s8 map, which .e4m3/.e5m2 share), "... mma.m16n8k32" (u8/s8/e4m3/e5m2), and
"... mma.m8n8k4" (f64); and section "Asynchronous Warpgroup Level Matrix Multiply-Accumulate",
subsection "Register Fragments and Shared Memory Matrix Layouts": warp w of the warpgroup
holds rows 16w..16w+15 of A and D in the m16n8 layout of its type, and B is K-major in
shared memory without swizzle, in core matrices of 8 rows x 16 bytes with the K halves 128
bytes apart ("Shared Memory Matrix Layout", "Matrix Descriptor Format").  These tables were
measured right on an H100 (shared/hwdata/H100-ptx: 0 wrong entries on full integer tiles).

What is verified at run time
----------------------------
Before the first output of an instruction is trusted (once per process), :meth:`prove_layout`
runs full tiles of random small integers (exact in every input and output format, products
and sums exact whatever the internal precision) plus integer rows through the same packing
path, compares every D entry with an exact integer matmul and every row with its exact dot
product, checks the output count and counts words still holding the 0xFF poison, and refuses
the instruction (:class:`LayoutProofError`) on any difference.  The harness checks, on its
side, that the device has the compute capability it was built for, that the instruction's
device code was compiled, every CUDA call, and a per-tile completion mark (outputs are
poisoned with 0xFF before each run).  An exact test cannot see a permutation of k applied to
A and B alike (it permutes the products of every dot product); the k order is the ISA's.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

from mmaprobe.models.errors import MmaprobeError
from mmaprobe.models.formats import decode_array, get_format


class DeviceError(MmaprobeError):
    """The GPU, the driver, nvcc or the harness could not run what was asked."""


class LayoutProofError(DeviceError):
    """The GPU's outputs on exact integer tiles contradict the fragment maps."""


# =============================================================================================
# Fragment maps: (thread, element) -> (row, col), transcribed from the PTX ISA
# =============================================================================================

Where = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _group(lane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PTX's groupID = laneid >> 2 and threadID_in_group = laneid % 4."""
    return lane >> 2, lane % 4


def acc_m16n8(lane, i):
    """C/D of every m16n8 shape (f16 and f32 accumulators)."""
    g, q = _group(lane)
    return g + 8 * (i >= 2), q * 2 + (i & 1)


def a_m16n8k8_f16(lane, i):
    g, q = _group(lane)
    return g + 8 * (i >= 2), q * 2 + (i & 1)


def b_m16n8k8_f16(lane, i):
    g, q = _group(lane)
    return q * 2 + i, g


def a_m16n8k16_f16(lane, i):
    g, q = _group(lane)
    return g + 8 * ((i >> 1) & 1), q * 2 + (i & 1) + 8 * (i >= 4)


def b_m16n8k16_f16(lane, i):
    g, q = _group(lane)
    return q * 2 + (i & 1) + 8 * (i >= 2), g


def a_m16n8k4_tf32(lane, i):
    g, q = _group(lane)
    return g + 8 * i, q


def b_m16n8k4_tf32(lane, i):
    g, q = _group(lane)
    return q, g


def a_m16n8k8_tf32(lane, i):
    g, q = _group(lane)
    return g + 8 * (i & 1), q + 4 * (i >> 1)


def b_m16n8k8_tf32(lane, i):
    g, q = _group(lane)
    return q + 4 * i, g


def a_m16n8k16_8bit(lane, i):
    g, q = _group(lane)
    return g + 8 * (i >= 4), q * 4 + (i & 3)


def b_m16n8k16_8bit(lane, i):
    g, q = _group(lane)
    return q * 4 + i, g


def a_m16n8k32_8bit(lane, i):
    g, q = _group(lane)
    return g + 8 * ((i >> 2) & 1), q * 4 + (i & 3) + 16 * (i >= 8)


def b_m16n8k32_8bit(lane, i):
    g, q = _group(lane)
    return q * 4 + (i & 3) + 16 * (i >= 4), g


def a_m8n8k4_f64(lane, i):
    g, q = _group(lane)
    return g, q


def b_m8n8k4_f64(lane, i):
    g, q = _group(lane)
    return q, g


def acc_m8n8_f64(lane, i):
    g, q = _group(lane)
    return g, q * 2 + i


def warpgroup(warp_map: Where) -> Where:
    """wgmma A and D: warp w of the warpgroup holds rows 16w..16w+15 in the m16n8 map."""
    def where(thread, i):
        row, col = warp_map(thread & 31, i)
        return row + 16 * (thread >> 5), col
    where.__name__ = f"warpgroup({warp_map.__name__})"
    return where


def wgmma_b_shared(element_bytes: int) -> Where:
    """wgmma B, K-major, no swizzle: element slot s of the 256-byte shared-memory image.

    Core matrices are 8 rows (n) x 16 bytes (k); the two core matrices along K are 128 bytes
    apart (the descriptor's leading-dimension byte offset).  The single pseudo-thread 0 owns
    every slot."""
    per_row = 16 // element_bytes  # k values in one 16-byte core-matrix row

    def where(thread, s):
        byte = s * element_bytes
        core, within = byte // 128, byte % 128
        return core * per_row + (within % 16) // element_bytes, within // 16
    where.__name__ = f"wgmma_b_shared({element_bytes})"
    return where


@dataclass(frozen=True, eq=False)
class FragmentMap:
    """Where each register element of each thread sits in one operand matrix.

    rows, cols  (threads, elements): matrix coordinates of thread s's element e
    slots       (matrix rows, matrix cols): flat register slot s*elements + e of each entry
    """

    shape: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray
    slots: np.ndarray
    source: str

    @property
    def threads(self) -> int:
        return self.rows.shape[0]

    @property
    def elements(self) -> int:
        return self.rows.shape[1]


def fragment_map(where: Where, shape: tuple[int, int], threads: int) -> FragmentMap:
    """Evaluate a map on every (thread, element) and check it covers the matrix exactly once."""
    elements = shape[0] * shape[1] // threads
    thread, element = np.meshgrid(np.arange(threads), np.arange(elements), indexing="ij")
    rows, cols = (np.broadcast_to(np.asarray(x, dtype=np.int64), thread.shape)
                  for x in where(thread, element))
    inside = (rows >= 0) & (rows < shape[0]) & (cols >= 0) & (cols < shape[1])
    if not inside.all():
        raise ValueError(f"{where.__name__}: an element falls outside the {shape} matrix")
    flat = rows * shape[1] + cols
    hits = np.bincount(flat.ravel(), minlength=shape[0] * shape[1])
    if (hits != 1).any():
        raise ValueError(f"{where.__name__}: {int((hits != 1).sum())} entries of the {shape} "
                         "matrix are not held exactly once")
    slots = np.empty(shape[0] * shape[1], dtype=np.int64)
    slots[flat.ravel()] = np.arange(threads * elements)
    return FragmentMap(shape, rows, cols, slots.reshape(shape), where.__name__)


# =============================================================================================
# The instruction catalogue
# =============================================================================================

PTX_TYPE_FORMAT = {"f16": "binary16", "bf16": "bfloat16", "tf32": "tf32", "e4m3": "e4m3",
                   "e5m2": "e5m2", "f32": "binary32", "f64": "binary64"}

ROWS_PER_TILE = 8  # the diagonal of every m16n8 / m8n8 / m64n8 tile


@dataclass(frozen=True, eq=False)
class Instruction:
    """One PTX tensor-core instruction and the fragment maps that feed it.

    name         catalogue name: the PTX shape without sync.aligned / row.col / mma_async
    ptx          the exact PTX instruction
    k            products per dot product (K)
    min_arch     lowest compute capability (80, 89, 90); wgmma needs exactly sm_90a
    a_where ...  the PTX ISA maps; a, b, acc are their evaluated FragmentMaps of A (m x k),
                 B (k x n) and C/D (m x n); for wgmma, B is the shared-memory image held by
                 one pseudo-thread
    """

    name: str
    ptx: str
    m: int
    n: int
    k: int
    a_format: str
    b_format: str
    c_format: str
    out_format: str
    min_arch: int
    a_where: Where = field(repr=False)
    b_where: Where = field(repr=False)
    acc_where: Where = field(repr=False)

    @property
    def K(self) -> int:
        return self.k

    @property
    def family(self) -> str:
        return self.name.split(".")[0]

    @property
    def threads(self) -> int:
        """Threads that issue it together: a warp, or a warpgroup for wgmma."""
        return 128 if self.family == "wgmma" else 32

    @cached_property
    def a(self) -> FragmentMap:
        return fragment_map(self.a_where, (self.m, self.k), self.threads)

    @cached_property
    def b(self) -> FragmentMap:
        holders = 1 if self.b_in_shared_memory else self.threads
        return fragment_map(self.b_where, (self.k, self.n), holders)

    @cached_property
    def acc(self) -> FragmentMap:
        return fragment_map(self.acc_where, (self.m, self.n), self.threads)

    @property
    def b_in_shared_memory(self) -> bool:
        return self.family == "wgmma"

    @property
    def arch_specific(self) -> bool:
        """True when only the arch-specific target (sm_90a) has it."""
        return self.family == "wgmma"

    def words(self, operand: str) -> int:
        """32-bit register words per thread of operand a, b, c or d (b: 0 for wgmma)."""
        if operand == "b" and self.b_in_shared_memory:
            return 0
        fmap, fmt = {"a": (self.a, self.a_format), "b": (self.b, self.b_format),
                     "c": (self.acc, self.c_format), "d": (self.acc, self.out_format)}[operand]
        return fmap.elements * _width(fmt) // 32

    @property
    def b_tile_bytes(self) -> int:
        return self.b.elements * _width(self.b_format) // 8 if self.b_in_shared_memory else 0


def _width(fmt: str) -> int:
    return get_format(fmt).width


def _dtype(fmt: str) -> np.dtype:
    return np.dtype(f"<u{_width(fmt) // 8}")


_MMA_MAPS = {  # (m, n, k, input width) -> (A map, B map)
    (16, 8, 8, 16): (a_m16n8k8_f16, b_m16n8k8_f16),
    (16, 8, 16, 16): (a_m16n8k16_f16, b_m16n8k16_f16),
    (16, 8, 4, 32): (a_m16n8k4_tf32, b_m16n8k4_tf32),
    (16, 8, 8, 32): (a_m16n8k8_tf32, b_m16n8k8_tf32),
    (16, 8, 16, 8): (a_m16n8k16_8bit, b_m16n8k16_8bit),
    (16, 8, 32, 8): (a_m16n8k32_8bit, b_m16n8k32_8bit),
    (8, 8, 4, 64): (a_m8n8k4_f64, b_m8n8k4_f64),
}


def _mma(k: int, dtype: str, atype: str, btype: str, min_arch: int) -> Instruction:
    m, n = (8, 8) if atype == "f64" else (16, 8)
    width = _width(PTX_TYPE_FORMAT[atype])
    a_where, b_where = _MMA_MAPS[(m, n, k, width)]
    acc_where = acc_m8n8_f64 if atype == "f64" else acc_m16n8
    types = f"{dtype}.{atype}.{btype}.{dtype}"
    name = "mma.m8n8k4.f64" if atype == "f64" else f"mma.m{m}n{n}k{k}.{types}"
    return Instruction(
        name=name, ptx=f"mma.sync.aligned.m{m}n{n}k{k}.row.col.{types}", m=m, n=n, k=k,
        a_format=PTX_TYPE_FORMAT[atype], b_format=PTX_TYPE_FORMAT[btype],
        c_format=PTX_TYPE_FORMAT[dtype], out_format=PTX_TYPE_FORMAT[dtype], min_arch=min_arch,
        a_where=a_where, b_where=b_where, acc_where=acc_where)


def _wgmma(k: int, dtype: str, atype: str, btype: str) -> Instruction:
    m, n = 64, 8
    width = _width(PTX_TYPE_FORMAT[atype])
    a_where, _ = _MMA_MAPS[(16, 8, k, width)]
    types = f"{dtype}.{atype}.{btype}"
    return Instruction(
        name=f"wgmma.m{m}n{n}k{k}.{types}",
        ptx=f"wgmma.mma_async.sync.aligned.m{m}n{n}k{k}.{types}", m=m, n=n, k=k,
        a_format=PTX_TYPE_FORMAT[atype], b_format=PTX_TYPE_FORMAT[btype],
        c_format=PTX_TYPE_FORMAT[dtype], out_format=PTX_TYPE_FORMAT[dtype], min_arch=90,
        a_where=warpgroup(a_where), b_where=wgmma_b_shared(width // 8),
        acc_where=warpgroup(acc_m16n8))


_FP8_PAIRS = [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")]


def _catalogue() -> dict[str, Instruction]:
    instrs = [
        _mma(8, "f16", "f16", "f16", 80), _mma(8, "f32", "f16", "f16", 80),
        _mma(16, "f16", "f16", "f16", 80), _mma(16, "f32", "f16", "f16", 80),
        _mma(8, "f32", "bf16", "bf16", 80), _mma(16, "f32", "bf16", "bf16", 80),
        _mma(4, "f32", "tf32", "tf32", 80), _mma(8, "f32", "tf32", "tf32", 80),
    ]
    instrs += [_mma(k, acc, at, bt, 89) for k in (16, 32) for acc in ("f32", "f16")
               for at, bt in _FP8_PAIRS]
    instrs.append(_mma(4, "f64", "f64", "f64", 80))
    instrs += [_wgmma(16, "f16", "f16", "f16"), _wgmma(16, "f32", "f16", "f16"),
               _wgmma(16, "f32", "bf16", "bf16"), _wgmma(8, "f32", "tf32", "tf32")]
    instrs += [_wgmma(32, acc, at, bt) for acc in ("f32", "f16") for at, bt in _FP8_PAIRS]
    return {instr.name: instr for instr in instrs}


INSTRUCTIONS: dict[str, Instruction] = _catalogue()


def instruction_names() -> list[str]:
    return list(INSTRUCTIONS)


def get_instruction(name: str | Instruction) -> Instruction:
    """Look an instruction up by catalogue name or by its exact PTX spelling."""
    if isinstance(name, Instruction):
        return name
    key = str(name).strip()
    if key in INSTRUCTIONS:
        return INSTRUCTIONS[key]
    for instr in INSTRUCTIONS.values():
        if instr.ptx == key:
            return instr
    raise DeviceError(f"unknown CUDA instruction {name!r}; valid instructions: "
                      f"{', '.join(INSTRUCTIONS)}")


def _parse_arch(arch: int | str) -> tuple[int, bool]:
    """90, '90', '9.0', 'sm_90a', 'sm_89' -> (compute capability x 10, arch-specific?)."""
    text = str(arch).strip().lower()
    match = re.fullmatch(r"(?:sm_|compute_)?(\d+)(?:\.(\d))?(a|f)?", text)
    if not match:
        raise DeviceError(f"cannot read GPU architecture {arch!r}; expected e.g. 90, '8.9' "
                          "or 'sm_90a'")
    major_or_cc, minor, suffix = match.groups()
    cc = int(major_or_cc) * 10 + int(minor) if minor is not None else int(major_or_cc)
    # a bare compute capability (90, '9.0') means the target the driver builds for it
    specific = suffix == "a" or (not text.startswith(("sm_", "compute_")) and cc == 90)
    return cc, specific


def supported(instr: str | Instruction, arch: int | str) -> bool:
    """Whether the instruction runs on a GPU of this architecture (as the driver builds)."""
    instr = get_instruction(instr)
    cc, specific = _parse_arch(arch)
    if instr.arch_specific:
        return cc == 90 and specific
    return cc >= instr.min_arch


# =============================================================================================
# Packing rows and tiles into register images, unpacking D
# =============================================================================================

@dataclass(frozen=True)
class RegisterImages:
    """What the harness loads: per tile, per thread, the elements of its registers in order.

    a  (tiles, threads, A elements)       in the A format's container dtype
    b  (tiles, threads, B elements)       mma.sync; (tiles, 1, slots) shared-memory image
    c  (tiles, threads, C elements)
    """

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    @property
    def tiles(self) -> int:
        return self.a.shape[0]


def _scatter(fmap: FragmentMap, fmt: str, values: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Register image with values (tiles, n) at slots (n,), every other element +0.

    Done as a gather along the slot axis (np.take), several times faster than a scatter:
    each slot names its value's column, or the appended zero column."""
    tiles, n = values.shape
    source = np.full(fmap.threads * fmap.elements, n, dtype=np.intp)
    source[slots] = np.arange(n)
    with_zero = np.zeros((tiles, n + 1), dtype=_dtype(fmt))
    with_zero[:, :n] = values
    return np.take(with_zero, source, axis=1).reshape(tiles, fmap.threads, fmap.elements)


def pack_tiles(instr: Instruction, a: np.ndarray, b: np.ndarray, c: np.ndarray
               ) -> RegisterImages:
    """Full tiles (bit patterns): A (tiles, m, k), B (tiles, k, n), C (tiles, m, n)."""
    tiles = a.shape[0]
    return RegisterImages(
        a=_scatter(instr.a, instr.a_format, a.reshape(tiles, -1), instr.a.slots.ravel()),
        b=_scatter(instr.b, instr.b_format, b.reshape(tiles, -1), instr.b.slots.ravel()),
        c=_scatter(instr.acc, instr.c_format, c.reshape(tiles, -1), instr.acc.slots.ravel()))


def _row_slots(instr: Instruction) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slots of the diagonal placement, in row order: A[r, i], B[i, r] (r-major), C[r, r]."""
    r = np.arange(ROWS_PER_TILE)
    a_slots = instr.a.slots[:ROWS_PER_TILE, :].ravel()
    b_slots = instr.b.slots[:, :ROWS_PER_TILE].T.ravel()
    return a_slots, b_slots, instr.acc.slots[r, r]


def pack_rows(instr: Instruction, a: np.ndarray, b: np.ndarray, c: np.ndarray
              ) -> RegisterImages:
    """Rows a, b (n, K) and c (n,), n a multiple of 8, placed on the tiles' diagonals."""
    tiles = a.shape[0] // ROWS_PER_TILE
    a_slots, b_slots, c_slots = _row_slots(instr)
    per_tile = ROWS_PER_TILE * instr.k
    return RegisterImages(
        a=_scatter(instr.a, instr.a_format, a.reshape(tiles, per_tile), a_slots),
        b=_scatter(instr.b, instr.b_format, b.reshape(tiles, per_tile), b_slots),
        c=_scatter(instr.acc, instr.c_format, c.reshape(tiles, ROWS_PER_TILE), c_slots))


def unpack_tiles(instr: Instruction, d: np.ndarray) -> np.ndarray:
    """D register image (tiles, threads, elements) -> D tiles (tiles, m, n)."""
    flat = d.reshape(d.shape[0], -1)
    return flat[:, instr.acc.slots.ravel()].reshape(d.shape[0], instr.m, instr.n)


def unpack_rows(instr: Instruction, d: np.ndarray) -> np.ndarray:
    """D register image -> the diagonal D[r][r] of every tile, in row order (uint64)."""
    flat = d.reshape(d.shape[0], -1)
    return flat[:, _row_slots(instr)[2]].reshape(-1).astype(np.uint64)


def pad_rows(a: np.ndarray, b: np.ndarray, c: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Append zero rows up to a multiple of 8."""
    extra = -a.shape[0] % ROWS_PER_TILE
    if extra == 0:
        return a, b, c
    return (np.concatenate([a, np.zeros((extra, a.shape[1]), a.dtype)]),
            np.concatenate([b, np.zeros((extra, b.shape[1]), b.dtype)]),
            np.concatenate([c, np.zeros(extra, c.dtype)]))


# =============================================================================================
# The binary file protocol
# =============================================================================================

PROTOCOL_VERSION = 1
INPUT_MAGIC = b"MMAPRIN1"
OUTPUT_MAGIC = b"MMAPROU1"
_INPUT_HEADER = struct.Struct("<8sIIQIIIII20s64s")
_OUTPUT_HEADER = struct.Struct("<8sIIQI36s64s")
MAX_TILES = 0x7FFFFFFF


def write_input(path: Path, instr: Instruction, images: RegisterImages) -> None:
    header = _INPUT_HEADER.pack(
        INPUT_MAGIC, PROTOCOL_VERSION, instr.threads, images.tiles, instr.words("a"),
        instr.words("b"), instr.words("c"), instr.words("d"), instr.b_tile_bytes, b"",
        instr.name.encode())
    with open(path, "wb") as f:
        f.write(header)
        for image in (images.a, images.b, images.c):
            f.write(np.ascontiguousarray(image, dtype=image.dtype.newbyteorder("<")).data)


def read_output(path: Path, instr: Instruction, tiles: int) -> np.ndarray:
    """The D image (tiles, threads, elements) in the output format's dtype, all checked."""
    data = Path(path).read_bytes() if Path(path).exists() else b""
    if len(data) < _OUTPUT_HEADER.size:
        raise DeviceError(f"{instr.name}: the harness wrote no output header")
    magic, version, threads, out_tiles, d_words, _, name = _OUTPUT_HEADER.unpack_from(data)
    got = (magic, version, threads, out_tiles, d_words, name.rstrip(b"\0").decode(errors="replace"))
    want = (OUTPUT_MAGIC, PROTOCOL_VERSION, instr.threads, tiles, instr.words("d"), instr.name)
    if got != want:
        raise DeviceError(f"{instr.name}: harness output header {got} does not match {want}")
    dtype = _dtype(instr.out_format)
    expected = tiles * instr.threads * instr.acc.elements * dtype.itemsize
    body = data[_OUTPUT_HEADER.size:]
    if len(body) != expected:
        raise DeviceError(f"{instr.name}: harness wrote {len(body)} bytes of D registers, "
                          f"expected {expected}")
    return np.frombuffer(body, dtype=dtype).reshape(tiles, instr.threads, instr.acc.elements)


# =============================================================================================
# GPU discovery, nvcc, and the per-architecture build cache
# =============================================================================================

@dataclass(frozen=True)
class GpuInfo:
    name: str
    major: int
    minor: int

    @property
    def compute_capability(self) -> int:
        return self.major * 10 + self.minor

    @property
    def arch(self) -> str:
        """The nvcc target the harness is built for (sm_90a on Hopper)."""
        return target_arch(self.major, self.minor)


def target_arch(major: int, minor: int) -> str:
    if major * 10 + minor < 80:
        raise DeviceError(f"compute capability {major}.{minor}: the CUDA harness needs 8.0 "
                          "(Ampere) or newer")
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def _nvidia_smi() -> str:
    configured = os.environ.get("MMAPROBE_NVIDIA_SMI")
    if configured:
        if not Path(configured).is_file():
            raise DeviceError(f"no NVIDIA GPU found: MMAPROBE_NVIDIA_SMI={configured} does "
                              "not exist")
        return configured
    found = shutil.which("nvidia-smi")
    if not found:
        raise DeviceError("no NVIDIA GPU found: nvidia-smi is not on PATH (is the NVIDIA "
                          "driver installed?)")
    return found


def discover_gpu(timeout: float = 60.0) -> GpuInfo:
    """The first GPU visible to CUDA programs (honours CUDA_VISIBLE_DEVICES)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    first = visible.split(",")[0].strip() if visible is not None else None
    if first is not None and first in ("", "-1", "NoDevFiles"):
        raise DeviceError(f"no NVIDIA GPU visible: CUDA_VISIBLE_DEVICES={visible!r}")
    command = [_nvidia_smi(), "--query-gpu=name,compute_cap", "--format=csv,noheader"]
    if first is not None:
        command += ["-i", first]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DeviceError(f"no usable NVIDIA GPU: cannot run {command[0]}: {e}") from None
    if done.returncode != 0:
        message = (done.stderr.strip() or done.stdout.strip() or "no message").splitlines()
        raise DeviceError(f"no usable NVIDIA GPU: nvidia-smi failed (exit {done.returncode}): "
                          f"{' '.join(message)[:500]}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    match = re.fullmatch(r"\s*(.+?)\s*,\s*(\d+)\.(\d+)\s*", lines[0]) if lines else None
    if not match:
        raise DeviceError("no NVIDIA GPU found: nvidia-smi listed "
                          f"{done.stdout.strip()[:200]!r}")
    return GpuInfo(match.group(1), int(match.group(2)), int(match.group(3)))


def find_nvcc() -> str:
    configured = os.environ.get("MMAPROBE_NVCC")
    candidates = [configured] if configured else [
        shutil.which("nvcc"),
        *(os.path.join(os.environ[v], "bin", "nvcc") for v in ("CUDA_HOME", "CUDA_PATH")
          if os.environ.get(v)),
        "/usr/local/cuda/bin/nvcc"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    where = f"MMAPROBE_NVCC={configured}" if configured else "PATH, $CUDA_HOME/bin, " \
        "/usr/local/cuda/bin"
    raise DeviceError(f"nvcc not found ({where}): install the CUDA toolkit or set MMAPROBE_NVCC")


def nvcc_version(nvcc: str) -> str:
    try:
        done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DeviceError(f"cannot run {nvcc} --version: {e}") from None
    if done.returncode != 0:
        raise DeviceError(f"{nvcc} --version failed: {done.stderr.strip()[:500]}")
    return done.stdout.strip()


def harness_source() -> bytes:
    return resources.files(__package__).joinpath("harness.cu").read_bytes()


def compile_command(nvcc: str, arch: str, source: Path, output: Path) -> list[str]:
    """The nvcc command line that builds the harness for one architecture (sm_80, sm_90a)."""
    cc, _ = _parse_arch(arch)
    target = arch.removeprefix("sm_")
    return [nvcc, "-O3", "-std=c++17", f"-gencode=arch=compute_{target},code=sm_{target}",
            f"-DMMAPROBE_TARGET_ARCH={cc}", "-o", str(output), str(source)]


def cache_root() -> Path:
    if os.environ.get("MMAPROBE_CACHE_DIR"):
        return Path(os.environ["MMAPROBE_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "mmaprobe"


def build_harness(arch: str, nvcc: str | None = None, cache_dir: Path | None = None,
                  timeout: float = 900.0) -> Path:
    """The harness binary for arch, compiled once into the cache (atomically)."""
    if not re.fullmatch(r"sm_\d+a?", arch):
        raise DeviceError(f"cannot build the CUDA harness for {arch!r}; expected e.g. sm_89 "
                          "or sm_90a")
    nvcc = nvcc or find_nvcc()
    source = harness_source()
    version = nvcc_version(nvcc)
    flags = " ".join(compile_command("nvcc", arch, Path("harness.cu"), Path("harness")))
    digest = hashlib.sha256(b"\0".join([source, version.encode(), flags.encode()]))
    final = Path(cache_dir or cache_root()) / "cuda" / arch / digest.hexdigest()[:16]
    binary = final / "harness"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    except OSError as e:
        raise DeviceError(f"cannot create the harness cache under {final.parent}: {e}") from None
    try:
        _compile_into(staging, nvcc, arch, source, version, timeout)
        if final.exists() and not binary.is_file():  # a broken earlier install
            shutil.rmtree(final, ignore_errors=True)
        try:
            os.rename(staging, final)
        except OSError:
            if not binary.is_file():  # not a concurrent build that won the race
                raise
    except OSError as e:
        raise DeviceError(f"cannot install the harness into {final}: {e}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return binary


def _compile_into(staging: Path, nvcc: str, arch: str, source: bytes, version: str,
                  timeout: float) -> None:
    (staging / "harness.cu").write_bytes(source)
    command = compile_command(nvcc, arch, staging / "harness.cu", staging / "harness")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=staging)
    except subprocess.TimeoutExpired:
        raise DeviceError(f"nvcc did not build the CUDA harness for {arch} within "
                          f"{timeout:g} s") from None
    except OSError as e:
        raise DeviceError(f"cannot run {nvcc}: {e}") from None
    if done.returncode != 0 or not (staging / "harness").is_file():
        raise DeviceError(f"nvcc failed to build the CUDA harness for {arch} (exit "
                          f"{done.returncode}): {' '.join(command)}\n{done.stderr.strip()}")
    (staging / "build.txt").write_text(" ".join(command) + "\n" + version + "\n")


# =============================================================================================
# Running: the harness, the layout proof, rows
# =============================================================================================

@dataclass(frozen=True)
class LayoutProof:
    """The verdict of one instruction's layout proof on the GPU."""

    instruction: str
    tiles: int            # full random integer tiles
    entries: int          # D entries compared
    wrong: int            # entries that differ from the exact integer matmul
    poisoned: int         # D words still holding the 0xFF poison
    rows: int             # integer rows run through the row path
    rows_wrong: int

    @property
    def ok(self) -> bool:
        return self.wrong == 0 and self.poisoned == 0 and self.rows_wrong == 0


PROOF_TILES = 16
PROOF_ROWS = 64
_PROVEN: dict[tuple[str, str], LayoutProof] = {}   # (harness binary, instruction) -> verdict
_CHUNK_BYTES = 1 << 30


class CudaHarness:
    """A built harness binary and the GPU it runs on."""

    def __init__(self, binary: Path | str, gpu: GpuInfo | None = None):
        self.binary = Path(binary)
        self.gpu = gpu
        self._table: dict[str, tuple[int, ...]] | None = None

    @classmethod
    def for_local_gpu(cls, nvcc: str | None = None, cache_dir: Path | None = None
                      ) -> CudaHarness:
        gpu = discover_gpu()
        return cls(build_harness(gpu.arch, nvcc, cache_dir), gpu)

    # -- what this build can run ---------------------------------------------------------
    def table(self) -> dict[str, tuple[int, ...]]:
        """`harness list`: name -> (threads, a, b, c, d words, b_tile_bytes, compiled)."""
        if self._table is None:
            done = self._invoke(["list"], timeout=60, what="list its instructions")
            table = {}
            for line in done.stdout.splitlines():
                if line.strip() and not line.startswith("#"):
                    name, *numbers = line.split()
                    table[name] = tuple(int(x) for x in numbers)
            _check_table(table, self.binary)
            self._table = table
        return self._table

    def supported(self, name: str | Instruction) -> bool:
        instr = get_instruction(name)
        arch_ok = self.gpu is None or supported(instr, self.gpu.arch)
        return arch_ok and self.table()[instr.name][-1] == 1

    def instructions(self) -> list[Instruction]:
        return [instr for instr in INSTRUCTIONS.values() if self.supported(instr)]

    def _require(self, instr: Instruction) -> None:
        if self.gpu is not None and not supported(instr, self.gpu.arch):
            need = "sm_90a (Hopper)" if instr.arch_specific else f"sm_{instr.min_arch}+"
            raise DeviceError(f"{instr.name} needs {need}; this GPU ({self.gpu.name}) is "
                              f"{self.gpu.arch}")
        if self.table()[instr.name][-1] != 1:
            raise DeviceError(f"{instr.name} is not in the harness built at {self.binary} "
                              "(nvcc too old for it?)")

    # -- one batch -------------------------------------------------------------------------
    def _invoke(self, args: list[str], timeout: float, what: str
                ) -> subprocess.CompletedProcess:
        try:
            done = subprocess.run([str(self.binary), *args], capture_output=True, text=True,
                                  timeout=max(timeout, 1.0))
        except subprocess.TimeoutExpired:
            raise DeviceError(f"the CUDA harness did not {what} within {timeout:.1f} s") from None
        except OSError as e:
            raise DeviceError(f"cannot run the CUDA harness {self.binary}: {e}") from None
        if done.returncode != 0:
            raise DeviceError(f"the CUDA harness failed to {what} (exit {done.returncode}): "
                              f"{done.stderr.strip()[:2000] or 'no message'}")
        return done

    def run_images(self, instr: Instruction, images: RegisterImages, timeout: float
                   ) -> np.ndarray:
        """One harness run: register images in, the D image (tiles, threads, elements) out."""
        if not 0 < images.tiles <= MAX_TILES:
            raise DeviceError(f"{instr.name}: {images.tiles} tiles in one batch")
        with tempfile.TemporaryDirectory(prefix="mmaprobe-cuda-") as tmp:
            request, reply = Path(tmp) / "in.bin", Path(tmp) / "out.bin"
            write_input(request, instr, images)
            self._invoke(["run", str(request), str(reply)], timeout, f"run {instr.name}")
            return read_output(reply, instr, images.tiles)

    # -- the layout proof ------------------------------------------------------------------
    def prove_layout(self, name: str | Instruction, timeout: float = 600.0,
                     seed: int = 20261122) -> LayoutProof:
        """Run exact integer tiles and rows; raise LayoutProofError on any wrong entry."""
        instr = get_instruction(name)
        key = (str(self.binary), instr.name)
        if key not in _PROVEN:
            self._require(instr)
            proof = _prove(self, instr, timeout, np.random.default_rng(seed))
            if not proof.ok:
                raise LayoutProofError(
                    f"{instr.name}: the GPU contradicts the fragment maps on exact integer "
                    f"tiles: {proof.wrong} of {proof.entries} D entries wrong, "
                    f"{proof.poisoned} D words never written, {proof.rows_wrong} of "
                    f"{proof.rows} rows wrong; its outputs cannot be trusted")
            _PROVEN[key] = proof
        return _PROVEN[key]

    # -- rows ------------------------------------------------------------------------------
    def run_rows(self, name: str | Instruction, a, b, c, timeout: float = 600.0
                 ) -> np.ndarray:
        """d = c + sum a_i*b_i per row on the GPU: uint64 bit patterns (n,) in out_format.

        a, b: (n, K) integer bit patterns in a_format / b_format; c: (n,) in c_format.  The
        patterns go to the hardware as given (tf32: the whole binary32 container, low 13
        bits included).  The instruction's layout proof runs first (once per process)."""
        deadline = time.monotonic() + timeout
        instr = get_instruction(name)
        a, b, c = check_rows(instr, a, b, c)
        if a.shape[0] == 0:
            return np.zeros(0, dtype=np.uint64)
        self.prove_layout(instr, deadline - time.monotonic())
        n = a.shape[0]
        a, b, c = pad_rows(a, b, c)
        per_chunk = _rows_per_chunk(instr)
        outputs = []
        for start in range(0, a.shape[0], per_chunk):
            part = slice(start, start + per_chunk)
            images = pack_rows(instr, a[part], b[part], c[part])
            d = self.run_images(instr, images, deadline - time.monotonic())
            outputs.append(unpack_rows(instr, d))
        return np.concatenate(outputs)[:n]


def _check_table(table: dict[str, tuple[int, ...]], binary: Path) -> None:
    """The harness's register counts must be the catalogue's (one source each side)."""
    for instr in INSTRUCTIONS.values():
        want = (instr.threads, instr.words("a"), instr.words("b"), instr.words("c"),
                instr.words("d"), instr.b_tile_bytes)
        got = table.get(instr.name)
        if got is None or got[:-1] != want:
            raise DeviceError(f"the CUDA harness {binary} disagrees with the driver on "
                              f"{instr.name}: (threads, a, b, c, d words, b_tile_bytes) "
                              f"harness {got and got[:-1]}, driver {want}")


def _rows_per_chunk(instr: Instruction) -> int:
    tile_bytes = 4 * instr.threads * sum(instr.words(x) for x in "abcd") + \
        instr.b_tile_bytes + 4
    return max(1, _CHUNK_BYTES // tile_bytes) * ROWS_PER_TILE


def check_rows(instr: Instruction, a, b, c) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows as uint arrays of the formats' containers; DeviceError on a bad shape or value."""
    a = _patterns(a, "a", instr.a_format, instr)
    b = _patterns(b, "b", instr.b_format, instr)
    c = _patterns(c, "c", instr.c_format, instr)
    if a.ndim != 2 or b.shape != a.shape or c.shape != a.shape[:1] or a.shape[1] != instr.k:
        raise DeviceError(f"{instr.name}: rows need a and b of shape (n, {instr.k}) and c of "
                          f"shape (n,); got {a.shape}, {b.shape}, {c.shape}")
    return a, b, c


def _patterns(x, operand: str, fmt: str, instr: Instruction) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind not in "ui":
        raise DeviceError(f"{instr.name}: {operand} must hold integer bit patterns, not "
                          f"{x.dtype}")
    width = _width(fmt)
    negative = x.dtype.kind == "i" and x.size and x.min() < 0
    if negative or (x.size and width < 64 and int(x.max()) >> width):
        raise DeviceError(f"{instr.name}: {operand} holds a value that is not a {width}-bit "
                          f"{fmt} pattern")
    return x.astype(_dtype(fmt))


# -- proof data: small integers, exact everywhere ------------------------------------------------

PROOF_INPUT_RANGE = 3   # |a|, |b| <= 3: exact in every input format (e5m2 holds 0..8 exactly)
PROOF_C_RANGE = 8       # |c| <= 8; |d| <= 32*9 + 8 = 296, exact in binary16 and wider


def integer_patterns(fmt: str, values: np.ndarray) -> np.ndarray:
    """Small integers -> bit patterns of fmt (each checked exact)."""
    f = get_format(fmt)
    lo, hi = int(values.min(initial=0)), int(values.max(initial=0))
    table = np.array([f.from_fraction(v) for v in range(lo, hi + 1)], dtype=np.uint64)
    for v, bits in zip(range(lo, hi + 1), table):
        if f.to_fraction(int(bits)) != Fraction(v):
            raise ValueError(f"{v} is not exact in {fmt}")
    return table[values - lo].astype(_dtype(fmt))


def pattern_values(fmt: str, bits: np.ndarray) -> np.ndarray:
    """Bit patterns -> float64 values (exact for these formats); NaN for inf/NaN."""
    f = get_format(fmt)
    sign, sig, exp, special = decode_array(f, bits)
    value = np.ldexp(sig.astype(np.float64), (exp - f.t).astype(np.int32))
    return np.where(special != 0, np.nan, np.where(sign == 1, -value, value))


@dataclass(frozen=True)
class ProofData:
    a: np.ndarray          # (tiles, m, k) integers
    b: np.ndarray          # (tiles, k, n)
    c: np.ndarray          # (tiles, m, n)
    row_a: np.ndarray      # (rows, k)
    row_b: np.ndarray
    row_c: np.ndarray      # (rows,)

    def expected_tiles(self) -> np.ndarray:
        return self.c + np.einsum("tmk,tkn->tmn", self.a, self.b)

    def expected_rows(self) -> np.ndarray:
        return self.row_c + np.einsum("rk,rk->r", self.row_a, self.row_b)


def proof_data(instr: Instruction, rng: np.random.Generator, tiles: int = PROOF_TILES,
               rows: int = PROOF_ROWS) -> ProofData:
    def ints(bound, shape):
        return rng.integers(-bound, bound + 1, size=shape)
    m, n, k = instr.m, instr.n, instr.k
    return ProofData(
        a=ints(PROOF_INPUT_RANGE, (tiles, m, k)), b=ints(PROOF_INPUT_RANGE, (tiles, k, n)),
        c=ints(PROOF_C_RANGE, (tiles, m, n)), row_a=ints(PROOF_INPUT_RANGE, (rows, k)),
        row_b=ints(PROOF_INPUT_RANGE, (rows, k)), row_c=ints(PROOF_C_RANGE, rows))


def proof_images(instr: Instruction, data: ProofData) -> RegisterImages:
    """The full tiles followed by the rows' tiles, in one batch."""
    tiles = pack_tiles(instr, integer_patterns(instr.a_format, data.a),
                       integer_patterns(instr.b_format, data.b),
                       integer_patterns(instr.c_format, data.c))
    rows = pack_rows(instr, integer_patterns(instr.a_format, data.row_a),
                     integer_patterns(instr.b_format, data.row_b),
                     integer_patterns(instr.c_format, data.row_c))
    return RegisterImages(*(np.concatenate([x, y]) for x, y in
                            zip((tiles.a, tiles.b, tiles.c), (rows.a, rows.b, rows.c))))


def judge_proof(instr: Instruction, data: ProofData, d: np.ndarray) -> LayoutProof:
    """Compare a D image of proof_images with the exact integer results."""
    full = data.a.shape[0]
    got_tiles = pattern_values(instr.out_format, unpack_tiles(instr, d[:full]))
    got_rows = pattern_values(instr.out_format, unpack_rows(instr, d[full:]))
    words = np.ascontiguousarray(d).view(np.uint32)
    return LayoutProof(
        instruction=instr.name, tiles=full, entries=got_tiles.size,
        wrong=int((got_tiles != data.expected_tiles()).sum()),
        poisoned=int((words == 0xFFFFFFFF).sum()), rows=data.row_a.shape[0],
        rows_wrong=int((got_rows != data.expected_rows()).sum()))


def _prove(harness: CudaHarness, instr: Instruction, timeout: float,
           rng: np.random.Generator) -> LayoutProof:
    data = proof_data(instr, rng)
    d = harness.run_images(instr, proof_images(instr, data), timeout)
    return judge_proof(instr, data, d)


# -- the process-wide harness ---------------------------------------------------------------------

_LOCAL: CudaHarness | None = None


def local_harness() -> CudaHarness:
    """The harness for this machine's GPU (discovered and built once per process)."""
    global _LOCAL
    if _LOCAL is None:
        _LOCAL = CudaHarness.for_local_gpu()
    return _LOCAL


def run_rows(name: str, a, b, c, timeout: float = 600.0) -> np.ndarray:
    """Rows through a real instruction on the local GPU; see CudaHarness.run_rows."""
    return local_harness().run_rows(name, a, b, c, timeout)
