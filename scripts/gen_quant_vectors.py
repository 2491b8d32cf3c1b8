#!/usr/bin/env python3
"""Generates the quantize / dequantize reference vectors in tests/quant/vectors/.

Run with the test venv (numpy + gguf; llama-cpp-python optional):
    /tmp/venvtest/bin/python scripts/gen_quant_vectors.py

Producers (independent of folio):
  gguf-<ver>  the PyPI `gguf` package: gguf.quants.quantize / dequantize
              (F16 via numpy astype, as gguf.quants.quantize does itself).
  ggml-<ver>  libggml-base from llama-cpp-python, through ctypes:
              quantize_row_<type>_ref (checked equal to ggml_quantize_chunk
              without imatrix) and dequantize_row_<type>. Optional: set
              FOLIO_GGML_LIB=/path/libggml-base.so (and FOLIO_GGML_TOOL=<name>
              to name its version in MANIFEST.txt) or install llama-cpp-python
              in the running interpreter. Without it those files are kept as
              committed.
  numpy       a one-line formula, only where neither tool has the function
              (Q8_1 dequantize: d * qs).

File format (all little-endian), one file per (type, operation, producer):
  char magic[4] = "FQV1"
  u32  type        GGUF / ggml type id
  u32  op          0 = quantize, 1 = dequantize
  u32  n_rows
  u32  n_per_row   elements per row (a multiple of the block size)
  u32  n_sections
  u64  section_bytes[n_sections]
  section payloads, back to back
Sections for op 0: [input f32 rows, expected packed bytes, dequantized f32 of
those bytes (empty if no producer)]; for op 1: [packed bytes, expected f32].

MANIFEST.txt lists every file: name, type, op, quantize producer, dequantize
producer, then a free-text note (rows left out and why).
"""

from __future__ import annotations

import ctypes
import glob
import os
import pathlib
import struct
import sys
from importlib import metadata

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "quant" / "vectors"
MAGIC = b"FQV1"
OP_QUANTIZE, OP_DEQUANTIZE = 0, 1
SIZE_LIMIT = 1_500_000

GGUF_TOOL = f"gguf-{metadata.version('gguf')}"

# (block size, bytes per block). gguf-py's GGML_QUANT_SIZES has Q8_1 as
# 4 + 4 + 32 (float d, float s), an old layout; ggml's block_q8_1 holds two
# halves: 2 + 2 + 32 (checked against ggml_type_size below when available).
SIZES = dict(gguf.GGML_QUANT_SIZES)
SIZES[T.Q8_1] = (32, 36)

ROW = 256  # elements per input row: one K super-block, eight legacy blocks

# Offsets of the f16 scale fields in each block (random blocks get sane values there).
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.Q8_1: [0, 2],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0],
}


# --------------------------------------------------------------------- inputs

def make_rows() -> dict[str, np.ndarray]:
    """Named input rows of ROW float32 values each, deterministic."""
    rng = np.random.default_rng(0x5F0110)
    f = np.float32
    rows: dict[str, np.ndarray] = {}
    rows["gauss"] = rng.standard_normal(ROW)
    rows["gauss_weights"] = rng.standard_normal(ROW) * 0.02
    rows["uniform"] = rng.uniform(-1, 1, ROW)
    rows["uniform_pos"] = rng.uniform(0, 4, ROW)
    rows["negative_only"] = -rng.uniform(0.1, 3, ROW)
    out = rng.standard_normal(ROW)
    out[rng.choice(ROW, 6, replace=False)] *= 40
    rows["outliers"] = out
    huge = rng.standard_normal(ROW) * 0.01
    huge[77] = 3000.0
    rows["one_huge"] = huge
    rows["lognormal"] = rng.choice([-1.0, 1.0], ROW) * rng.lognormal(0, 2, ROW)
    rows["tiny"] = rng.standard_normal(ROW) * 1e-30
    rows["f16_subnormal_scale"] = rng.standard_normal(ROW) * 3e-4
    rows["zeros"] = np.zeros(ROW)
    rows["neg_zeros"] = np.full(ROW, -0.0)
    mz = np.zeros(ROW)
    mz[0::2] = -0.0
    mz[64:96] = np.where(rng.random(32) < 0.5, -0.0, 0.0)  # all-zero block, random signs
    mz[96:128] = np.abs(rng.standard_normal(32))           # positives with signed zeros
    mz[96:128][rng.choice(32, 8, replace=False)] = -0.0
    mz[97] = 0.0
    mz[128:160] = -np.abs(rng.standard_normal(32))          # negatives with signed zeros
    mz[128:160][rng.choice(32, 8, replace=False)] = 0.0
    rows["mixed_zeros"] = mz
    rows["constant"] = np.full(ROW, 0.7)
    one = np.zeros(ROW)
    one[200] = -1.25
    rows["one_nonzero"] = one
    rows["grid"] = np.round(rng.standard_normal(ROW) * 8) * 0.25
    rows["ties"] = make_ties(rng)
    return {k: np.asarray(v, dtype=f) for k, v in rows.items()}


