"""The CUDA harness driver (vectors/cuda.py) without a GPU.

A second transcription of the PTX ISA fragment tables (written here from the ISA's text, not
from the driver) drives a simulated warp: it reads the driver's register images back into
tiles, computes D exactly (integers or rationals), writes D into registers as the hardware
would, and the driver's unpacking must return each row's exact dot product.  A fake harness
executable built on the same simulation runs the driver end to end (file protocol, layout
proof, errors).  Where nvcc is on PATH, the default run checks sm_90a's device code (PTX +
ptxas, about 3 s); `-m slow` builds the harness for sm_80, sm_89 and sm_90a (10-20 s).
"""

from __future__ import annotations

import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from mmaprobe.models.errors import MmaprobeError
from mmaprobe.models.formats import get_format
from mmaprobe.vectors import cuda
from mmaprobe.vectors.cuda import (
    INSTRUCTIONS,
    CudaHarness,
    DeviceError,
    GpuInfo,
    LayoutProofError,
    RegisterImages,
    get_instruction,
    instruction_names,
)

NAMES = instruction_names()


def _seed(*parts) -> int:
    return zlib.crc32(" ".join(map(str, parts)).encode())


# =============================================================================================
# The PTX ISA fragment tables, transcribed a second time ("row = ... for ai where ...")
# =============================================================================================

def _ids(lane):
    return lane >> 2, lane % 4   # groupID, threadID_in_group


def isa_c_m16n8(lane, i):        # accumulators of m16n8k4/k8/k16/k32, f16 and f32
    group, tig = _ids(lane)
    row = group if i < 2 else group + 8
    return row, tig * 2 + (i & 0x1)


def isa_a_m16n8k8_f16(lane, i):  # "row = groupID for a0 and a1, groupID + 8 for a2 and a3"
    group, tig = _ids(lane)
    row = group if i in (0, 1) else group + 8
    return row, tig * 2 + (i & 0x1)


def isa_b_m16n8k8_f16(lane, i):
    group, tig = _ids(lane)
    return tig * 2 + i, group


def isa_a_m16n8k16_f16(lane, i):
    group, tig = _ids(lane)
    row = group if (0 <= i < 2 or 4 <= i < 6) else group + 8
    col = tig * 2 + (i & 0x1) if i < 4 else tig * 2 + (i & 0x1) + 8
    return row, col


def isa_b_m16n8k16_f16(lane, i):
    group, tig = _ids(lane)
    row = tig * 2 + (i & 0x1) if i < 2 else tig * 2 + (i & 0x1) + 8
    return row, group


def isa_a_m16n8k4_tf32(lane, i):  # "row = groupID for a0, groupID + 8 for a1"
    group, tig = _ids(lane)
    return (group if i == 0 else group + 8), tig


def isa_b_m16n8k4_tf32(lane, i):
    group, tig = _ids(lane)
    return tig, group


def isa_a_m16n8k8_tf32(lane, i):  # "row = groupID for a0 and a2 ...; col = tig for a0 and a1"
    group, tig = _ids(lane)
    row = group if i in (0, 2) else group + 8
    col = tig if i in (0, 1) else tig + 4
    return row, col


def isa_b_m16n8k8_tf32(lane, i):
    group, tig = _ids(lane)
    return (tig if i == 0 else tig + 4), group


def isa_a_m16n8k16_i8(lane, i):   # the .u8/.s8 table, shared by .e4m3/.e5m2
    group, tig = _ids(lane)
    return (group if i < 4 else group + 8), tig * 4 + (i & 0x3)


def isa_b_m16n8k16_i8(lane, i):
    group, tig = _ids(lane)
    return tig * 4 + i, group


def isa_a_m16n8k32_i8(lane, i):
    group, tig = _ids(lane)
    row = group if (0 <= i < 4 or 8 <= i < 12) else group + 8
    col = tig * 4 + (i & 0x3) if i < 8 else tig * 4 + (i & 0x3) + 16
    return row, col


def isa_b_m16n8k32_i8(lane, i):
    group, tig = _ids(lane)
    row = tig * 4 + (i & 0x3) if i < 4 else tig * 4 + (i & 0x3) + 16
    return row, group


def isa_a_m8n8k4_f64(lane, i):
    group, tig = _ids(lane)
    return group, tig


def isa_b_m8n8k4_f64(lane, i):
    group, tig = _ids(lane)
    return tig, group


def isa_c_m8n8k4_f64(lane, i):
    group, tig = _ids(lane)
    return group, tig * 2 + i


