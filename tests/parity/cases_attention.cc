// Parity cases: attention ops (flash attention and materialised SDPA).
//
// Every flash-attention case runs in the contiguous K/V layout and carries
// equivalents: the same op reading K/V through a block table whose physical
// blocks are a shuffled permutation (block sizes 16, 8 and 32; partially
// filled last blocks; padding entries in the table that are invalid ids and
// must be ignored) -- byte-identical -- and the materialised SDPA op within
// an NMSE bound. K/V rows past each sequence's kv_len, spare blocks and the
// unused rows of partial blocks are filled with NaN: a kernel that lets them
// reach the output fails.
//
// Tolerances (kernel vs reference, and flash vs SDPA), by K/V type: room for
// optimised kernels that round Q to the K type before the dot product as
// ggml does (f16: ~2^-11 relative per element; q8_0: ~1/254 of the row
// maximum). The reference itself agrees with SDPA to ~1e-13 (unit tests in
// tests/backend/ref_attention_test.cc hold it to 1e-10).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "core/fp16.h"
#include "parity/harness.h"

namespace folio::parity {
namespace {

double kv_nmse_bound(DType kv) {
  switch (kv) {
    case DType::F32:
      return 1e-7;
    case DType::F16:
    case DType::BF16:
      return 1e-6;
    default:
      return 1e-4;  // q8_0
  }
}

struct AttnSpec {
  std::string what;  // appended to the generated name
  int d = 128;       // K head dim
  int dv = 0;        // V head dim (0: = d)
  int n_kv_head = 2;
  int gqa = 1;  // query heads per KV head
  DType kv = DType::F16;
  std::optional<DType> v_type;  // V's type when it differs from K's (kv)
  std::vector<int> n_query;     // query tokens per sequence
  std::vector<int> kv_len;      // valid K/V positions per sequence (queries included)
  bool causal = true;
  int window = 0;
  float softcap = 0.0f;
  float scale = 0.0f;  // 0: 1 / sqrt(d)
  bool sinks = false;
  bool shuffle_tokens = false;  // interleave the sequences' tokens in the batch
  bool paged_main = false;      // main op reads through the block table (the first block size)
  OpKind kind = OpKind::kFlashAttn;
  std::vector<int> block_sizes = {16, 8, 32};  // paged equivalents, exact
  bool with_sdpa = true;  // materialised SDPA equivalent (flash only; costly at long contexts)
  // V is the first dv values of each K row, a view of K's memory with K's
  // strides (multi-head latent attention's cache: KvLayerShape::v_in_k).
  bool v_in_k = false;
};

// V as the first dv values of k's rows: k's memory and strides.
TensorView v_view_of_k(const TensorView& k, int64_t dv) {
  TensorView v = k;
  v.ne[0] = dv;
  return v;
}

// Fills a packed row of n elements with NaN (f32 / f16 values, q8_0 scales).
void poison_row(DType t, void* row, int64_t n) {
  auto* b = static_cast<uint8_t*>(row);
  const uint16_t nan16 = 0x7e00;
  if (t == DType::F32) {
    const uint32_t nan32 = 0x7fc00000u;
    for (int64_t i = 0; i < n; ++i) std::memcpy(b + 4 * i, &nan32, 4);
  } else if (t == DType::F16) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(b + 2 * i, &nan16, 2);
  } else if (t == DType::BF16) {
    const uint16_t nan_bf16 = 0x7fc0;
    for (int64_t i = 0; i < n; ++i) std::memcpy(b + 2 * i, &nan_bf16, 2);
  } else {  // q8_0: 34-byte blocks of {f16 d, int8 qs[32]}
    const int64_t n_blocks = n / 32;
    for (int64_t i = 0; i < n_blocks; ++i) {
      std::memcpy(b + 34 * i, &nan16, 2);
      std::memset(b + 34 * i + 2, 0x7f, 32);
    }
  }
}

int32_t* i32(const TensorView& t) {
  return static_cast<int32_t*>(t.data);
}

// The paged twin of a contiguous attention op: the same K/V rows scattered
// into blocks of `bs` positions in a shuffled physical order, two spare
// blocks, and two padding entries per table row holding invalid ids.
Op paged_twin(OpCase& c, const Op& contig, int bs, const std::vector<int>& kv_len) {
  const TensorView &k = contig.src[1], &v = contig.src[2];
  const int64_t n_seq = static_cast<int64_t>(kv_len.size());
  std::vector<int64_t> used(static_cast<size_t>(n_seq));
  int64_t total = 0, most = 0;
  for (int64_t s = 0; s < n_seq; ++s) {
    used[s] = (kv_len[s] + bs - 1) / bs;
    total += used[s];
    most = std::max(most, used[s]);
  }
  const int64_t n_blocks = total + 2, max_blocks = most + 2;
  std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), c.rng());

  const bool v_in_k = v.data == k.data;  // V read from the K rows
  TensorView kp = c.alloc(k.dtype, {k.ne[0], k.ne[1], bs, n_blocks});
  TensorView vp = v_in_k ? v_view_of_k(kp, v.ne[0]) : c.alloc(v.dtype, {v.ne[0], v.ne[1], bs, n_blocks});
  for (int64_t r = 0; r < kp.nrows(); ++r) {
    poison_row(kp.dtype, static_cast<uint8_t*>(kp.data) + r * kp.nb[1], kp.ne[0]);
    if (!v_in_k) poison_row(vp.dtype, static_cast<uint8_t*>(vp.data) + r * vp.nb[1], vp.ne[0]);
  }
  TensorView blocks = c.alloc(DType::I32, {max_blocks, n_seq});
  int64_t next = 0;
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t b = 0; b < max_blocks; ++b) {
      int32_t id = (b % 2 == 0) ? -1 : static_cast<int32_t>(n_blocks + 7);  // padding
      if (b < used[s]) id = perm[static_cast<size_t>(next++)];
      *blocks.at<int32_t>(b, s) = id;
      if (b >= used[s]) continue;
      for (int64_t r = 0; r < bs && b * bs + r < kv_len[s]; ++r) {
        for (int64_t h = 0; h < k.ne[1]; ++h) {
          std::memcpy(kp.row<void>(h, r, id), k.row<void>(h, b * bs + r, s), k.row_bytes());
          if (v_in_k) continue;
          std::memcpy(vp.row<void>(h, r, id), v.row<void>(h, b * bs + r, s), v.row_bytes());
        }
      }
    }
  }
  Op op = contig;
  op.src[1] = kp;
  op.src[2] = vp;
  op.src[6] = blocks;
  auto& p = std::get<AttentionParams>(op.params);
  p.layout = KvLayout::kPaged;
  p.block_size = bs;
  return op;
}

