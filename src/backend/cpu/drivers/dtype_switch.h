// A switch over weight types written once: the kernel files that map a
// DType to a template instance (a tile table, a panel function) list the
// types they handle, and dtype_switch calls the generic lambda with the
// matching one as a compile-time constant.
#pragma once

#include <type_traits>

#include "tensor/dtype.h"

namespace folio::cpu {

template <DType W>
using DTypeConstant = std::integral_constant<DType, W>;

// f(DTypeConstant<W>{}) for the W among W0, Ws... that equals w; a
// value-initialized result (nullptr for a function pointer) when none does.
template <DType W0, DType... Ws, typename F>
auto dtype_switch(DType w, F&& f) {
  decltype(f(DTypeConstant<W0>{})) r{};
  (void)((w == W0 ? (r = f(DTypeConstant<W0>{}), true) : false) ||
         ((w == Ws ? (r = f(DTypeConstant<Ws>{}), true) : false) || ...));
  return r;
}

}  // namespace folio::cpu