ISA_MMA = {  # (shape, input type) -> (A table, B table)
    ("m16n8k8", "f16"): (isa_a_m16n8k8_f16, isa_b_m16n8k8_f16),
    ("m16n8k8", "bf16"): (isa_a_m16n8k8_f16, isa_b_m16n8k8_f16),
    ("m16n8k16", "f16"): (isa_a_m16n8k16_f16, isa_b_m16n8k16_f16),
    ("m16n8k16", "bf16"): (isa_a_m16n8k16_f16, isa_b_m16n8k16_f16),
    ("m16n8k4", "tf32"): (isa_a_m16n8k4_tf32, isa_b_m16n8k4_tf32),
    ("m16n8k8", "tf32"): (isa_a_m16n8k8_tf32, isa_b_m16n8k8_tf32),
    ("m16n8k16", "e4m3"): (isa_a_m16n8k16_i8, isa_b_m16n8k16_i8),
    ("m16n8k16", "e5m2"): (isa_a_m16n8k16_i8, isa_b_m16n8k16_i8),
    ("m16n8k32", "e4m3"): (isa_a_m16n8k32_i8, isa_b_m16n8k32_i8),
    ("m16n8k32", "e5m2"): (isa_a_m16n8k32_i8, isa_b_m16n8k32_i8),
    ("m8n8k4", "f64"): (isa_a_m8n8k4_f64, isa_b_m8n8k4_f64),
}
WGMMA_A = {"f16": "m16n8k16", "bf16": "m16n8k16", "tf32": "m16n8k8", "e4m3": "m16n8k32",
           "e5m2": "m16n8k32"}


