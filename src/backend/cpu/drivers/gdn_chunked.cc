#include "backend/cpu/drivers/gdn_chunked.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/drivers/parallel.h"
#include "core/check.h"

namespace folio::cpu {
namespace {

constexpr int64_t kC = kGdnChunk;  // leading dimension of every C x C matrix and of kt
// Units processed together (a group, see run_units): up to 16, and up to
// 4 MiB of states and staged rows per thread (16 heads of 128: 3 MiB).
constexpr int64_t kGroupBytes = 4 << 20;
constexpr int64_t kMaxGroup = 16;
constexpr double kMinLogFactor = -80.0;  // decay factors below e^-80 are flushed to 0

// 64-byte aligned float arrays carved from one allocation (each take rounds
// up to 16 floats: the sizes below count 16 extra per array).
class Arena {
 public:
  explicit Arena(int64_t floats) : mem_(static_cast<size_t>(floats) + 16, 0.0f) {
    next_ = mem_.data() + (16 - reinterpret_cast<uintptr_t>(mem_.data()) / 4 % 16) % 16;
  }
  float* take(int64_t n) {
    float* p = next_;
    next_ += (n + 15) / 16 * 16;
    FOLIO_CHECK(next_ <= mem_.data() + mem_.size());
    return p;
  }

 private:
  std::vector<float> mem_;
  float* next_;
};

// Scratch of one thread for one chunk of one unit.
struct Scratch {
  float* kt;        // k transposed [S_k][kC] (columns past the chunk zero)
  float* w;         // -W [C][S_k]
  float* d;         // U, then D [C][S_v]
  float *kk, *qk;   // k_t.k_j, q_t.k_j [C][kC]
  float* e;         // e^{G_t - G_j} rows, then gamma_j [C + 1][kC]
  float *a, *p;     // A (strictly lower), e^{G_t - G_j} q_t.k_j (lower) [C][kC]
  float* t;         // (I + A)^{-1} [C][kC]
  float *tb, *tbg;  // T diag(b), -T diag(b gamma) [C][kC]
  static int64_t floats(int64_t sk, int64_t sv) {
    return sk * kC + kC * sk + kC * sv + 8 * kC * kC + kC + 16 * 11;
  }
  Scratch(Arena& ar, int64_t sk, int64_t sv) {
    kt = ar.take(sk * kC), w = ar.take(kC * sk), d = ar.take(kC * sv);
    kk = ar.take(kC * kC), qk = ar.take(kC * kC), e = ar.take((kC + 1) * kC);
    a = ar.take(kC * kC), p = ar.take(kC * kC), t = ar.take(kC * kC);
    tb = ar.take(kC * kC), tbg = ar.take(kC * kC);
  }
};

// One (sequence, value head): its state and the current chunk's rows.
struct Unit {
  int64_t s = 0, h = 0, kh = 0;
  float* st = nullptr;  // state, transposed: St[i][v] = S[v][i], [S_k][S_v]
  float *q, *k;         // normalised (q scaled) rows [C][S_k]
  float *v, *o;         // v rows, outputs [C][S_v]
  double cum[kC];       // G_t: log decay summed from the chunk start
  float b[kC];          // beta
  static int64_t floats(int64_t sk, int64_t sv) { return sk * sv + 2 * kC * (sk + sv) + 16 * 5; }
  Unit(Arena& ar, int64_t sk, int64_t sv) {
    st = ar.take(sk * sv), q = ar.take(kC * sk), k = ar.take(kC * sk);
    v = ar.take(kC * sv), o = ar.take(kC * sv);
  }
};

// Row t of x [rows][n] times f[t].
void gdn_chunk_scale_rows(float* x, int64_t rows, int64_t n, const float* f) {
  for (int64_t t = 0; t < rows; ++t) {
    float* xt = x + t * n;
    const float ft = f[t];
    for (int64_t r = 0; r < n; ++r) xt[r] *= ft;
  }
}

// One chunk of c tokens of a unit whose rows are staged: writes u.o and
// advances u.st (the maths in the header comment).
void run_chunk(Unit& u, int64_t c, int64_t sk, int64_t sv, const GdnChunkOps& ops, Scratch& x) {
  const int64_t cp = (c + ops.n_multiple - 1) / ops.n_multiple * ops.n_multiple;
  ops.transpose(u.k, sk, x.kt, kC, c, sk);
  for (int64_t i = 0; i < sk && cp > c; ++i) std::fill(x.kt + i * kC + c, x.kt + i * kC + cp, 0.0f);

  // k_t.k_j and q_t.k_j (lower triangles).
  GdnGemm gm;
  gm.m = c, gm.n = cp, gm.p = sk, gm.b = x.kt, gm.ldb = kC, gm.ldc = kC, gm.lda = sk;
  gm.lower_c = true;
  gm.a = u.k, gm.c = x.kk;
  ops.gemm(gm);
  gm.a = u.q, gm.c = x.qk;
  ops.gemm(gm);

  // Decays: e[t][j] = e^{G_t - G_j} (j <= t), e[c][j] = gamma_j; the
  // differences in double, rounded once. Factors below e^-80 (1.8e-35) are
  // flushed to zero, so that no subnormal reaches the products (a
  // microcode assist per instruction on some CPUs); zero elsewhere.
  auto log_factor = [](double x) {
    return x < kMinLogFactor ? -std::numeric_limits<float>::infinity() : static_cast<float>(x);
  };
  for (int64_t t = 0; t < c; ++t) {
    float* row = x.e + t * kC;
    for (int64_t j = 0; j <= t; ++j) row[j] = log_factor(u.cum[t] - u.cum[j]);
    std::fill(row + t + 1, row + kC, -std::numeric_limits<float>::infinity());
  }
  float* gamma = x.e + c * kC;
  for (int64_t j = 0; j < c; ++j) gamma[j] = log_factor(u.cum[j]);
  std::fill(gamma + c, gamma + kC, -std::numeric_limits<float>::infinity());
  ops.exp(x.e, x.e, (c + 1) * kC);
  const float* to_end = x.e + (c - 1) * kC;  // e^{G_{c-1} - G_j}

  for (int64_t t = 0; t < c; ++t) {
    const float* et = x.e + t * kC;
    float *at = x.a + t * kC, *pt = x.p + t * kC;
    const float *kkt = x.kk + t * kC, *qkt = x.qk + t * kC;
    const float bt = u.b[t];
    for (int64_t j = 0; j < t; ++j) at[j] = bt * (et[j] * kkt[j]);
    std::fill(at + t, at + kC, 0.0f);
    for (int64_t j = 0; j <= t; ++j) pt[j] = et[j] * qkt[j];
    std::fill(pt + t + 1, pt + kC, 0.0f);
  }
  ops.lower_inverse(x.a, x.t, c);
  float bg[kC];
  for (int64_t j = 0; j < c; ++j) bg[j] = -(u.b[j] * gamma[j]);
  for (int64_t t = 0; t < c; ++t) {
    const float* tt = x.t + t * kC;
    float *tbt = x.tb + t * kC, *tgt = x.tbg + t * kC;
    for (int64_t j = 0; j < c; ++j) {  // columns >= c are never read (p = c)
      tbt[j] = tt[j] * u.b[j];
      tgt[j] = tt[j] * bg[j];
    }
  }

  // U = T diag(b) V into d; -W = -T diag(b gamma) K.
  GdnGemm gu;
  gu.m = c, gu.n = sv, gu.p = c, gu.a = x.tb, gu.lda = kC, gu.b = u.v, gu.ldb = sv, gu.c = x.d,
  gu.ldc = sv, gu.lower_a = true;
  ops.gemm(gu);
  GdnGemm gw;
  gw.m = c, gw.n = sk, gw.p = c, gw.a = x.tbg, gw.lda = kC, gw.b = u.k, gw.ldb = sk, gw.c = x.w,
  gw.ldc = sk, gw.lower_a = true;
  ops.gemm(gw);
  // D = U - W St;  O = Q St.
  GdnGemm gs;
  gs.m = c, gs.n = sv, gs.p = sk, gs.a = x.w, gs.lda = sk, gs.b = u.st, gs.ldb = sv, gs.c = x.d,
  gs.ldc = sv, gs.beta = 1.0f;
  ops.gemm(gs);
  gs.a = u.q, gs.c = u.o, gs.beta = 0.0f;
  ops.gemm(gs);
  // O = diag(gamma) O + P D.
  gdn_chunk_scale_rows(u.o, c, sv, gamma);
  GdnGemm go;
  go.m = c, go.n = sv, go.p = c, go.a = x.p, go.lda = kC, go.b = x.d, go.ldb = sv, go.c = u.o,
  go.ldc = sv, go.beta = 1.0f, go.lower_a = true;
  ops.gemm(go);
  // St = gamma_{c-1} St + Kt diag(e^{G_{c-1} - G_j}) D.
  gdn_chunk_scale_rows(x.d, c, sv, to_end);
  GdnGemm gt;
  gt.m = sk, gt.n = sv, gt.p = c, gt.a = x.kt, gt.lda = kC, gt.b = x.d, gt.ldb = sv, gt.c = u.st,
  gt.ldc = sv, gt.beta = gamma[c - 1];
  ops.gemm(gt);
}

// Units [u0, u1) of the op (unit i = sequence i / H_v, value head i % H_v),
// a group of units at a time, chunk by chunk: per chunk, the group's rows
// are staged token by token, each unit computes its chunk, and the outputs
// go back token by token. One head's rows are a whole token apart in memory
// (8 KiB for 16 heads of 128); reading the neighbouring heads' rows
// together turns those scattered misses into runs the hardware prefetchers
// follow (measured: 35% less time than unit by unit, 16 heads of 128).
void run_units(const Op& op, const GdnChunkOps& ops, int64_t u0, int64_t u1) {
  const auto& p = op.p<GatedDeltaNetParams>();
  const TensorView &q = op.src[0], &k = op.src[1], &v = op.src[2];  // [S, H, T, n_seq]
  const TensorView &g = op.src[3], &beta = op.src[4];               // [H_v, T, n_seq]
  const TensorView &state = op.src[5], &state_out = op.dst2, &out = op.dst;
  const int64_t sk = q.ne[0], hk = q.ne[1], n_t = q.ne[2], sv = v.ne[0], hv = v.ne[1];
  const int64_t ratio = hv / hk;
  const int64_t unit_bytes = Unit::floats(sk, sv) * 4;
  const int64_t group = std::clamp<int64_t>(kGroupBytes / unit_bytes, 1, kMaxGroup);
  const int64_t n_group = std::min(group, u1 - u0);
  Arena ar(Scratch::floats(sk, sv) + n_group * Unit::floats(sk, sv));
  Scratch x(ar, sk, sv);
  std::vector<Unit> units;
  for (int64_t i = 0; i < n_group; ++i) units.emplace_back(ar, sk, sv);

  for (int64_t g0 = u0; g0 < u1; g0 += group) {
    const int64_t n = std::min(group, u1 - g0);
    for (int64_t i = 0; i < n; ++i) {
      Unit& u = units[static_cast<size_t>(i)];
      u.s = (g0 + i) / hv, u.h = (g0 + i) % hv;
      u.kh = p.head_map == HeadMap::kDiv ? u.h / ratio : u.h % hk;
      ops.transpose(state.row<const float>(0, u.h, u.s), state.nb[1] / 4, u.st, sv, sv, sk);
    }
    for (int64_t t0 = 0; t0 < n_t; t0 += kC) {
      const int64_t c = std::min(kC, n_t - t0);
      for (int64_t t = 0; t < c; ++t) {
        for (int64_t i = 0; i < n; ++i) {
          Unit& u = units[static_cast<size_t>(i)];
          ops.normalise(q.row<const float>(u.kh, t0 + t, u.s), u.q + t * sk, sk, p.eps,
                        p.l2_norm_qk, p.scale);
          ops.normalise(k.row<const float>(u.kh, t0 + t, u.s), u.k + t * sk, sk, p.eps,
                        p.l2_norm_qk, 1.0f);
          std::memcpy(u.v + t * sv, v.row<const float>(u.h, t0 + t, u.s),
                      static_cast<size_t>(sv) * sizeof(float));
          const double gt = *g.at<const float>(u.h, t0 + t, u.s);
          u.cum[t] = t == 0 ? gt : u.cum[t - 1] + gt;
          u.b[t] = *beta.at<const float>(u.h, t0 + t, u.s);
        }
      }
      for (int64_t i = 0; i < n; ++i) run_chunk(units[static_cast<size_t>(i)], c, sk, sv, ops, x);
      for (int64_t t = 0; t < c; ++t) {
        for (int64_t i = 0; i < n; ++i) {
          const Unit& u = units[static_cast<size_t>(i)];
          std::memcpy(out.row<float>(u.h, t0 + t, u.s), u.o + t * sv,
                      static_cast<size_t>(sv) * sizeof(float));
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const Unit& u = units[static_cast<size_t>(i)];
      ops.transpose(u.st, sv, state_out.row<float>(0, u.h, u.s), state_out.nb[1] / 4, sk, sv);
    }
  }
}

// ---- Portable primitives.

// Register tiles of 4 rows x 8 columns in GCC / Clang generic vectors (no
// ISA intrinsics: SSE2, NEON or whatever the target has), so that a tile's
// accumulators stay in registers across the p loop; edges row by row.
using V4 = float __attribute__((vector_size(16)));
constexpr int64_t kPortMr = 4, kPortNr = 8;

V4 load4(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
void store4(float* p, V4 v) {
  std::memcpy(p, &v, sizeof(v));
}

void gemm_tile_portable(const GdnGemm& g, int64_t r0, int64_t n0) {
  V4 acc[kPortMr][2];
  for (int64_t r = 0; r < kPortMr; ++r) {
    const float* c = g.c + (r0 + r) * g.ldc + n0;
    for (int j = 0; j < 2; ++j) acc[r][j] = g.beta == 0.0f ? V4{} : load4(c + 4 * j) * g.beta;
  }
  const int64_t pe = g.lower_a ? std::min(g.p, r0 + kPortMr) : g.p;
  for (int64_t q = 0; q < pe; ++q) {
    const float* b = g.b + q * g.ldb + n0;
    const V4 b0 = load4(b), b1 = load4(b + 4);
    for (int64_t r = 0; r < kPortMr; ++r) {
      const float ar = g.a[(r0 + r) * g.lda + q];
      acc[r][0] += ar * b0;
      acc[r][1] += ar * b1;
    }
  }
  for (int64_t r = 0; r < kPortMr; ++r) {
    float* c = g.c + (r0 + r) * g.ldc + n0;
    for (int j = 0; j < 2; ++j) store4(c + 4 * j, acc[r][j]);
  }
}

// Row r, columns [n0, n1).
void gemm_edge_portable(const GdnGemm& g, int64_t r, int64_t n0, int64_t n1) {
  float* c = g.c + r * g.ldc;
  for (int64_t j = n0; j < n1; ++j) c[j] = g.beta == 0.0f ? 0.0f : g.beta * c[j];
  const int64_t pe = g.lower_a ? std::min(g.p, r + 1) : g.p;
  const float* a = g.a + r * g.lda;
  for (int64_t q = 0; q < pe; ++q) {
    const float* b = g.b + q * g.ldb;
    for (int64_t j = n0; j < n1; ++j) c[j] += a[q] * b[j];
  }
}

void gemm_portable(const GdnGemm& g) {
  for (int64_t r0 = 0; r0 < g.m; r0 += kPortMr) {
    const int64_t rows = std::min(kPortMr, g.m - r0);
    // Columns this row tile needs: all, or up to its last row (lower_c).
    const int64_t n = g.lower_c ? std::min(g.n, r0 + rows) : g.n;
    const int64_t n_tiles = rows == kPortMr ? n / kPortNr * kPortNr : 0;
    for (int64_t n0 = 0; n0 < n_tiles; n0 += kPortNr) gemm_tile_portable(g, r0, n0);
    for (int64_t r = r0; r < r0 + rows; ++r) gemm_edge_portable(g, r, n_tiles, n);
  }
}

void transpose_portable(const float* src, int64_t lds, float* dst, int64_t ldd, int64_t rows,
                        int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < rows; ++i) dst[j * ldd + i] = src[i * lds + j];
  }
}

// Row by row: T[t, :t] = -sum_{m < t} A[t, m] T[m, :t], T[t, t] = 1.
void lower_inverse_portable(const float* a, float* t_inv, int64_t c) {
  for (int64_t t = 0; t < c; ++t) {
    float* row = t_inv + t * kC;
    std::fill(row, row + kC, 0.0f);
    const float* at = a + t * kC;
    for (int64_t m = 0; m < t; ++m) {
      const float am = at[m];
      const float* tm = t_inv + m * kC;
      for (int64_t j = 0; j <= m; ++j) row[j] -= am * tm[j];
    }
    row[t] = 1.0f;
  }
}

void exp_portable(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void normalise_portable(const float* x, float* y, int64_t n, float eps, bool l2, float scale) {
  if (l2) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const double inv = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps));
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) * inv);
  } else {
    std::copy(x, x + n, y);
  }
  for (int64_t i = 0; i < n; ++i) y[i] *= scale;
}

}  // namespace