def make_ties(rng) -> np.ndarray:
    """Blocks whose scaled values land exactly on .5 (rounding ties) or on
    integers (truncation edges), per quantizer:
      block 0: amax 127 -> Q8_0 d = 1; the row's signed max is -127 so Q8_K
               scales by exactly 1 as well: half-integers are ties everywhere.
      block 1: max -8 -> Q4_0 d = 1      block 2: max -16 -> Q5_0 d = 1
      block 3: 0..15 -> Q4_1 d = 1       block 4: 0..31 -> Q5_1 d = 1
      block 5: -3..12 -> Q4_1 d = 1, min -3
      block 6: quarter steps              block 7: amax 63.5 -> Q8_0 id = 2."""
    half = lambda lo, hi, n: rng.choice(np.arange(lo * 2, hi * 2 + 1) / 2.0, n)
    b = [np.zeros(32) for _ in range(8)]
    b[0] = np.concatenate([[-127.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 3.5],
                           half(-120, 120, 22)])
    b[1] = np.concatenate([[-8.0, 7.5, -7.5, 0.5, -0.5], half(-7.5, 7.5, 27)])
    b[2] = np.concatenate([[-16.0, 15.5, -15.5, 0.5, -0.5], half(-15.5, 15.5, 27)])
    b[3] = np.concatenate([[0.0, 15.0, 0.5, 14.5, 7.5], half(0, 15, 27)])
    b[4] = np.concatenate([[0.0, 31.0, 0.5, 30.5, 15.5], half(0, 31, 27)])
    b[5] = np.concatenate([[-3.0, 12.0, -2.5, 11.5, 4.5], half(-3, 12, 27)])
    b[6] = rng.integers(-16, 17, 32) * 0.25
    b[7] = np.concatenate([[63.5, -63.5, 1.25, -1.25, 0.75, -0.75], rng.integers(-254, 255, 26) / 4])
    return np.concatenate(b)