def _entries(table, threads, elements):
    """[(thread, element, row, col)] of a per-warp table; warpgroups stack warps by 16 rows."""
    return [(s, e, *_shift(table(s % 32, e), 16 * (s // 32))) for s in range(threads)
            for e in range(elements)]


def _shift(row_col, rows):
    return row_col[0] + rows, row_col[1]


def isa_wgmma_b_entries(k, element_bytes):
    """K-major B without swizzle: 8x16-byte core matrices, the K halves 128 bytes apart."""
    out = []
    for kk in range(k):
        for n in range(8):
            byte = (kk * element_bytes // 16) * 128 + n * 16 + (kk * element_bytes) % 16
            out.append((0, byte // element_bytes, kk, n))
    return out


@cache
def isa_maps(name):
    """operand -> (thread, element, row, col) arrays, one entry each, from this file's tables."""
    instr = get_instruction(name)
    parts = name.split(".")
    shape, atype = (parts[1], parts[3]) if len(parts) > 3 else ("m8n8k4", "f64")
    m, n, k = instr.m, instr.n, instr.k
    if parts[0] == "wgmma":
        a_table = ISA_MMA[(WGMMA_A[atype], atype)][0]
        threads = 128
        a = _entries(a_table, threads, m * k // threads)
        b = isa_wgmma_b_entries(k, get_format(instr.b_format).width // 8)
        acc = _entries(isa_c_m16n8, threads, m * n // threads)
    else:
        a_table, b_table = ISA_MMA[(shape, atype)]
        c_table = isa_c_m8n8k4_f64 if shape == "m8n8k4" else isa_c_m16n8
        a = _entries(a_table, 32, m * k // 32)
        b = _entries(b_table, 32, k * n // 32)
        acc = _entries(c_table, 32, m * n // 32)
    return {op: tuple(np.array(column) for column in zip(*entries))
            for op, entries in (("a", a), ("b", b), ("acc", acc))}


# =============================================================================================
# The simulated warp: registers -> tiles -> exact D -> registers
# =============================================================================================

def read_back(name, operand, image, shape):
    """Tiles (tiles, rows, cols) of bit patterns from a register image, by the ISA tables."""
    thread, element, rows, cols = isa_maps(name)[operand]
    tiles = np.zeros((image.shape[0], *shape), dtype=np.uint64)
    tiles[:, rows, cols] = image[:, thread, element]
    return tiles


def write_registers(name, d_tiles, dtype):
    thread, element, rows, cols = isa_maps(name)["acc"]
    image = np.zeros((d_tiles.shape[0], thread.max() + 1, element.max() + 1), dtype=dtype)
    image[:, thread, element] = d_tiles[:, rows, cols]
    return image


def fractions(fmt, bits):
    f = get_format(fmt)
    values, where = np.unique(np.ravel(bits), return_inverse=True)
    exact = np.array([f.to_fraction(int(x)) for x in values] + [None], dtype=object)[:-1]
    return exact[where].reshape(np.shape(bits))


def exact_d(instr, a, b, c):
    """D = C + A.B exactly, rounded once to the output format (RNE); finite inputs only."""
    fa, fb, fc = fractions(instr.a_format, a), fractions(instr.b_format, b), \
        fractions(instr.c_format, c)
    out = get_format(instr.out_format)
    d = np.zeros(c.shape, dtype=np.uint64)
    for t, r, col in np.ndindex(*c.shape):
        total = fc[t, r, col] + sum((fa[t, r, i] * fb[t, i, col] for i in range(instr.k)
                                     if fa[t, r, i] and fb[t, i, col]), Fraction(0))
        d[t, r, col] = out.from_fraction(total)
    return d


def exact_d_integers(instr, a, b, c):
    """The same for small-integer tiles, in int64 (the layout proof's data)."""
    va, vb, vc = (cuda.pattern_values(f, x) for f, x in
                  ((instr.a_format, a), (instr.b_format, b), (instr.c_format, c)))
    total = vc.astype(np.int64) + np.einsum("tmk,tkn->tmn", va.astype(np.int64),
                                            vb.astype(np.int64))
    out = get_format(instr.out_format)
    lut = {v: out.from_fraction(v) for v in np.unique(total).tolist()}
    return np.vectorize(lut.__getitem__, otypes=[np.uint64])(total)


def _small_integers(instr, *tiles):
    values = [cuda.pattern_values(f, x) for f, x in
              zip((instr.a_format, instr.b_format, instr.c_format), tiles)]
    return all(np.isfinite(v).all() and (v == np.round(v)).all() and np.abs(v).max() <= 64
               for v in values)


def simulate_warp(name, images: RegisterImages, swap_a=False):
    """What the GPU would return for these register images (swap_a: a wrong A layout)."""
    instr = get_instruction(name)
    a = read_back(name, "a", images.a, (instr.m, instr.k))
    b = read_back(name, "b", images.b, (instr.k, instr.n))
    c = read_back(name, "acc", images.c, (instr.m, instr.n))
    if swap_a:  # the hardware reading thread 0's and thread 1's first A element crosswise
        thread, element, rows, cols = isa_maps(name)["a"]
        p, q = (rows[0], cols[0]), (rows[element.max() + 1], cols[element.max() + 1])
        a[:, p[0], p[1]], a[:, q[0], q[1]] = a[:, q[0], q[1]].copy(), a[:, p[0], p[1]].copy()
    d = exact_d_integers(instr, a, b, c) if _small_integers(instr, a, b, c) \
        else exact_d(instr, a, b, c)
    return write_registers(name, d, cuda._dtype(instr.out_format))


def random_finite(fmt, shape, rng):
    """Random finite bit patterns of fmt (all classes: zeros, subnormals, normals)."""
    f = get_format(fmt)
    bits = rng.integers(0, 1 << f.bits, size=shape, dtype=np.uint64) << np.uint64(f.pad)
    _, _, _, special = cuda.decode_array(f, bits)
    while (special != 0).any():
        fresh = rng.integers(0, 1 << f.bits, size=shape, dtype=np.uint64) << np.uint64(f.pad)
        bits = np.where(special != 0, fresh, bits)
        _, _, _, special = cuda.decode_array(f, bits)
    return bits


def random_patterns(fmt, shape, rng):
    f = get_format(fmt)
    return rng.integers(0, 1 << f.bits, size=shape, dtype=np.uint64) << np.uint64(f.pad)


# =============================================================================================
# Maps, packing and unpacking
# =============================================================================================

def test_catalogue():
    assert len(INSTRUCTIONS) == 37
    for instr in INSTRUCTIONS.values():
        ptx = instr.ptx.replace("sync.aligned.", "").replace("row.col.", "")
        ptx = ptx.replace("mma_async.", "")
        assert instr.name == ("mma.m8n8k4.f64" if instr.k == 4 and instr.m == 8 else ptx)
        assert get_instruction(instr.ptx) is instr and instr.K == instr.k
        assert instr.out_format == instr.c_format
    names = set(NAMES)
    for required in ("mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k32.f32.e4m3.e5m2.f32",
                     "mma.m8n8k4.f64", "wgmma.m64n8k16.f32.f16.f16",
                     "wgmma.m64n8k32.f32.e4m3.e5m2", "mma.m16n8k16.f16.e5m2.e4m3.f16"):
        assert required in names


def test_the_h100_recordings_name_catalogue_instructions(hwdata):
    """Every instruction measured on the H100 is in the catalogue under its exact PTX, with
    the recording's formats and K (second line: "# a: e4m3 x16, b: e4m3 x16, c: ..., d: ...")."""
    files = sorted((hwdata / "H100-ptx").glob("*.txt"))
    assert files
    for path in files:
        with open(path) as f:
            ptx, formats = f.readline()[1:].strip(), f.readline()[1:].strip()
        instr = get_instruction(ptx)
        fields = dict(part.strip().split(": ") for part in formats.split(";")[0].split(","))
        assert fields == {"a": f"{instr.a_format} x{instr.k}", "b": f"{instr.b_format} x{instr.k}",
                          "c": instr.c_format, "d": instr.out_format}, path.name


@pytest.mark.parametrize("name", NAMES)
def test_maps_match_the_isa_tables(name):
    """The driver's maps equal the second transcription; each entry is held exactly once."""
    instr = get_instruction(name)
    for operand, fmap in (("a", instr.a), ("b", instr.b), ("acc", instr.acc)):
        thread, element, rows, cols = isa_maps(name)[operand]
        assert np.array_equal(fmap.rows[thread, element], rows), operand
        assert np.array_equal(fmap.cols[thread, element], cols), operand
        assert thread.size == fmap.rows.size
        hits = np.zeros(fmap.shape, dtype=int)
        np.add.at(hits, (fmap.rows, fmap.cols), 1)
        assert (hits == 1).all(), operand
        flat = fmap.slots[fmap.rows, fmap.cols]
        assert np.array_equal(flat.ravel(), np.arange(fmap.rows.size)), operand


@pytest.mark.parametrize("name", NAMES)
def test_tiles_round_trip(name):
    """pack_tiles -> the ISA tables read the same tiles back; D registers -> unpack_tiles."""
    instr = get_instruction(name)
    rng = np.random.default_rng(_seed("tiles", name))
    a = random_patterns(instr.a_format, (3, instr.m, instr.k), rng)
    b = random_patterns(instr.b_format, (3, instr.k, instr.n), rng)
    c = random_patterns(instr.c_format, (3, instr.m, instr.n), rng)
    images = cuda.pack_tiles(instr, a, b, c)
    assert images.a.dtype == cuda._dtype(instr.a_format)
    assert np.array_equal(read_back(name, "a", images.a, a.shape[1:]), a)
    assert np.array_equal(read_back(name, "b", images.b, b.shape[1:]), b)
    assert np.array_equal(read_back(name, "acc", images.c, c.shape[1:]), c)
    d = random_patterns(instr.out_format, (3, instr.m, instr.n), rng)
    registers = write_registers(name, d, cuda._dtype(instr.out_format))
    assert np.array_equal(cuda.unpack_tiles(instr, registers), d)
    diagonal = d[:, np.arange(8), np.arange(8)].reshape(-1)
    assert np.array_equal(cuda.unpack_rows(instr, registers), diagonal)


@pytest.mark.parametrize("name", NAMES)
def test_rows_through_a_simulated_warp(name):
    """Rows on the diagonal: the simulated hardware's D[r][r] is each row's exact result."""
    instr = get_instruction(name)
    rng = np.random.default_rng(_seed("rows", name))
    n = 11  # two tiles, the second padded with zero rows
    a = random_finite(instr.a_format, (n, instr.k), rng)
    b = random_finite(instr.b_format, (n, instr.k), rng)
    c = random_finite(instr.c_format, n, rng)
    images = cuda.pack_rows(instr, *cuda.pad_rows(*cuda.check_rows(instr, a, b, c)))
    assert images.tiles == 2
    got = cuda.unpack_rows(instr, simulate_warp(name, images))[:n]
    fa, fb, fc = (get_format(f) for f in (instr.a_format, instr.b_format, instr.c_format))
    out = get_format(instr.out_format)
    want = [out.from_fraction(fc.to_fraction(int(c[r])) + sum(
        fa.to_fraction(int(x)) * fb.to_fraction(int(y)) for x, y in zip(a[r], b[r])))
        for r in range(n)]
    assert got.tolist() == want


@pytest.mark.parametrize("name", NAMES)
def test_layout_proof_accepts_the_isa_and_refuses_a_wrong_map(name):
    instr = get_instruction(name)
    data = cuda.proof_data(instr, np.random.default_rng(_seed("proof", name)), tiles=3, rows=16)
    images = cuda.proof_images(instr, data)
    assert images.tiles == 3 + 2
    good = cuda.judge_proof(instr, data, simulate_warp(name, images))
    assert good.ok and good.entries == 3 * instr.m * instr.n and good.rows == 16
    bad = cuda.judge_proof(instr, data, simulate_warp(name, images, swap_a=True))
    assert bad.wrong > 0 and not bad.ok
    poisoned = np.full_like(simulate_warp(name, images), np.iinfo(cuda._dtype(
        instr.out_format)).max)
    verdict = cuda.judge_proof(instr, data, poisoned)
    assert verdict.poisoned == poisoned.nbytes // 4 and verdict.wrong == verdict.entries


def test_proof_data_is_exact_in_every_format():
    for instr in INSTRUCTIONS.values():
        data = cuda.proof_data(instr, np.random.default_rng(1))
        for fmt, values in ((instr.a_format, data.a), (instr.b_format, data.b),
                            (instr.c_format, data.c)):
            bits = cuda.integer_patterns(fmt, values)
            assert np.array_equal(cuda.pattern_values(fmt, bits), values)
        out = get_format(instr.out_format)
        assert np.abs(data.expected_tiles()).max() < 2 ** out.p


def test_check_rows_errors():
    instr = get_instruction("mma.m16n8k8.f32.f16.f16.f32")
    ok = np.zeros((2, 8), dtype=np.uint64)
    with pytest.raises(DeviceError, match=r"shape \(n, 8\)"):
        cuda.check_rows(instr, ok[:, :4], ok[:, :4], np.zeros(2, np.uint64))
    with pytest.raises(DeviceError, match="integer bit patterns"):
        cuda.check_rows(instr, ok.astype(float), ok, np.zeros(2, np.uint64))
    with pytest.raises(DeviceError, match="16-bit binary16"):
        cuda.check_rows(instr, ok + 0x10000, ok, np.zeros(2, np.uint64))
    with pytest.raises(DeviceError, match="32-bit binary32"):
        cuda.check_rows(instr, ok, ok, np.array([-1, 0]))


# =============================================================================================
# Names, architectures, discovery
# =============================================================================================

def test_unknown_instruction_lists_the_valid_ones():
    with pytest.raises(DeviceError) as err:
        get_instruction("mma.m16n8k16.f32.f8.f8.f32")
    assert isinstance(err.value, MmaprobeError)
    assert "mma.m16n8k32.f32.e4m3.e5m2.f32" in str(err.value)
    assert "wgmma.m64n8k8.f32.tf32.tf32" in str(err.value)


def test_supported_and_target_arch():
    f16, fp8 = "mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k32.f32.e4m3.e4m3.f32"
    wg = "wgmma.m64n8k16.f32.f16.f16"
    assert cuda.supported(f16, 80) and cuda.supported(f16, "sm_86") and cuda.supported(f16, 120)
    assert not cuda.supported(fp8, "sm_86") and cuda.supported(fp8, "8.9")
    assert cuda.supported(wg, "sm_90a") and cuda.supported(wg, 90) and cuda.supported(wg, "9.0")
    assert not cuda.supported(wg, "sm_90") and not cuda.supported(wg, 100)
    assert cuda.supported(fp8, "sm_90a")
    assert [cuda.target_arch(*cc) for cc in ((8, 0), (8, 9), (9, 0), (12, 0))] == \
        ["sm_80", "sm_89", "sm_90a", "sm_120"]
    with pytest.raises(DeviceError, match="8.0"):
        cuda.target_arch(7, 5)
    with pytest.raises(DeviceError, match="architecture"):
        cuda.supported(f16, "volta")


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_no_gpu_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("MMAPROBE_NVIDIA_SMI", str(tmp_path / "missing"))
    with pytest.raises(DeviceError, match="no NVIDIA GPU found"):
        cuda.discover_gpu()
    monkeypatch.setattr(cuda, "_LOCAL", None)
    with pytest.raises(DeviceError, match="no NVIDIA GPU found"):
        cuda.run_rows("mma.m8n8k4.f64", np.zeros((1, 4), np.uint64),
                      np.zeros((1, 4), np.uint64), np.zeros(1, np.uint64))
    no_driver = _script(tmp_path / "smi-fails", "#!/bin/sh\necho 'NVIDIA-SMI has failed "
                        "because it could not communicate with the NVIDIA driver.'\nexit 9\n")
    monkeypatch.setenv("MMAPROBE_NVIDIA_SMI", str(no_driver))
    with pytest.raises(DeviceError, match="exit 9.*could not communicate with the NVIDIA driver"):
        cuda.discover_gpu()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(DeviceError, match="CUDA_VISIBLE_DEVICES"):
        cuda.discover_gpu()


def test_discovery_reads_nvidia_smi(tmp_path, monkeypatch):
    smi = _script(tmp_path / "smi", "#!/bin/sh\necho \"$@\" > \"$0.args\"\n"
                  "echo 'NVIDIA H100 80GB HBM3, 9.0'\n")
    monkeypatch.setenv("MMAPROBE_NVIDIA_SMI", str(smi))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    gpu = cuda.discover_gpu()
    assert gpu == GpuInfo("NVIDIA H100 80GB HBM3", 9, 0) and gpu.arch == "sm_90a"
    assert "-i 2" in (tmp_path / "smi.args").read_text()


def test_missing_nvcc_and_failed_build(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAPROBE_NVCC", str(tmp_path / "no-nvcc"))
    with pytest.raises(DeviceError, match="nvcc not found"):
        cuda.find_nvcc()
    fake = _script(tmp_path / "nvcc", "#!/bin/sh\nif [ \"$1\" = --version ]; then echo "
                   "'fake nvcc'; exit 0; fi\necho 'harness.cu(7): error: no such luck' >&2\n"
                   "exit 1\n")
    with pytest.raises(DeviceError, match="(?s)failed to build.*sm_89.*no such luck"):
        cuda.build_harness("sm_89", nvcc=str(fake), cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache" / "cuda" / "sm_89").iterdir()) == []  # nothing half-built
    with pytest.raises(DeviceError, match="sm_89 or sm_90a"):
        cuda.build_harness("90", nvcc=str(fake), cache_dir=tmp_path / "cache")


# =============================================================================================
# End to end through a fake harness executable (the simulated warp behind the file protocol)
# =============================================================================================

def fake_harness_main(args, mode):
    """The harness's command line, computed by the simulated warp instead of a GPU."""
    if args == ["list"]:
        print(harness_table_text(), end="")
        return 0
    _, in_path, out_path = args
    data = Path(in_path).read_bytes()
    magic, version, threads, tiles, aw, bw, cw, dw, b_bytes, _, name = struct.unpack_from(
        "<8sIIQIIIII20s64s", data)
    assert magic == b"MMAPRIN1" and version == 1
    name = name.rstrip(b"\0").decode()
    instr = get_instruction(name)
    offset = 128
    images = []
    for words, fmt, per_tile in ((aw, instr.a_format, threads * aw * 4),
                                 (bw, instr.b_format, threads * bw * 4 + b_bytes),
                                 (cw, instr.c_format, threads * cw * 4)):
        dtype = cuda._dtype(fmt)
        chunk = np.frombuffer(data, dtype=dtype, count=tiles * per_tile // dtype.itemsize,
                              offset=offset)
        offset += tiles * per_tile
        holders = threads if words else 1  # wgmma's B image is one block of shared memory
        images.append(chunk.reshape(tiles, holders, per_tile // dtype.itemsize // holders))
    assert offset == len(data)
    d = simulate_warp(name, RegisterImages(*images), swap_a=(mode == "wrong"))
    header = struct.pack("<8sIIQI36s64s", b"MMAPROU1", 1, threads, tiles, dw, b"",
                         name.encode())
    Path(out_path).write_bytes(header + d.tobytes())
    return 0


def harness_table_text():
    lines = ["# name threads a_words b_words c_words d_words b_tile_bytes compiled (fake)"]
    for instr in INSTRUCTIONS.values():
        counts = (instr.threads, *(instr.words(x) for x in "abcd"), instr.b_tile_bytes, 1)
        lines.append(" ".join(map(str, (instr.name, *counts))))
    return "\n".join(lines) + "\n"


def fake_harness(tmp_path, mode="ok") -> CudaHarness:
    """A harness executable whose GPU is the simulated warp (mode 'wrong': A misread)."""
    tests = Path(__file__).resolve().parent
    script = _script(tmp_path / f"harness-{mode}", f"#!{sys.executable}\nimport sys\n"
                     f"sys.path.insert(0, {str(tests)!r})\n"
                     "from test_cuda_harness import fake_harness_main\n"
                     f"sys.exit(fake_harness_main(sys.argv[1:], {mode!r}))\n")
    return CudaHarness(script, GpuInfo("simulated H100", 9, 0))


def shell_harness(tmp_path, run_body, gpu=None) -> CudaHarness:
    """A harness that lists the catalogue and runs run_body (sh) for `run`."""
    gpu = gpu or GpuInfo("simulated H100", 9, 0)
    (tmp_path / "table.txt").write_text(harness_table_text())
    script = _script(tmp_path / "harness.sh", f"#!/bin/sh\nif [ \"$1\" = list ]; then cat "
                     f"'{tmp_path / 'table.txt'}'; exit 0; fi\n{run_body}\n")
    return CudaHarness(script, gpu)


@pytest.fixture
def fresh_proofs(monkeypatch):
    monkeypatch.setattr(cuda, "_PROVEN", {})


def test_run_rows_end_to_end(tmp_path, fresh_proofs):
    harness = fake_harness(tmp_path)
    rng = np.random.default_rng(7)
    for name in ("mma.m16n8k32.f32.e4m3.e5m2.f32", "wgmma.m64n8k8.f32.tf32.tf32"):
        instr = get_instruction(name)
        n = 21
        data = cuda.proof_data(instr, rng, tiles=0, rows=n)
        a = cuda.integer_patterns(instr.a_format, data.row_a)
        b = cuda.integer_patterns(instr.b_format, data.row_b)
        c = cuda.integer_patterns(instr.c_format, data.row_c)
        got = harness.run_rows(name, a.astype(np.uint64), b, c.tolist())
        assert got.dtype == np.uint64 and got.shape == (n,)
        assert np.array_equal(cuda.pattern_values(instr.out_format, got), data.expected_rows())
        proof = harness.prove_layout(name)
        assert proof.ok and proof.tiles == cuda.PROOF_TILES
    assert harness.run_rows("mma.m8n8k4.f64", np.zeros((0, 4), np.uint64),
                            np.zeros((0, 4), np.uint64), np.zeros(0, np.uint64)).shape == (0,)
    assert len(harness.instructions()) == 37
    assert not list(Path(tempfile.gettempdir()).glob("mmaprobe-cuda-*/in.bin"))


def test_wrong_layout_is_refused(tmp_path, fresh_proofs):
    harness = fake_harness(tmp_path, "wrong")
    name = "mma.m16n8k16.f32.bf16.bf16.f32"
    rows = np.zeros((8, 16), np.uint64)
    with pytest.raises(LayoutProofError, match=rf"{name}: .* (\d+) of 2048 D entries wrong"):
        harness.run_rows(name, rows, rows, np.zeros(8, np.uint64))


def test_harness_failures_are_clear(tmp_path, fresh_proofs):
    name = "mma.m16n8k8.f16.f16.f16.f16"
    rows = np.zeros((8, 8), np.uint64), np.zeros((8, 8), np.uint64), np.zeros(8, np.uint64)
    failing = shell_harness(tmp_path, "echo 'mmaprobe-harness: CUDA error in cudaMalloc: "
                            "cudaErrorMemoryAllocation' >&2; exit 3")
    with pytest.raises(DeviceError, match="exit 3.*cudaErrorMemoryAllocation"):
        failing.run_rows(name, *rows)
    with pytest.raises(DeviceError, match="within 1.0 s"):
        shell_harness(tmp_path, "exec sleep 30").run_rows(name, *rows, timeout=1)
    silent = shell_harness(tmp_path, "exit 0")
    with pytest.raises(DeviceError, match="wrote no output header"):
        silent.prove_layout(name)
    a100 = shell_harness(tmp_path, "exit 0", GpuInfo("A100", 8, 0))
    with pytest.raises(DeviceError, match=r"needs sm_89\+; this GPU \(A100\) is sm_80"):
        a100.run_rows("mma.m16n8k16.f32.e4m3.e4m3.f32", np.zeros((1, 16), np.uint64),
                      np.zeros((1, 16), np.uint64), np.zeros(1, np.uint64))
    with pytest.raises(DeviceError, match=r"needs sm_90a \(Hopper\)"):
        a100.prove_layout("wgmma.m64n8k16.f32.f16.f16")
    assert [i.name for i in a100.instructions()][-1] == "mma.m8n8k4.f64"


def test_output_file_checks(tmp_path):
    instr = get_instruction("mma.m16n8k8.f16.f16.f16.f16")
    header = struct.pack("<8sIIQI36s64s", b"MMAPROU1", 1, 32, 2, 2, b"", instr.name.encode())
    body = np.zeros((2, 32, 4), np.uint16).tobytes()
    path = tmp_path / "out.bin"
    path.write_bytes(header + body)
    assert cuda.read_output(path, instr, 2).shape == (2, 32, 4)
    path.write_bytes(header + body[:-2])
    with pytest.raises(DeviceError, match="wrote 510 bytes of D registers, expected 512"):
        cuda.read_output(path, instr, 2)
    path.write_bytes(header + body)
    with pytest.raises(DeviceError, match="does not match"):
        cuda.read_output(path, instr, 3)
    with pytest.raises(DeviceError, match="does not match"):
        cuda.read_output(path, get_instruction("mma.m16n8k8.f32.f16.f16.f32"), 2)


def test_table_disagreement_is_refused(tmp_path):
    (tmp_path / "table.txt").write_text(harness_table_text().replace(
        "mma.m8n8k4.f64 32 2 2 4 4 0 1", "mma.m8n8k4.f64 32 1 1 2 2 0 1"))
    script = _script(tmp_path / "h.sh", f"#!/bin/sh\ncat '{tmp_path / 'table.txt'}'\n")
    with pytest.raises(DeviceError, match="disagrees with the driver on mma.m8n8k4.f64"):
        CudaHarness(script).table()


# =============================================================================================
# The CUDA source compiles for sm_80, sm_89 and sm_90a (needs nvcc, not a GPU)
# =============================================================================================

NVCC = shutil.which("nvcc")
ARCHS = ("sm_80", "sm_89", "sm_90a")
COMPILED = {"sm_80": 9, "sm_89": 25, "sm_90a": 37}
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: harness.cu cannot "
                                "be compiled here")


def ptx_of(arch, directory) -> str:
    """harness.cu's device code for arch as PTX text (nvcc -ptx, no host compilation)."""
    source = directory / "harness.cu"
    source.write_bytes(cuda.harness_source())
    target = arch.removeprefix("sm_")
    ptx = directory / f"{arch}.ptx"
    subprocess.run([NVCC, "-std=c++17", "-ptx", f"-arch=compute_{target}",
                    f"-DMMAPROBE_TARGET_ARCH={target.rstrip('a')}", "-o", str(ptx),
                    str(source)], check=True, capture_output=True, timeout=600)
    return ptx


def issued_instructions(ptx_text: str) -> set[str]:
    issued = set()
    for line in ptx_text.splitlines():
        words = line.split()
        if words and words[0].startswith(("mma.sync.aligned.", "wgmma.mma_async.")):
            issued.add(words[0])
    return issued


@needs_nvcc
def test_device_code_for_sm90a_has_every_instruction(tmp_path):
    """The fast check (about 3 s): PTX for sm_90a issues exactly the catalogue's 37 PTX
    instructions, and ptxas accepts them all."""
    ptx = ptx_of("sm_90a", tmp_path)
    assert issued_instructions(ptx.read_text()) == {i.ptx for i in INSTRUCTIONS.values()}
    ptxas = Path(NVCC).resolve().parent / "ptxas"
    if not ptxas.is_file():
        pytest.skip(f"ptxas not found next to {NVCC}")
    done = subprocess.run([str(ptxas), "-arch=sm_90a", "-o", str(tmp_path / "h.cubin"),
                           str(ptx)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Each architecture's harness binary (through build_harness) and PTX, in parallel."""
    root = tmp_path_factory.mktemp("cuda-builds")

    def build(arch):
        binary = cuda.build_harness(arch, nvcc=NVCC, cache_dir=root / "cache")
        (root / arch).mkdir()
        return arch, (binary, ptx_of(arch, root / arch).read_text())

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(pool.map(build, ARCHS))


@pytest.mark.slow  # three full nvcc builds: 10-20 s on two cores
@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
def test_harness_compiles(builds, arch):
    binary, ptx = builds[arch]
    table = CudaHarness(binary).table()  # also checks every register count against the catalogue
    compiled = {name for name, row in table.items() if row[-1] == 1}
    assert compiled == {i.name for i in INSTRUCTIONS.values() if cuda.supported(i, arch)}
    assert issued_instructions(ptx) == {INSTRUCTIONS[name].ptx for name in compiled}
    assert len(compiled) == COMPILED[arch]


@pytest.mark.slow
@needs_nvcc
def test_build_cache_is_reused(builds):
    binary, _ = builds["sm_80"]
    before = binary.stat().st_mtime_ns
    again = cuda.build_harness("sm_80", nvcc=NVCC, cache_dir=binary.parents[3])
    assert again == binary and binary.stat().st_mtime_ns == before
    assert "-gencode=arch=compute_80,code=sm_80" in (binary.parent / "build.txt").read_text()
    assert not list(binary.parents[1].glob(".build-*"))


@pytest.mark.slow
@needs_nvcc
def test_compiled_harness_checks_its_input(builds, tmp_path):
    binary, _ = builds["sm_90a"]
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"not a batch" * 20)
    done = subprocess.run([str(binary), "run", str(bad), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not an mmaprobe input file" in done.stderr
    instr = get_instruction("wgmma.m64n8k32.f32.e4m3.e5m2")
    images = cuda.pack_rows(instr, np.zeros((8, 32), np.uint8), np.zeros((8, 32), np.uint8),
                            np.zeros(8, np.uint32))
    good = tmp_path / "good.bin"
    cuda.write_input(good, instr, images)
    good.write_bytes(good.read_bytes()[:-1])
    done = subprocess.run([str(binary), "run", str(good), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "truncated input" in done.stderr


@pytest.mark.slow
@needs_nvcc
def test_compiled_harness_without_a_gpu(builds):
    """On a machine with no GPU the harness fails with the CUDA error, exit 3."""
    try:
        cuda.discover_gpu()
        pytest.skip("a GPU is present: this test is for machines without one")
    except DeviceError:
        pass
    binary, _ = builds["sm_80"]
    instr = get_instruction("mma.m16n8k8.f32.f16.f16.f32")
    images = cuda.pack_rows(instr, np.zeros((8, 8), np.uint16), np.zeros((8, 8), np.uint16),
                            np.zeros(8, np.uint32))
    with pytest.raises(DeviceError, match="exit 3.*no usable CUDA device"):
        CudaHarness(binary).run_images(instr, images, timeout=60)
