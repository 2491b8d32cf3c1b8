// Packing and unpacking of the layouts in repack.h. Packing runs at load
// time over whole models, so it moves 4-byte words (VNNI row r of a group
// takes bytes 4r..4r+3 of each row's codes, and the nibble layouts keep the
// GGUF byte pairing of codes e and e + 16). Unpacking (the reference kernel,
// tests) goes element by element through the codes: the plain statement of
// the layout, which the tests check packing against bit for bit.
#include "quant/repack.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "quant/blocks.h"

namespace folio::quant {

namespace {

// Index of (panel row n, element e of a 32-element group) in VNNI order.
constexpr int vnni_index(int n, int e) {
  return (e / 4) * 64 + n * 4 + e % 4;
}

// ---- GGUF blocks from unsigned codes (element order of blocks.h)

void q4_0_block(const uint8_t* c, uint16_t d, BlockQ4_0* b) {
  b->d = d;
  for (int e = 0; e < 16; ++e) b->qs[e] = static_cast<uint8_t>(c[e] | c[e + 16] << 4);
}

void q4_1_block(const uint8_t* c, uint16_t d, uint16_t m, BlockQ4_1* b) {
  b->d = d;
  b->m = m;
  for (int e = 0; e < 16; ++e) b->qs[e] = static_cast<uint8_t>(c[e] | c[e + 16] << 4);
}

// Q5_0 / Q5_1 (the same qh and qs fields).
template <typename Block>
void q5_codes(const uint8_t* c, Block* b) {
  uint32_t qh = 0;
  for (int e = 0; e < 32; ++e) qh |= static_cast<uint32_t>((c[e] >> 4) & 1) << e;
  std::memcpy(b->qh, &qh, 4);
  for (int e = 0; e < 16; ++e)
    b->qs[e] = static_cast<uint8_t>((c[e] & 0xF) | (c[e + 16] & 0xF) << 4);
}

void q5_0_block(const uint8_t* c, uint16_t d, BlockQ5_0* b) {
  b->d = d;
  q5_codes(c, b);
}

void q5_1_block(const uint8_t* c, uint16_t d, uint16_t m, BlockQ5_1* b) {
  b->d = d;
  b->m = m;
  q5_codes(c, b);
}

void iq4_nl_block(const uint8_t* c, uint16_t d, BlockIQ4_NL* b) {
  b->d = d;
  for (int e = 0; e < 16; ++e) b->qs[e] = static_cast<uint8_t>(c[e] | c[e + 16] << 4);
}

void mxfp4_block(const uint8_t* c, uint8_t e8, BlockMXFP4* b) {
  b->e = e8;
  for (int e = 0; e < 16; ++e) b->qs[e] = static_cast<uint8_t>(c[e] | c[e + 16] << 4);
}

void q8_0_block(const uint8_t* c, uint16_t d, BlockQ8_0* b) {
  b->d = d;
  for (int e = 0; e < 32; ++e) b->qs[e] = static_cast<int8_t>(c[e] ^ 0x80);
}

// Q4_K 12-byte scale packing from 8 (scale, min) pairs (blocks.h).
void pack_scale_min_k4(const uint8_t* sc, const uint8_t* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
    s[j + 4] = static_cast<uint8_t>((m[j] & 63) | (m[j + 4] >> 4) << 6);
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4);
  }
}

// Low nibble of code (n, e) from nibble bytes.
uint8_t get_nibble(const uint8_t* src, int n, int e) {
  const int i = vnni_index(n, e);
  return i < 256 ? src[i] & 0xF : src[i - 256] >> 4;
}

