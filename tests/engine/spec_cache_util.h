// Caches of the speculative-decoding tests (draft model, MTP head) and the
// check that a run left nothing behind in them.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cache/hybrid_kv_cache.h"
#include "cache/kv_cache.h"
#include "cache/paged_kv_cache.h"
#include "model/model.h"

namespace folio::spec_testing {

// A model's F32 cache of 256 positions in blocks of 8 (hybrid models: with a
// state pool of max_seqs + draft_slots slots).
inline std::unique_ptr<cache::KvCache> spec_test_cache(const model::Model& m,
                                                       cache::KvStorage storage, int max_seqs,
                                                       int32_t n_blocks, int draft_slots = 0,
                                                       int n_seq = 0) {
  cache::KvCacheOptions o;
  o.storage = storage;
  o.type = DType::F32;
  o.block_size = 8;
  o.n_ctx = 256;
  o.n_blocks = n_blocks;
  o.n_seq = n_seq;
  o.max_seqs = max_seqs;
  o.max_step_tokens = 128;
  o.draft_slots = draft_slots;
  auto c = m.make_cache(o);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

// Nothing held: no block in use, no sequence, no state slot.
inline void expect_empty(const cache::KvCache& c, const std::string& what) {
  if (const cache::KvCacheManager* m = c.block_manager()) {
    EXPECT_EQ(m->pool().n_used(), 0) << what;
    EXPECT_EQ(m->n_sequences(), 0) << what;
  }
  if (const auto* h = dynamic_cast<const cache::HybridKvCache*>(&c)) {
    EXPECT_EQ(h->state_pool().n_held(), 0) << what;
    EXPECT_TRUE(h->check_invariants().ok()) << what << ": " << h->check_invariants().to_string();
  }
  if (const auto* p = dynamic_cast<const cache::PagedKvCache*>(&c)) {
    EXPECT_TRUE(p->check_invariants().ok()) << what << ": " << p->check_invariants().to_string();
  }
}

}  // namespace folio::spec_testing