bool supports_gated_delta_net_chunked(const Op& op) {
  // State rows are moved as float arrays (transposed), so whole-float strides.
  return op.p<GatedDeltaNetParams>().allow_chunked && op.src[0].ne[2] >= kGdnChunkMinTokens &&
         op.src[5].nb[1] % sizeof(float) == 0 && op.dst2.nb[1] % sizeof(float) == 0;
}

Status run_gdn_chunked(const Op& op, const KernelContext& ctx, const GdnChunkOps& ops) {
  const int64_t sk = op.src[0].ne[0], n_seq = op.src[0].ne[3];
  const int64_t sv = op.src[2].ne[0], hv = op.src[2].ne[1];
  FOLIO_CHECK(sk % ops.n_multiple == 0 && sv % ops.n_multiple == 0);
  const int64_t n_units = n_seq * hv;
  run_range(ctx, n_units, n_units > 1, [&](int64_t u0, int64_t u1) { run_units(op, ops, u0, u1); });
  return Status();
}

const GdnChunkOps& gdn_chunk_portable_ops() {
  static constexpr GdnChunkOps kOps{gemm_portable,      exp_portable,           normalise_portable,
                                    transpose_portable, lower_inverse_portable, 1};
  return kOps;
}

Status gated_delta_net_chunked_scalar(const Op& op, const KernelContext& ctx) {
  return run_gdn_chunked(op, ctx, gdn_chunk_portable_ops());
}

}  // namespace folio::cpu
