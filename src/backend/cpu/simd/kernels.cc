#include "backend/cpu/simd/kernels.h"

#include <deque>
#include <string>

namespace folio::cpu::simd {

const char* kernel_name(const char* op, const char* isa) {
  // Filled once, while cpu_kernels() builds its table; a deque never moves
  // its elements, so the returned pointers stay valid.
  static std::deque<std::string> names;
  names.push_back(std::string(op) + "." + isa);
  return names.back().c_str();
}

}  // namespace folio::cpu::simd