// Q4_K / Q5_K (same d, dmin, scales, qs fields): writes row r's scales,
// mins and nibbles into panel super-block s, whose groups of codes start at
// s + codes, group_bytes apart. Group g (elements 32g..32g+31) is the low (g
// even) or high nibble of qs[32 (g / 2) + e']; VNNI rows R and R + 4 share a
// byte, so a word of 4 packed bytes combines 4 qs bytes at e' = 4R.. and 4
// at 16 + 4R...
template <typename Block>
void pack_k4_head(const Block* q, int r, uint8_t* s, size_t codes, size_t group_bytes) {
  static_assert(kQ4KxD == kQ5KxD && kQ4KxDmin == kQ5KxDmin && kQ4KxScales == kQ5KxScales &&
                kQ4KxMins == kQ5KxMins);
  std::memcpy(s + kQ4KxD + 2 * r, &q->d, 2);
  std::memcpy(s + kQ4KxDmin + 2 * r, &q->dmin, 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(j, q->scales, &sc, &m);
    s[kQ4KxScales + j * 16 + r] = sc;
    s[kQ4KxMins + (j / 2) * 32 + r * 2 + j % 2] = m;
  }
  for (int g = 0; g < 8; ++g) {
    const uint8_t* qs = q->qs + 32 * (g / 2);
    for (int i = 0; i < 4; ++i) {
      uint32_t w0, w1;
      std::memcpy(&w0, qs + 4 * i, 4);
      std::memcpy(&w1, qs + 16 + 4 * i, 4);
      const uint32_t v = g % 2 == 0 ? (w0 & 0x0F0F0F0Fu) | (w1 & 0x0F0F0F0Fu) << 4
                                    : (w0 >> 4 & 0x0F0F0F0Fu) | (w1 & 0xF0F0F0F0u);
      std::memcpy(s + codes + group_bytes * g + i * 64 + r * 4, &v, 4);
    }
  }
}

// The inverse of pack_k4_head for row n: d, dmin, scales and the low 4 bits
// of every code into q (whose other fields the caller fills).
template <typename Block>
void unpack_k4_head(const uint8_t* s, int n, size_t codes, size_t group_bytes, Block* q) {
  std::memcpy(&q->d, s + kQ4KxD + 2 * n, 2);
  std::memcpy(&q->dmin, s + kQ4KxDmin + 2 * n, 2);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = s[kQ4KxScales + j * 16 + n];
    m[j] = s[kQ4KxMins + (j / 2) * 32 + n * 2 + j % 2];
  }
  pack_scale_min_k4(sc, m, q->scales);
  for (int e = 0; e < kQKK; ++e) {
    const uint8_t c = get_nibble(s + codes + group_bytes * (e / 32), n, e % 32);
    uint8_t& b = q->qs[(e / 64) * 32 + e % 32];
    b = (e % 64) < 32 ? static_cast<uint8_t>((b & 0xF0) | c)
                      : static_cast<uint8_t>((b & 0x0F) | c << 4);
  }
}

}  // namespace

std::optional<DType> packed_type_for(DType source) {
  switch (source) {
    case DType::Q4_0:
      return DType::Q4_0_X16;
    case DType::Q4_1:
      return DType::Q4_1_X16;
    case DType::Q5_0:
      return DType::Q5_0_X16;
    case DType::Q5_1:
      return DType::Q5_1_X16;
    case DType::IQ4_NL:
      return DType::IQ4_NL_X16;
    case DType::IQ4_XS:
      return DType::IQ4_XS_X16;
    case DType::MXFP4:
      return DType::MXFP4_X16;
    case DType::Q8_0:
      return DType::Q8_0_X16;
    case DType::Q4_K:
      return DType::Q4_K_X16;
    case DType::Q5_K:
      return DType::Q5_K_X16;
    case DType::Q6_K:
      return DType::Q6_K_X16;
    case DType::F16:
      return DType::F16_X16;
    default:
      return std::nullopt;
  }
}

size_t packed_panel_bytes(DType packed, int64_t k) {
  FOLIO_CHECK_MSG(is_packed(packed), "not a packed type: {}", dtype_name(packed));
  if (packed == DType::F16_X16) return static_cast<size_t>((k + kQK - 1) / kQK) * kF16xStepBytes;
  return row_size(packed, k) * kPanelRows;
}

size_t packed_matrix_bytes(DType packed, int64_t k, int64_t n) {
  const int64_t panels = (n + kPanelRows - 1) / kPanelRows;
  return packed_panel_bytes(packed, k) * static_cast<size_t>(panels);
}

TensorView packed_view(void* data, DType packed, const std::array<int64_t, kMaxDims>& ne) {
  FOLIO_CHECK_MSG(is_packed(packed), "not a packed type: {}", dtype_name(packed));
  TensorView v = TensorView::contiguous(data, packed, ne);
  v.nb[2] = packed_matrix_bytes(packed, ne[0], ne[1]);
  v.nb[3] = v.nb[2] * static_cast<size_t>(ne[2]);
  return v;
}