def fp4_edges() -> dict[str, np.ndarray]:
    """Rows of MXFP4 / NVFP4 rounding edges:
      fp4_edges_mx, per 32-element block: a maximum just below a power of
        two (log2f rounds it up to the integer for large exponents), values
        exactly halfway between two E2M1 levels under the block's scale
        (ties go to the lower code) and exact levels of both signs.
      fp4_edges_nv, per 16-element sub-block: amax / 6 exactly halfway
        between two UE4M3 mantissas (the scale rounds up), in the UE4M3
        subnormal range or above 448 (clamped), then level midpoints and
        levels under the decoded scale."""
    rng = np.random.default_rng(0xF4)
    f = np.float32
    half_levels = np.array([0.5, 1.5, 2.5, 3.5, 5, 7, 10], dtype=f)  # midpoints of 0,1,2,3,4,6,8,12
    levels = np.array([0, 1, 2, 3, 4, 6, 8, 12], dtype=f)

    def fill(amax, d, n):
        mids = half_levels[half_levels * d < amax]
        return np.concatenate([[amax], rng.choice(mids, n // 2) * d * rng.choice([-1, 1], n // 2),
                               rng.choice(levels, n - 1 - n // 2) * d * rng.choice([-1, 1], n - 1 - n // 2)])

    mx = []
    for k in (-3, 0, 1, 5, 10, 20, 40, 100):
        amax = np.nextafter(f(2.0) ** k, f(0))
        d = mxfp4_half(int(np.floor(np.log2(amax)) - 2 + 127))
        mx.append(fill(amax, d, 32))
    nv = []
    scales = [(1 + 1 / 16) * 2.0**-3, (1 + 15 / 16) * 2.0**2, 3 * 2.0**-10, 2.5 * 2.0**-9,
              (1 + 7 / 16) * 2.0**8, 500.0, (1 + 3 / 16) * 2.0**-6, 0.75 * 2.0**-9,
              1.0, 0.25, (1 + 5 / 16) * 2.0**0, 2.0**-12, 6.0, 447.0, 449.0, (1 + 9 / 16) * 2.0**-1]
    for x in scales:
        amax = f(6 * x)
        ue = quants.NVFP4.fp32_to_ue4m3(np.array([amax / f(6)], dtype=f))
        d = float(quants.NVFP4.ue4m3_to_fp32(ue)[0])
        nv.append(fill(amax, d, 16))
    return {"fp4_edges_mx": np.concatenate(mx).astype(f), "fp4_edges_nv": np.concatenate(nv).astype(f)}


def mxfp4_half(e: int) -> float:
    return float(quants.MXFP4.e8m0_to_fp32_half(np.array([e], dtype=np.uint8))[0])


def float_specials(signaling: bool) -> np.ndarray:
    """F16 / BF16 conversion edges, padded to a row with random values."""
    bits = [0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC02000, 0x7FFFFFFF,
            0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,
            0x3F808000, 0x3F818000, 0x3F808001, 0xBF808000]
    if signaling:
        bits += [0x7F800001, 0xFFA00000, 0x7FA00000, 0x7F802000]
    vals = np.array(bits, dtype=np.uint32).view(np.float32).tolist()
    vals += [65504.0, 65519.99, 65520.0, -65520.0, 1e-8, -1e-8, 2.0**-24, 2.0**-25,
             1.5 * 2.0**-24, 2.0**-25 * 1.0000001, 6.1e-5, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11,
             -0.0, 0.0, 1e30, -1e-30]
    rng = np.random.default_rng(0xF16)
    vals += (rng.standard_normal(ROW - len(vals)) * 10.0 ** rng.uniform(-9, 6, ROW - len(vals))).tolist()
    return np.array(vals, dtype=np.float32)


def random_blocks(qtype: T, n_blocks: int, rng) -> np.ndarray:
    """Random packed blocks whose f16 scales are finite (zeros, subnormals,
    the f16 maximum and ordinary values of both signs included)."""
    block, size = SIZES[qtype]
    data = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    special = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00],
                       dtype=np.uint16)
    for off in F16_FIELDS.get(qtype, []):
        vals = (rng.standard_normal(n_blocks) * 10.0 ** rng.uniform(-5, 1, n_blocks)).astype(np.float16)
        h = vals.view(np.uint16).copy()
        h[: len(special)] = np.roll(special, off)  # a different special per field
        data[:, off:off + 2] = h.reshape(-1, 1).view(np.uint8).reshape(n_blocks, 2)
    if qtype == T.Q8_K:
        d = (rng.standard_normal(n_blocks) * 10.0 ** rng.uniform(-6, 2, n_blocks)).astype(np.float32)
        d[:3] = [0.0, -0.0, 1.0]
        data[:, 0:4] = d.view(np.uint8).reshape(n_blocks, 4)
    return data


# ------------------------------------------------------------------ ggml (ctypes)

class Ggml:
    def __init__(self, path: str):
        self.lib = ctypes.CDLL(path)
        self.path = path
        try:
            import llama_cpp  # noqa: F401
            self.tool = f"ggml-llama-cpp-python-{metadata.version('llama-cpp-python')}"
        except Exception:
            self.tool = os.environ.get("FOLIO_GGML_TOOL", "ggml")
        L = self.lib
        L.ggml_quantize_chunk.restype = ctypes.c_size_t
        L.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                          ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        L.ggml_quantize_init.argtypes = [ctypes.c_int]
        L.ggml_type_size.restype = ctypes.c_size_t
        L.ggml_type_size.argtypes = [ctypes.c_int]

    def type_size(self, t: T) -> int:
        return self.lib.ggml_type_size(int(t))

    def _fn(self, name):
        fn = getattr(self.lib, name)
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        return fn

    def quantize_ref(self, t: T, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        block, size = SIZES[t]
        out = np.zeros(x.size // block * size, dtype=np.uint8)  # zeroed: Q8_K skips bsums of zero blocks
        self._fn(f"quantize_row_{t.name.lower().replace('_k', '_K')}_ref")(
            x.ctypes.data, out.ctypes.data, x.size)
        return out

    def quantize_chunk(self, t: T, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        block, size = SIZES[t]
        out = np.zeros(x.shape[0] * (x.shape[1] // block) * size, dtype=np.uint8)
        self.lib.ggml_quantize_init(int(t))
        n = self.lib.ggml_quantize_chunk(int(t), x.ctypes.data, out.ctypes.data, 0, x.shape[0], x.shape[1], None)
        assert n == out.size, (t.name, n, out.size)
        return out

    def dequantize(self, t: T, data: np.ndarray) -> np.ndarray:
        data = np.ascontiguousarray(data, dtype=np.uint8)
        block, size = SIZES[t]
        out = np.zeros(data.size // size * block, dtype=np.float32)
        self._fn(f"dequantize_row_{t.name.lower().replace('_k', '_K')}")(
            data.ctypes.data, out.ctypes.data, out.size)
        return out


def find_ggml() -> Ggml | None:
    cands = [os.environ.get("FOLIO_GGML_LIB", "")]
    for sp in sys.path:
        cands += sorted(glob.glob(os.path.join(sp, "llama_cpp", "lib", "libggml-base.so")))
    for c in cands:
        if c and os.path.exists(c):
            try:
                return Ggml(c)
            except OSError as e:
                print(f"note: cannot load {c}: {e}")
    return None


# ------------------------------------------------------------------------ output

class Writer:
    def __init__(self):
        self.manifest: list[str] = []
        self.total = 0

    def write(self, name: str, t: T, op: int, n_rows: int, n_per_row: int, sections: list[np.ndarray],
              qtool: str, dqtool: str, note: str = "") -> None:
        payload = [np.ascontiguousarray(s).tobytes() for s in sections]
        head = MAGIC + struct.pack("<5I", int(t), op, n_rows, n_per_row, len(payload))
        head += struct.pack(f"<{len(payload)}Q", *[len(p) for p in payload])
        blob = head + b"".join(payload)
        (OUT / name).write_bytes(blob)
        self.total += len(blob)
        opname = "quantize" if op == OP_QUANTIZE else "dequantize"
        self.manifest.append(f"{name} {t.name.lower()} {opname} {qtool} {dqtool} {note}".rstrip())


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    ggml = find_ggml()
    print(f"gguf: {GGUF_TOOL}; ggml: {ggml.path if ggml else 'not available'}")
    w = Writer()
    # Without ggml, keep the committed ggml-produced files (and their manifest
    # lines); everything else is regenerated from scratch.
    kept: list[str] = []
    manifest = OUT / "MANIFEST.txt"
    if not ggml and manifest.exists():
        kept = [ln for ln in manifest.read_text().splitlines()
                if ln and not ln.startswith("#") and ".ggml." in ln.split()[0] and (OUT / ln.split()[0]).exists()]
    keep_files = {ln.split()[0] for ln in kept}
    for old in OUT.glob("*.bin"):
        if old.name not in keep_files:
            old.unlink()
    w.manifest.extend(kept)
    w.total += sum((OUT / f).stat().st_size for f in keep_files)
    rows = make_rows()
    names = list(rows)
    findings: list[str] = []

    def stack(keep):
        sel = [n for n in names if keep(n)]
        return sel, np.stack([rows[n] for n in sel])

    # -------- float types: quantize (all rows + specials) and dequantize of random bits
    spec_q, spec_s = float_specials(False), float_specials(True)
    for t, extra in ((T.F16, [spec_q]), (T.BF16, [spec_q, spec_s])):
        x = np.concatenate([np.stack([rows[n] for n in names])] + [e[None, :] for e in extra])
        with np.errstate(over="ignore"):  # 1e30 and FLT_MAX overflow to inf on purpose
            q = x.astype(np.float16).view(np.uint8) if t == T.F16 else quants.quantize(x, t)
        dq = quants.dequantize(q, t)
        row_names = names + ["float_specials", "float_specials_snan"][: len(extra)]
        note = f"rows={','.join(row_names)}"
        if t == T.F16:
            note += (" signaling-NaN inputs only for bf16 (numpy keeps the sNaN payload in f32->f16, "
                     "folio quiets it as F16C hardware does)")
        w.write(f"{t.name.lower()}.quantize.gguf.bin", t, OP_QUANTIZE, x.shape[0], ROW, [x, q, dq],
                GGUF_TOOL, GGUF_TOOL, note)
    rng = np.random.default_rng(0xDE0)
    for t in (T.F32, T.F16, T.BF16):
        nbytes = 4 if t == T.F32 else 2
        raw = rng.integers(0, 256, 1024 * nbytes, dtype=np.uint8)
        if t == T.F16:
            raw[:8] = np.array([0x7C01, 0xFE00, 0x0001, 0x83FF], dtype=np.uint16).view(np.uint8)
        dq = quants.dequantize(raw, t)
        w.write(f"{t.name.lower()}.dequantize.gguf.bin", t, OP_DEQUANTIZE, 1, 1024, [raw, dq], "-", GGUF_TOOL)

    # -------- legacy quantizers in the gguf package
    # Rows left out, per type: the gguf package and folio both define these,
    # but NumPy's min/max reduction order decides the sign of a zero minimum.
    gguf_skip = {T.Q4_1: {"mixed_zeros"}, T.Q5_1: {"mixed_zeros"}}
    # ggml C starts the signed max at +0.0 (d = -0.0 for an all-zero block);
    # the gguf package takes the first element (d = +0.0 when it is -0.0).
    ggml_skip = {T.Q4_0: {"neg_zeros", "mixed_zeros"}, T.Q5_0: {"neg_zeros", "mixed_zeros"}}
    for t in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0):
        skip = gguf_skip.get(t, set())
        sel, x = stack(lambda n: n not in skip)
        q = quants.quantize(x, t)
        dq = quants.dequantize(q, t)
        note = f"rows={','.join(sel)}" + (f" skipped={','.join(sorted(skip))}(numpy signed-zero min/max order)" if skip else "")
        w.write(f"{t.name.lower()}.quantize.gguf.bin", t, OP_QUANTIZE, len(sel), ROW, [x, q, dq.reshape(x.shape)],
                GGUF_TOOL, GGUF_TOOL, note)
        if ggml:
            # Cross-check ggml against the gguf package on every row and record the differences.
            _, xa = stack(lambda n: True)
            qa_gguf = quants.quantize(xa, t).reshape(len(names), -1)
            qa_ggml = ggml.quantize_ref(t, xa).reshape(len(names), -1)
            assert np.array_equal(qa_ggml.ravel(), ggml.quantize_chunk(t, xa)), t.name
            diff = [names[i] for i in range(len(names)) if not np.array_equal(qa_gguf[i], qa_ggml[i])]
            findings.append(f"{t.name}: gguf vs ggml quantize differ on rows {diff or 'none'}")
            gskip = ggml_skip.get(t, set())
            sel, x = stack(lambda n: n not in gskip)
            q = ggml.quantize_ref(t, x)
            dq = quants.dequantize(q.reshape(x.shape[0], -1), t)
            note = f"rows={','.join(sel)}" + (f" skipped={','.join(sorted(gskip))}(ggml: all-zero block d=-0.0; folio follows gguf)" if gskip else "")
            w.write(f"{t.name.lower()}.quantize.ggml.bin", t, OP_QUANTIZE, len(sel), ROW, [x, q, dq.reshape(x.shape)],
                    ggml.tool, GGUF_TOOL, note)

    # -------- quantizers only ggml has: Q8_1, K-quants, Q8_K
    if ggml:
        assert ggml.type_size(T.Q8_1) == SIZES[T.Q8_1][1]
        for t in (T.Q8_1, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K):
            assert ggml.type_size(t) == SIZES[t][1], t.name
            sel, x = stack(lambda n: True)
            q = ggml.quantize_ref(t, x)
            if t not in (T.Q8_1, T.Q8_K):  # activation formats: not in ggml_quantize_chunk
                assert np.array_equal(q, ggml.quantize_chunk(t, x)), t.name
            if t == T.Q8_1:  # no dequantizer in either tool: d * qs
                blocks = q.reshape(-1, 36)
                d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
                dq, dqtool = (d * blocks[:, 4:].view(np.int8).astype(np.float32)).ravel(), "numpy"
            elif t == T.Q8_K:
                dq, dqtool = ggml.dequantize(t, q), ggml.tool
            else:
                dq, dqtool = quants.dequantize(q.reshape(x.shape[0], -1), t).ravel(), GGUF_TOOL
                assert bits_equal(dq, ggml.dequantize(t, q)), t.name
            w.write(f"{t.name.lower()}.quantize.ggml.bin", t, OP_QUANTIZE, len(sel), ROW,
                    [x, q, dq.reshape(x.shape)], ggml.tool, dqtool, f"rows={','.join(sel)}")
    else:
        print(f"warning: no libggml-base: kept {len(kept)} committed ggml files, not regenerated")

    # -------- FP4: MXFP4 quantize in the gguf package (and ggml), NVFP4 in ggml only.
    # Every row plus fp4_edges (level ties, log2f and UE4M3 rounding edges).
    edges = fp4_edges()
    fp4_names = names + list(edges)
    xf = np.stack([rows[n] for n in names] + list(edges.values()))
    q = quants.quantize(xf, T.MXFP4)
    dq = quants.dequantize(q, T.MXFP4)
    w.write("mxfp4.quantize.gguf.bin", T.MXFP4, OP_QUANTIZE, xf.shape[0], ROW, [xf, q, dq.reshape(xf.shape)],
            GGUF_TOOL, GGUF_TOOL, f"rows={','.join(fp4_names)}")
    if ggml:
        for t in (T.MXFP4, T.NVFP4):
            assert ggml.type_size(t) == SIZES[t][1], t.name
            qg = ggml.quantize_ref(t, xf)
            assert np.array_equal(qg, ggml.quantize_chunk(t, xf)), t.name
            if t == T.MXFP4:
                qa = quants.quantize(xf, t).reshape(len(fp4_names), -1)
                diff = [fp4_names[i] for i in range(len(fp4_names))
                        if not np.array_equal(qa[i], qg.reshape(len(fp4_names), -1)[i])]
                findings.append(f"{t.name}: gguf vs ggml quantize differ on rows {diff or 'none'}")
                continue
            dq = quants.dequantize(qg.reshape(xf.shape[0], -1), t)
            assert bits_equal(dq.ravel(), ggml.dequantize(t, qg)), t.name
            w.write(f"{t.name.lower()}.quantize.ggml.bin", t, OP_QUANTIZE, xf.shape[0], ROW,
                    [xf, qg, dq.reshape(xf.shape)], ggml.tool, GGUF_TOOL, f"rows={','.join(fp4_names)}")

    # -------- dequantize of random blocks, every type with a dequantizer
    rng = np.random.default_rng(0xB10C)
    for t in (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K,
              T.Q6_K, T.Q8_K, T.IQ4_NL, T.IQ4_XS, T.MXFP4, T.NVFP4):
        block, size = SIZES[t]
        n_blocks = 2048 // block if block <= 64 else 12
        data = random_blocks(t, n_blocks, rng)
        if t == T.Q8_1:
            d = data[:, 0:2].copy().view(np.float16).astype(np.float32)
            dq, tool = (d * data[:, 4:].view(np.int8).astype(np.float32)).ravel(), "numpy"
        elif t == T.Q8_K:
            if ggml:
                dq, tool = ggml.dequantize(t, data.ravel()), ggml.tool
            else:
                d = data[:, 0:4].copy().view(np.float32)
                dq, tool = (d * data[:, 4:260].view(np.int8).astype(np.float32)).ravel(), "numpy"
        else:
            dq, tool = quants.dequantize(data, t).ravel(), GGUF_TOOL
            if ggml:
                same = bits_equal(dq, ggml.dequantize(t, data.ravel()))
                findings.append(f"{t.name}: dequantize random blocks gguf == ggml: {same}")
                assert same, t.name
        w.write(f"{t.name.lower()}.dequantize.{tool.split('-')[0]}.bin", t, OP_DEQUANTIZE, n_blocks, block,
                [data.ravel(), dq], "-", tool)

    header = [
        "# folio quant reference vectors, written by scripts/gen_quant_vectors.py (format in its docstring).",
        "# columns: file type op quantize_producer dequantize_producer note",
        f"# gguf: {GGUF_TOOL} (numpy {np.__version__}); ggml: {ggml.tool if ggml else 'not available'}",
    ] + [f"# cross-check: {f}" for f in findings]
    (OUT / "MANIFEST.txt").write_text("\n".join(header + w.manifest) + "\n")
    print("\n".join(findings))
    print(f"{len(w.manifest)} files, {w.total} bytes")
    if w.total > SIZE_LIMIT:
        print(f"error: vectors exceed {SIZE_LIMIT} bytes")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