std::unique_ptr<OpCase> attention_case(const AttnSpec& sp) {
  const int d = sp.d, dv = sp.dv > 0 ? sp.dv : sp.d;
  const DType vt = sp.v_type.value_or(sp.kv);
  const int n_head = sp.n_kv_head * sp.gqa;
  const int64_t n_seq = static_cast<int64_t>(sp.kv_len.size());
  const int n_tokens = std::accumulate(sp.n_query.begin(), sp.n_query.end(), 0);
  const int max_len = *std::max_element(sp.kv_len.begin(), sp.kv_len.end());
  const int n_ctx = max_len + 3;  // room past every kv_len: poisoned rows
  const bool prefill = *std::max_element(sp.n_query.begin(), sp.n_query.end()) > 1;
  std::string name =
      fmt::format("{} d{}{} h{}/{} {} {} ns{}{}{}", op_kind_name(sp.kind), d,
                  dv != d ? fmt::format("{}{}", sp.v_in_k ? "v-in-k" : "v", dv) : "", n_head,
                  sp.n_kv_head,
                  vt != sp.kv ? fmt::format("{}/{}", dtype_name(sp.kv), dtype_name(vt))
                              : std::string(dtype_name(sp.kv)),
                  prefill ? "prefill" : "decode", n_seq, sp.paged_main ? " paged" : "",
                  sp.what.empty() ? "" : " " + sp.what);
  auto c = std::make_unique<OpCase>(name);

  TensorView q = c->alloc(DType::F32, {d, n_head, n_tokens});
  TensorView k = c->alloc(sp.kv, {d, sp.n_kv_head, n_ctx, n_seq});
  TensorView v = sp.v_in_k ? v_view_of_k(k, dv) : c->alloc(vt, {dv, sp.n_kv_head, n_ctx, n_seq});
  c->fill_uniform(q);
  c->fill_uniform(k);
  if (!sp.v_in_k) c->fill_uniform(v);
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t p = sp.kv_len[s]; p < n_ctx; ++p) {
      for (int64_t h = 0; h < sp.n_kv_head; ++h) {
        poison_row(sp.kv, k.row<void>(h, p, s), d);
        if (!sp.v_in_k) poison_row(vt, v.row<void>(h, p, s), dv);
      }
    }
  }
  // Tokens: sequence by sequence, the new ones at the end of each cache.
  std::vector<std::pair<int32_t, int32_t>> tokens;  // (seq, pos)
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int j = 0; j < sp.n_query[s]; ++j) {
      tokens.emplace_back(static_cast<int32_t>(s), std::max(0, sp.kv_len[s] - sp.n_query[s]) + j);
    }
  }
  if (sp.shuffle_tokens) std::shuffle(tokens.begin(), tokens.end(), c->rng());
  TensorView seq_idx = c->alloc(DType::I32, {n_tokens});
  TensorView pos = c->alloc(DType::I32, {n_tokens});
  TensorView kv_len = c->alloc(DType::I32, {n_seq});
  for (int i = 0; i < n_tokens; ++i) {
    i32(seq_idx)[i] = tokens[i].first;
    i32(pos)[i] = tokens[i].second;
  }
  for (int64_t s = 0; s < n_seq; ++s) i32(kv_len)[s] = sp.kv_len[s];

  Op& op = c->op;
  op.kind = sp.kind;
  op.src[0] = q;
  op.src[1] = k;
  op.src[2] = v;
  op.src[3] = seq_idx;
  op.src[4] = pos;
  op.src[5] = kv_len;
  if (sp.sinks) {
    op.src[7] = c->alloc(DType::F32, {n_head});
    c->fill_uniform(op.src[7], -1.0f, 3.0f);  // both sides of the running max
  }
  op.dst = c->alloc(DType::F32, {dv, n_head, n_tokens});
  AttentionParams p;
  p.scale = sp.scale > 0.0f ? sp.scale : 1.0f / std::sqrt(static_cast<float>(d));
  p.softcap = sp.softcap;
  p.causal = sp.causal;
  p.window = sp.window;
  op.params = p;

  const Op contig = op;
  std::vector<Op> paged;
  for (int bs : sp.block_sizes) paged.push_back(paged_twin(*c, contig, bs, sp.kv_len));
  const double tol = std::max(kv_nmse_bound(sp.kv), kv_nmse_bound(vt));
  c->max_nmse = tol;
  for (size_t i = 0; i < paged.size(); ++i) {
    if (i == 0 && sp.paged_main) {
      op = paged[0];
      c->equivalents.push_back({"contiguous", contig, true});
      continue;
    }
    c->equivalents.push_back(
        {fmt::format("paged bs{}, permuted blocks", sp.block_sizes[i]), paged[i], true});
  }
  // K/V repeated for every query head: a head's output must not depend on
  // how many query heads share its KV head (the Vulkan kernel gives a
  // workgroup several of them, sharing each K/V tile; each head's sums stay
  // its own). Short caches only, to keep the suite quick.
  if (sp.kind == OpKind::kFlashAttn && sp.gqa > 1 && !sp.v_in_k && max_len <= 200) {
    Op repeated = contig;
    TensorView kr = c->alloc(sp.kv, {d, n_head, n_ctx, n_seq});
    TensorView vr = c->alloc(vt, {dv, n_head, n_ctx, n_seq});
    for (int64_t s = 0; s < n_seq; ++s) {
      for (int64_t p = 0; p < n_ctx; ++p) {
        for (int64_t h = 0; h < n_head; ++h) {
          std::memcpy(kr.row<void>(h, p, s), k.row<void>(h / sp.gqa, p, s), k.row_bytes());
          std::memcpy(vr.row<void>(h, p, s), v.row<void>(h / sp.gqa, p, s), v.row_bytes());
        }
      }
    }
    repeated.src[1] = kr;
    repeated.src[2] = vr;
    c->equivalents.push_back({"K/V repeated per query head", repeated, true});
  }
  if (sp.kind == OpKind::kFlashAttn && sp.with_sdpa) {
    Op sdpa = op;
    sdpa.kind = OpKind::kSdpa;
    c->equivalents.push_back({"materialised sdpa", sdpa, false, tol});
  }

  // Perf: 2 (D + Dv) flops per visible (token, head, key); K/V read once per KV head.
  double visible = 0;
  for (const auto& [s, ps] : tokens) {
    const int64_t end = std::min<int64_t>(sp.kv_len[s], sp.causal ? ps + 1 : sp.kv_len[s]);
    const int64_t begin = sp.window > 0 ? std::max<int64_t>(0, ps - sp.window + 1) : 0;
    visible += static_cast<double>(std::max<int64_t>(0, end - begin));
  }
  c->flops = 2.0 * (d + dv) * n_head * visible;
  double kv_bytes = 0;
  for (int len : sp.kv_len) {
    kv_bytes += static_cast<double>(len) * sp.n_kv_head * (k.row_bytes() + v.row_bytes());
  }
  c->bytes = kv_bytes + static_cast<double>(q.nbytes_contiguous() + op.dst.nbytes_contiguous());
  return c;
}

}  // namespace