bool is_packed_view(const TensorView& t) {
  if (!is_packed(t.dtype) || t.ne[0] % block_size(t.dtype) != 0) return false;
  const size_t matrix = packed_matrix_bytes(t.dtype, t.ne[0], t.ne[1]);
  return t.nb[0] == type_size(t.dtype) && t.nb[1] == row_size(t.dtype, t.ne[0]) &&
         (t.ne[2] == 1 || t.nb[2] == matrix) &&
         (t.ne[3] == 1 ||
          t.nb[3] == (t.ne[2] == 1 ? matrix : t.nb[2] * static_cast<size_t>(t.ne[2])));
}

void pack_rows(DType packed, const void* src, size_t src_stride, int64_t k, int64_t n, void* dst) {
  const DType source = packed_source(packed);
  FOLIO_CHECK_MSG(is_packed(packed) && k % block_size(source) == 0, "pack_rows: {} k={}",
                  dtype_name(packed), k);
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  const size_t panel_bytes = packed_panel_bytes(packed, k);
  const int64_t panels = (n + kPanelRows - 1) / kPanelRows;
  const size_t bsz = type_size(source);
  std::memset(dst, 0, panel_bytes * static_cast<size_t>(panels));
  for (int64_t p = 0; p < panels; ++p) {
    uint8_t* panel = out + p * panel_bytes;
    const int rows = static_cast<int>(std::min<int64_t>(kPanelRows, n - p * kPanelRows));
    auto block_of = [&](int r, int64_t b) {
      return in + (p * kPanelRows + r) * src_stride + b * bsz;
    };
    if (source == DType::F16) {
      // Row r's pair (2j, 2j + 1) -> step j / 16, pair j % 16, dword r; an
      // odd k's last element alone (its partner and the rest of K zero).
      for (int r = 0; r < rows; ++r) {
        const uint8_t* row = block_of(r, 0);
        for (int64_t j = 0; 2 * j < k; ++j) {
          uint8_t* at = panel + (j / 16) * kF16xStepBytes + (j % 16) * 64 + r * 4;
          std::memcpy(at, row + 4 * j, 2 * j + 1 < k ? 4 : 2);
        }
      }
    } else if (block_size(source) == kQK) {
      // Word transposes: VNNI row r, lane n holds bytes 4r..4r+3 of row n's
      // codes. For the nibble formats those are simply the GGUF qs bytes
      // (byte e holds codes e and e + 16 = VNNI rows r and r + 4), and bit 4
      // of codes 4r..4r+3 is qh bits 4r..4r+3. Padding rows stay zero
      // (zero codes, zero scale).
      const size_t blk = x16_block_bytes(packed), code_bytes = x16_code_bytes(packed);
      for (int64_t b = 0; b < k / kQK; ++b) {
        uint8_t* dstb = panel + b * blk;
        uint16_t d[kPanelRows] = {}, m[kPanelRows] = {};
        uint8_t e8[kPanelRows] = {};  // MXFP4: the E8M0 scales
        for (int r = 0; r < rows; ++r) {
          const uint8_t* g = block_of(r, b);
          uint32_t w[8];
          if (source == DType::Q8_0) {
            const auto* q = reinterpret_cast<const BlockQ8_0*>(g);
            std::memcpy(w, q->qs, 32);
            for (int i = 0; i < 8; ++i)
              std::memcpy(dstb + i * 64 + r * 4, &(w[i] ^= 0x80808080u), 4);
            d[r] = q->d;
            continue;
          }
          const uint8_t* qs;
          const uint8_t* qh_bytes = nullptr;  // Q5_0 / Q5_1: bit 4 of each code
          if (source == DType::Q4_0) {
            const auto* q = reinterpret_cast<const BlockQ4_0*>(g);
            qs = q->qs;
            d[r] = q->d;
          } else if (source == DType::IQ4_NL) {
            const auto* q = reinterpret_cast<const BlockIQ4_NL*>(g);
            qs = q->qs;
            d[r] = q->d;
          } else if (source == DType::MXFP4) {
            const auto* q = reinterpret_cast<const BlockMXFP4*>(g);
            qs = q->qs;
            e8[r] = q->e;
          } else if (source == DType::Q4_1) {
            const auto* q = reinterpret_cast<const BlockQ4_1*>(g);
            qs = q->qs;
            d[r] = q->d;
            m[r] = q->m;
          } else if (source == DType::Q5_1) {
            const auto* q = reinterpret_cast<const BlockQ5_1*>(g);
            qs = q->qs;
            qh_bytes = q->qh;
            d[r] = q->d;
            m[r] = q->m;
          } else {
            const auto* q = reinterpret_cast<const BlockQ5_0*>(g);
            qs = q->qs;
            qh_bytes = q->qh;
            d[r] = q->d;
          }
          if (qh_bytes != nullptr) {
            uint32_t qh;
            std::memcpy(&qh, qh_bytes, 4);
            // Plane bit 64 i + 4 r + j = bit 4 of code 4 i + j of row r.
            for (int i = 0; i < 8; ++i) {
              uint8_t& byte = dstb[256 + i * 8 + r / 2];
              byte = static_cast<uint8_t>(byte | ((qh >> (4 * i)) & 0xF) << (4 * (r % 2)));
            }
          }
          std::memcpy(w, qs, 16);
          for (int i = 0; i < 4; ++i) std::memcpy(dstb + i * 64 + r * 4, &w[i], 4);
        }
        if (source == DType::MXFP4) {
          std::memcpy(dstb + code_bytes, e8, sizeof(e8));
        } else {
          std::memcpy(dstb + code_bytes, d, sizeof(d));
          if (x16_has_min(packed)) std::memcpy(dstb + code_bytes + sizeof(d), m, sizeof(m));
        }
      }
    } else if (source == DType::Q4_K) {
      for (int64_t sb = 0; sb < k / kQKK; ++sb) {
        for (int r = 0; r < rows; ++r) {
          pack_k4_head(reinterpret_cast<const BlockQ4_K*>(block_of(r, sb)), r,
                       panel + sb * kQ4KxBytes, kQ4KxCodes, 256);
        }
      }
    } else if (source == DType::Q5_K) {
      // Q4_K's head and nibbles, plus per group the bit 4 plane: bit
      // 64 R + 4 r + j = bit g of qh[4 R + j] (element 4 R + j of group g).
      for (int64_t sb = 0; sb < k / kQKK; ++sb) {
        uint8_t* s = panel + sb * kQ5KxBytes;
        for (int r = 0; r < rows; ++r) {
          const auto* q = reinterpret_cast<const BlockQ5_K*>(block_of(r, sb));
          pack_k4_head(q, r, s, kQ5KxCodes, kQ5KxGroupBytes);
          for (int g = 0; g < 8; ++g) {
            uint8_t* plane = s + kQ5KxCodes + kQ5KxGroupBytes * g + 256;
            for (int rr = 0; rr < 8; ++rr) {
              uint32_t bits = 0;
              for (int j = 0; j < 4; ++j) bits |= ((q->qh[4 * rr + j] >> g) & 1u) << j;
              plane[8 * rr + r / 2] |= static_cast<uint8_t>(bits << (4 * (r % 2)));
            }
          }
        }
      }
    } else if (source == DType::IQ4_XS) {
      // Group g's codes are the nibbles of qs[16 g ..], paired as Q4_0's.
      for (int64_t sb = 0; sb < k / kQKK; ++sb) {
        uint8_t* s = panel + sb * kIQ4XSxBytes;
        for (int r = 0; r < rows; ++r) {
          const auto* q = reinterpret_cast<const BlockIQ4_XS*>(block_of(r, sb));
          std::memcpy(s + kIQ4XSxD + 2 * r, &q->d, 2);
          for (int g = 0; g < 8; ++g) {
            const int lo = (q->scales_l[g / 2] >> (4 * (g % 2))) & 0xF;
            const int hi = (q->scales_h >> (2 * g)) & 3;
            s[kIQ4XSxScales + g * 16 + r] =
                static_cast<uint8_t>(static_cast<int8_t>((lo | hi << 4) - 32));
            uint32_t w[4];
            std::memcpy(w, q->qs + 16 * g, 16);
            for (int i = 0; i < 4; ++i)
              std::memcpy(s + kIQ4XSxCodes + 256 * g + i * 64 + r * 4, &w[i], 4);
          }
        }
      }
    } else {
      // Group g: low bits are nibbles of ql[64 (g / 4) + 32 (g % 2) + e']
      // (low for g % 4 < 2), bits 4-5 are qh[32 (g / 4) + e'] >> 2 (g % 4).
      FOLIO_CHECK_MSG(source == DType::Q6_K, "pack_rows: no layout for {}", dtype_name(source));
      for (int64_t sb = 0; sb < k / kQKK; ++sb) {
        uint8_t* s = panel + sb * kQ6KxBytes;
        for (int r = 0; r < rows; ++r) {
          const auto* q = reinterpret_cast<const BlockQ6_K*>(block_of(r, sb));
          std::memcpy(s + kQ6KxD + 2 * r, &q->d, 2);
          for (int i = 0; i < 16; ++i)
            s[kQ6KxScales + i * 16 + r] = static_cast<uint8_t>(q->scales[i]);
          for (int g = 0; g < 8; ++g) {
            uint8_t* gd = s + kQ6KxCodes + kQ6KxGroupBytes * g;
            const uint8_t* ql = q->ql + 64 * (g / 4) + 32 * (g % 2);
            const uint8_t* qh = q->qh + 32 * (g / 4);
            const int hshift = 2 * (g % 4);
            for (int i = 0; i < 4; ++i) {
              uint32_t l0, l1, h0, h1;
              std::memcpy(&l0, ql + 4 * i, 4);
              std::memcpy(&l1, ql + 16 + 4 * i, 4);
              std::memcpy(&h0, qh + 4 * i, 4);
              std::memcpy(&h1, qh + 16 + 4 * i, 4);
              const uint32_t v = g % 4 < 2 ? (l0 & 0x0F0F0F0Fu) | (l1 & 0x0F0F0F0Fu) << 4
                                           : (l0 >> 4 & 0x0F0F0F0Fu) | (l1 & 0xF0F0F0F0u);
              std::memcpy(gd + i * 64 + r * 4, &v, 4);
              // Bits 4-5 of VNNI rows i and i + 4 (elements 4i.., 16 + 4i..):
              // plane byte 64 (R % 2) + 4 r + j, bits 2 (R / 2).
              for (const auto& [rr, hw] : {std::pair{i, h0}, std::pair{i + 4, h1}}) {
                uint32_t plane;
                uint8_t* at = gd + 256 + 64 * (rr % 2) + 4 * r;
                std::memcpy(&plane, at, 4);
                plane |= (hw >> hshift & 0x03030303u) << (2 * (rr / 2));
                std::memcpy(at, &plane, 4);
              }
            }
          }
        }
      }
    }
  }
}

