// The K-quant tile of each weight type and (rows, columns) shape, for
// dot_tile_for (drivers/quant_tile.h), in the tier files that define the
// K-quant tiles under the shared names (avx2/ and avx512/mul_mat_kquant.cc):
//   q23_k_tile<bool kQ3, R, C>   q45_k_tile<bool kQ5, R, C>
//   q6_k_tile<R, C>              iq4_xs_tile<R, C>
// Expands to `constexpr auto kquant_pick = ...;` where those names are
// visible (a function template cannot be passed as a template argument).
#pragma once

#define FOLIO_KQUANT_PICK                                                   \
  constexpr auto kquant_pick = [](auto wt, auto r, auto c) -> FixedTileFn { \
    constexpr DType kW = wt();                                              \
    if constexpr (kW == DType::Q2_K || kW == DType::Q3_K) {                 \
      return &q23_k_tile<kW == DType::Q3_K, r(), c()>;                      \
    } else if constexpr (kW == DType::Q4_K || kW == DType::Q5_K) {          \
      return &q45_k_tile<kW == DType::Q5_K, r(), c()>;                      \
    } else if constexpr (kW == DType::Q6_K) {                               \
      return &q6_k_tile<r(), c()>;                                          \
    } else {                                                                \
      return &iq4_xs_tile<r(), c()>;                                        \
    }                                                                       \
  }