void add_attention_cases(CaseList& cases) {
  const std::vector<int> decode4 = {1, 1, 1, 1};
  const std::vector<int> decode_len = {37, 5, 80, 17};
  const std::vector<int> prefill_q = {9, 12};
  const std::vector<int> prefill_len = {9, 40};  // a fresh prompt; a chunk after a cached prefix
  auto decode = [&](int d, int gqa, DType kv) {
    AttnSpec s;
    s.d = d, s.gqa = gqa, s.kv = kv, s.n_query = decode4, s.kv_len = decode_len;
    return s;
  };
  auto prefill = [&](int d, int gqa, DType kv) {
    AttnSpec s;
    s.d = d, s.gqa = gqa, s.kv = kv, s.n_query = prefill_q, s.kv_len = prefill_len;
    return s;
  };
  std::vector<AttnSpec> specs = {
      // Head dims x GQA ratios x K/V types (q8_0 needs d % 32 == 0).
      decode(64, 1, DType::F16),    prefill(64, 4, DType::Q8_0), decode(80, 2, DType::F32),
      prefill(80, 1, DType::F16),   decode(96, 4, DType::Q8_0),  prefill(96, 2, DType::F32),
      decode(112, 1, DType::F16),   prefill(112, 4, DType::F32), decode(128, 2, DType::F16),
      decode(128, 1, DType::Q8_0),  decode(128, 4, DType::F32),  prefill(128, 2, DType::F16),
      prefill(128, 4, DType::Q8_0), decode(256, 4, DType::F16),  prefill(256, 2, DType::Q8_0),
      decode(128, 2, DType::BF16),  prefill(64, 2, DType::BF16),
  };
  {  // Sliding window, prefill and decode (window shorter than the context).
    AttnSpec s = prefill(128, 2, DType::F16);
    s.window = 8, s.what = "window 8";
    specs.push_back(s);
    s = decode(64, 4, DType::Q8_0);
    s.window = 16, s.what = "window 16";
    specs.push_back(s);
  }
  {  // Soft-capping with scores large enough to saturate tanh.
    AttnSpec s = prefill(64, 2, DType::F32);
    s.softcap = 5.0f, s.scale = 1.0f, s.what = "softcap 5";
    specs.push_back(s);
  }
  {  // Scores spread over ~100: many e^(x - m) in the subnormal range, which
     // the SIMD tiers flush to 0 (simd/flash_attn.h), prefill and decode.
    for (AttnSpec s : {prefill(128, 2, DType::F16), decode(128, 4, DType::F32)}) {
      s.scale = 40.0f, s.what = "scores spread wide";
      specs.push_back(s);
    }
  }
  {  // Sinks.
    AttnSpec s = decode(64, 2, DType::F16);
    s.sinks = true, s.what = "sinks";
    specs.push_back(s);
    s = prefill(128, 4, DType::Q8_0);
    s.sinks = true, s.what = "sinks";
    specs.push_back(s);
  }
  {  // Everything at once, tokens of the two sequences interleaved.
    AttnSpec s = prefill(64, 2, DType::F16);
    s.window = 6, s.softcap = 8.0f, s.scale = 0.5f, s.sinks = true, s.shuffle_tokens = true;
    s.what = "window softcap sinks shuffled";
    specs.push_back(s);
  }
  {  // Not causal (every key < kv_len visible).
    AttnSpec s = prefill(64, 1, DType::F32);
    s.causal = false, s.what = "non-causal";
    specs.push_back(s);
  }
  {  // A sequence with nothing cached yet: its token sees no key and outputs zeros.
    AttnSpec s = decode(64, 2, DType::F16);
    s.kv_len = {20, 0, 33, 1}, s.sinks = true, s.what = "empty sequence";
    specs.push_back(s);
  }
  {  // V head dim different from K's.
    AttnSpec s = prefill(96, 2, DType::F16);
    s.dv = 64;
    specs.push_back(s);
  }
  {  // Odd head dims (16-bit rows that straddle 32-bit words) and a block size
     // that is not a power of two.
    AttnSpec s = decode(33, 2, DType::F16);
    s.dv = 17, s.block_sizes = {7, 16}, s.what = "odd dims, block size 7";
    specs.push_back(s);
    s = prefill(33, 1, DType::BF16);
    s.dv = 17, s.block_sizes = {7}, s.what = "odd dims, block size 7";
    specs.push_back(s);
  }
  {  // Mixed batch: one prefill chunk and three decodes, tokens interleaved.
    AttnSpec s = decode(128, 2, DType::F16);
    s.n_query = {1, 10, 1, 1}, s.kv_len = {50, 26, 3, 70}, s.shuffle_tokens = true;
    s.what = "mixed";
    specs.push_back(s);
  }
  {  // The paged layout as the main op (kernels are compared on it directly).
    AttnSpec s = decode(128, 4, DType::F16);
    s.paged_main = true;
    specs.push_back(s);
    s = prefill(64, 2, DType::Q8_0);
    s.paged_main = true, s.window = 10;
    specs.push_back(s);
  }
  {  // Materialised SDPA as an op of its own.
    AttnSpec s = prefill(64, 2, DType::F32);
    s.kind = OpKind::kSdpa, s.sinks = true, s.softcap = 5.0f, s.scale = 1.0f;
    s.what = "sinks softcap";
    specs.push_back(s);
    s = decode(128, 4, DType::Q8_0);
    s.kind = OpKind::kSdpa, s.paged_main = true;
    specs.push_back(s);
  }
  {  // Long contexts: several KV tiles and split-K partitions (512 positions) per
     // row, tiles spanning blocks, block sizes 16 and 64. The first is also the
     // decode perf shape (8 sequences x ~1k context, 8 q / 2 kv heads, f16); a
     // single long sequence has few work items, so threaded kernels split its
     // keys (split-K); SDPA is left out where its cost would dominate the suite.
    AttnSpec s = decode(128, 4, DType::F16);
    s.n_query = std::vector<int>(8, 1);
    s.kv_len = {1024, 1024, 1000, 1024, 1023, 1024, 777, 1024};
    s.block_sizes = {16, 64}, s.with_sdpa = false, s.what = "long";
    specs.push_back(s);
    s = decode(128, 4, DType::F16);
    s.n_query = {1}, s.kv_len = {3999}, s.block_sizes = {16, 64}, s.what = "long split-k";
    specs.push_back(s);
    s = decode(128, 2, DType::Q8_0);
    s.n_query = {1, 1}, s.kv_len = {2600, 3333}, s.window = 1500, s.sinks = true;
    s.block_sizes = {64, 16}, s.paged_main = true, s.what = "long window sinks";
    specs.push_back(s);
    s = prefill(128, 4, DType::F16);
    s.n_query = {20, 1}, s.kv_len = {2048, 3000}, s.sinks = true, s.shuffle_tokens = true;
    s.block_sizes = {16, 64}, s.with_sdpa = false, s.what = "long chunk after prefix";
    specs.push_back(s);
    s = prefill(128, 4, DType::F16);  // the prefill perf shape: a 512-token prompt
    s.n_query = {512}, s.kv_len = {512}, s.paged_main = true, s.block_sizes = {16};
    s.with_sdpa = false, s.what = "prompt 512";
    specs.push_back(s);
    s = prefill(80, 2, DType::F32);
    s.n_query = {40}, s.kv_len = {2100}, s.softcap = 30.0f, s.window = 700;
    s.block_sizes = {64, 16}, s.with_sdpa = false, s.what = "long window softcap";
    specs.push_back(s);
  }
  {  // Q8_0 through every block size the cache uses, rows that are not
     // word-aligned (d 32: 34-byte rows), and K/V of different types.
    AttnSpec s = decode(128, 2, DType::Q8_0);
    s.n_query = {1, 1, 1}, s.kv_len = {70, 129, 3}, s.block_sizes = {8, 16, 32, 64};
    s.what = "block sizes 8-64";
    specs.push_back(s);
    s = prefill(32, 2, DType::Q8_0);
    s.block_sizes = {8, 16, 32, 64};
    specs.push_back(s);
    s = decode(128, 4, DType::Q8_0);
    s.v_type = DType::F16, s.paged_main = true, s.sinks = true;
    specs.push_back(s);
    s = prefill(64, 2, DType::F16);
    s.v_type = DType::Q8_0, s.dv = 96, s.window = 7;
    specs.push_back(s);
    s = decode(96, 2, DType::BF16);
    s.v_type = DType::Q8_0;
    specs.push_back(s);
  }
  {  // Split-K (device kernels that split few long rows): a contiguous cache
     // of one piece beside paged caches of two; more pieces than partials,
     // with a window starting deep inside the cache.
    AttnSpec s = decode(128, 2, DType::F16);
    s.n_query = {1, 1}, s.kv_len = {500, 37}, s.block_sizes = {64, 16}, s.sinks = true;
    s.what = "one split-K piece or two";
    specs.push_back(s);
    s = decode(64, 2, DType::Q8_0);
    s.n_query = {1}, s.kv_len = {33500}, s.window = 20000, s.block_sizes = {64};
    s.with_sdpa = false, s.what = "more pieces than partials";
    specs.push_back(s);
  }
  {  // Multi-head latent attention (deepseek2's absorbed form): one KV head
     // whose rows are the latent vector (512) plus the shared rope key (64),
     // V the first 512 values of the same rows; many query heads (MQA).
     // Decode and prefill, each K/V type, the paged layout byte-identical.
    for (DType t : {DType::F16, DType::Q8_0, DType::F32, DType::BF16}) {
      AttnSpec s = decode(576, 16, t);
      s.n_kv_head = 1, s.dv = 512, s.v_in_k = true, s.scale = 1.0f / std::sqrt(192.0f);
      s.n_query = {1, 1}, s.kv_len = {70, 19}, s.what = "latent";
      specs.push_back(s);
    }
    AttnSpec s = prefill(576, 8, DType::F16);
    s.n_kv_head = 1, s.dv = 512, s.v_in_k = true, s.scale = 1.0f / std::sqrt(192.0f);
    s.what = "latent";
    specs.push_back(s);
    s = prefill(576, 4, DType::Q8_0);
    s.n_kv_head = 1, s.dv = 512, s.v_in_k = true, s.paged_main = true;
    s.n_query = {3, 1}, s.kv_len = {600, 9}, s.block_sizes = {16, 64}, s.with_sdpa = false;
    s.what = "latent long";
    specs.push_back(s);
    s = decode(576, 16, DType::BF16);  // decode over a long cache: split-K on Vulkan
    s.n_kv_head = 1, s.dv = 512, s.v_in_k = true, s.scale = 1.0f / std::sqrt(192.0f);
    s.n_query = {1, 1}, s.kv_len = {1100, 40}, s.block_sizes = {64}, s.with_sdpa = false;
    s.what = "latent split-K";
    specs.push_back(s);
    s = decode(96, 2, DType::F16);  // small dims: V of 64 inside K rows of 96
    s.n_kv_head = 1, s.dv = 64, s.v_in_k = true, s.what = "latent small";
    specs.push_back(s);
  }
  for (const AttnSpec& s : specs) cases.push_back(attention_case(s));
}

}  // namespace folio::parity