void unpack_row(DType packed, const void* matrix, int64_t k, int64_t row, void* dst) {
  const DType source = packed_source(packed);
  FOLIO_CHECK_MSG(is_packed(packed) && k % block_size(source) == 0, "unpack_row: {} k={}",
                  dtype_name(packed), k);
  const uint8_t* panel =
      static_cast<const uint8_t*>(matrix) + (row / kPanelRows) * packed_panel_bytes(packed, k);
  const int n = static_cast<int>(row % kPanelRows);
  auto* out = static_cast<uint8_t*>(dst);
  if (source == DType::F16) {
    for (int64_t e = 0; e < k; ++e) {
      std::memcpy(out + 2 * e,
                  panel + (e / 32) * kF16xStepBytes + (e % 32 / 2) * 64 + n * 4 + e % 2 * 2, 2);
    }
  } else if (block_size(source) == kQK) {
    const size_t blk = x16_block_bytes(packed), code_bytes = x16_code_bytes(packed);
    for (int64_t b = 0; b < k / kQK; ++b) {
      const uint8_t* s = panel + b * blk;
      uint8_t c[32];
      for (int e = 0; e < 32; ++e) {
        const int i = vnni_index(n, e);
        if (source == DType::Q8_0) {
          c[e] = s[i];
        } else {
          c[e] = get_nibble(s, n, e);
          if (source == DType::Q5_0 || source == DType::Q5_1)
            c[e] |= static_cast<uint8_t>(((s[256 + i / 8] >> (i % 8)) & 1) << 4);
        }
      }
      uint8_t* g = out + b * type_size(source);
      if (source == DType::MXFP4) {
        mxfp4_block(c, s[code_bytes + n], reinterpret_cast<BlockMXFP4*>(g));
        continue;
      }
      uint16_t d, m = 0;
      std::memcpy(&d, s + code_bytes + 2 * n, 2);
      if (x16_has_min(packed)) std::memcpy(&m, s + code_bytes + 2 * kPanelRows + 2 * n, 2);
      if (source == DType::Q4_0) {
        q4_0_block(c, d, reinterpret_cast<BlockQ4_0*>(g));
      } else if (source == DType::IQ4_NL) {
        iq4_nl_block(c, d, reinterpret_cast<BlockIQ4_NL*>(g));
      } else if (source == DType::Q4_1) {
        q4_1_block(c, d, m, reinterpret_cast<BlockQ4_1*>(g));
      } else if (source == DType::Q5_1) {
        q5_1_block(c, d, m, reinterpret_cast<BlockQ5_1*>(g));
      } else if (source == DType::Q5_0) {
        q5_0_block(c, d, reinterpret_cast<BlockQ5_0*>(g));
      } else {
        q8_0_block(c, d, reinterpret_cast<BlockQ8_0*>(g));
      }
    }
  } else if (source == DType::Q4_K) {
    for (int64_t sb = 0; sb < k / kQKK; ++sb) {
      BlockQ4_K blk;
      std::memset(&blk, 0, sizeof(blk));
      unpack_k4_head(panel + sb * kQ4KxBytes, n, kQ4KxCodes, 256, &blk);
      std::memcpy(out + sb * sizeof(BlockQ4_K), &blk, sizeof(blk));
    }
  } else if (source == DType::Q5_K) {
    for (int64_t sb = 0; sb < k / kQKK; ++sb) {
      const uint8_t* s = panel + sb * kQ5KxBytes;
      BlockQ5_K blk;
      std::memset(&blk, 0, sizeof(blk));
      unpack_k4_head(s, n, kQ5KxCodes, kQ5KxGroupBytes, &blk);
      for (int e = 0; e < kQKK; ++e) {
        const uint8_t* plane = s + kQ5KxCodes + kQ5KxGroupBytes * (e / 32) + 256;
        const int i = vnni_index(n, e % 32);
        blk.qh[e % 32] |= static_cast<uint8_t>(((plane[i / 8] >> (i % 8)) & 1) << (e / 32));
      }
      std::memcpy(out + sb * sizeof(BlockQ5_K), &blk, sizeof(blk));
    }
  } else if (source == DType::IQ4_XS) {
    for (int64_t sb = 0; sb < k / kQKK; ++sb) {
      const uint8_t* s = panel + sb * kIQ4XSxBytes;
      BlockIQ4_XS blk;
      std::memset(&blk, 0, sizeof(blk));
      std::memcpy(&blk.d, s + kIQ4XSxD + 2 * n, 2);
      for (int g = 0; g < 8; ++g) {
        const int ls = static_cast<int8_t>(s[kIQ4XSxScales + g * 16 + n]) + 32;
        blk.scales_l[g / 2] =
            static_cast<uint8_t>(blk.scales_l[g / 2] | (ls & 0xF) << (4 * (g % 2)));
        blk.scales_h = static_cast<uint16_t>(blk.scales_h | (ls >> 4 & 3) << (2 * g));
        for (int e = 0; e < 16; ++e) {
          blk.qs[16 * g + e] =
              static_cast<uint8_t>(get_nibble(s + kIQ4XSxCodes + 256 * g, n, e) |
                                   get_nibble(s + kIQ4XSxCodes + 256 * g, n, e + 16) << 4);
        }
      }
      std::memcpy(out + sb * sizeof(BlockIQ4_XS), &blk, sizeof(blk));
    }
  } else {
    FOLIO_CHECK_MSG(source == DType::Q6_K, "unpack_row: no layout for {}", dtype_name(source));
    for (int64_t sb = 0; sb < k / kQKK; ++sb) {
      const uint8_t* s = panel + sb * kQ6KxBytes;
      BlockQ6_K blk;
      std::memset(&blk, 0, sizeof(blk));
      std::memcpy(&blk.d, s + kQ6KxD + 2 * n, 2);
      for (int i = 0; i < 16; ++i) blk.scales[i] = static_cast<int8_t>(s[kQ6KxScales + i * 16 + n]);
      for (int e = 0; e < kQKK; ++e) {
        const uint8_t* gd = s + kQ6KxCodes + kQ6KxGroupBytes * (e / 32);
        const int i = vnni_index(n, e % 32);
        const uint8_t lo = get_nibble(gd, n, e % 32);
        const uint8_t hi = (gd[256 + i % 128] >> (2 * (i / 128))) & 3;
        uint8_t& l = blk.ql[(e / 128) * 64 + e % 64];
        l = (e % 128) < 64 ? static_cast<uint8_t>((l & 0xF0) | lo)
                           : static_cast<uint8_t>((l & 0x0F) | lo << 4);
        blk.qh[(e / 128) * 32 + e % 32] |= static_cast<uint8_t>(hi << (2 * ((e % 128) / 32)));
      }
      std::memcpy(out + sb * sizeof(BlockQ6_K), &blk, sizeof(blk));
    }
  }
}

}  // namespace folio::quant
