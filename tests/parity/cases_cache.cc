// Parity cases: cache writes (set_rows through a slot mapping).
#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include "parity/harness.h"

namespace folio::parity {

void add_cache_cases(CaseList& cases) {
  struct Shape {
    DType type;
    int64_t n_cols, n_rows, n_slots;
    bool duplicates = false;  // slots drawn with repeats: the last row wins
  };
  const Shape shapes[] = {
      {DType::F32, 128, 7, 64},  {DType::F16, 128, 7, 64},   {DType::BF16, 96, 5, 40},
      {DType::Q8_0, 256, 9, 48}, {DType::F16, 1024, 1, 16},  {DType::Q8_0, 512, 33, 128},
      // Odd widths: 16-bit rows that share 32-bit words with their neighbours.
      {DType::F16, 33, 40, 12, true}, {DType::BF16, 17, 9, 30}, {DType::F32, 5, 300, 7, true},
  };
  for (const Shape& sh : shapes) {
    auto c = std::make_unique<OpCase>(fmt::format("set_rows {} cols={} rows={} slots={}{}",
                                                  dtype_name(sh.type), sh.n_cols, sh.n_rows,
                                                  sh.n_slots, sh.duplicates ? " duplicates" : ""));
    Op& op = c->op;
    op.kind = OpKind::kSetRows;
    op.src[0] = c->alloc(DType::F32, {sh.n_cols, sh.n_rows});
    op.src[1] = c->alloc(DType::I32, {sh.n_rows});
    op.dst = c->alloc(sh.type, {sh.n_cols, sh.n_slots});
    c->fill_uniform(op.src[0], -3.0f, 3.0f);
    c->fill_uniform(op.dst, -1.0f, 1.0f);  // untouched rows must survive
    if (sh.duplicates) {
      c->fill_ints(op.src[1], 0, static_cast<int32_t>(sh.n_slots) - 1);
    } else {
      // Distinct shuffled slots: a scattered slot mapping like a paged cache's.
      std::vector<int32_t> perm(static_cast<size_t>(sh.n_slots));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), c->rng());
      std::copy_n(perm.begin(), sh.n_rows, static_cast<int32_t*>(op.src[1].data));
    }
    c->exact = true;  // a conversion has one right answer
    c->in_place = true;
    c->bytes = static_cast<double>(op.src[0].nbytes_contiguous() + op.dst.row_bytes() * sh.n_rows);
    cases.push_back(std::move(c));
  }
}

}  // namespace folio::parity
