#include "cache/harness.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace folio::cache::cachetest {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t salt_digest(const std::string& salt) {
  uint64_t h = 0x5eed;
  for (const char c : salt) h = mix(h ^ static_cast<uint8_t>(c));
  return h;
}

}  // namespace

void RefSeq::append(std::span<const int32_t> t) {
  for (const int32_t tok : t) {
    const uint64_t parent = digests.empty() ? salt_digest(salt) : digests.back();
    tokens.push_back(tok);
    digests.push_back(mix(parent ^ (static_cast<uint64_t>(static_cast<uint32_t>(tok)) << 17)));
  }
}

void RefSeq::truncate(size_t len) {
  tokens.resize(len);
  digests.resize(len);
}

KvCacheManager make_manager(int32_t n_blocks, int32_t block_size, const std::string& extra_key) {
  KvCacheManagerOptions o;
  o.n_blocks = n_blocks;
  o.block_size = block_size;
  o.extra_key = extra_key;
  auto m = KvCacheManager::create(o);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

Harness::Harness(const KvCacheManagerOptions& options)
    : m_(std::move(KvCacheManager::create(options)).value()),
      kv_(static_cast<size_t>(options.n_blocks) * static_cast<size_t>(options.block_size), 0) {}

SeqId Harness::create(const std::string& salt) {
  const SeqId id = m_.create_sequence(salt);
  EXPECT_EQ(refs_.count(id), 0u);
  refs_[id] = RefSeq{salt, {}, {}};
  return id;
}

SeqId Harness::fork(SeqId parent) {
  auto child = m_.fork(parent);
  EXPECT_TRUE(child.ok()) << child.status().to_string();
  refs_[*child] = refs_.at(parent);
  return *child;
}

void Harness::free(SeqId seq) {
  EXPECT_TRUE(m_.free_sequence(seq).ok());
  refs_.erase(seq);
}

void Harness::truncate(SeqId seq, int64_t len) {
  const Status st = m_.truncate(seq, len);
  EXPECT_TRUE(st.ok()) << st.to_string();
  refs_.at(seq).truncate(static_cast<size_t>(len));
}

CachePlan Harness::step(const std::vector<SeqAppend>& batch, bool discard) {
  CachePlan plan;
  const Status st = m_.plan(batch, plan);
  EXPECT_TRUE(st.ok()) << st.to_string();
  if (!st.ok() || !plan.fits()) return plan;
  const int32_t bs = m_.block_size();
  // Block copies first, as the engine must.
  for (const BlockCopy& c : plan.copies) {
    EXPECT_NE(c.src, c.dst);
    std::copy_n(kv_.begin() + static_cast<ptrdiff_t>(c.src) * bs, bs,
                kv_.begin() + static_cast<ptrdiff_t>(c.dst) * bs);
  }
  std::map<SeqId, RefSeq> after = refs_;
  std::vector<std::vector<int32_t>> rows;
  for (size_t i = 0; i < batch.size(); ++i) {
    const SeqStep& s = plan.seqs[i];
    EXPECT_EQ(s.seq, batch[i].seq);
    RefSeq& r = after.at(s.seq);
    EXPECT_EQ(s.len_before, static_cast<int64_t>(r.tokens.size()));
    r.append(batch[i].tokens);
    EXPECT_EQ(s.len_after, static_cast<int64_t>(r.tokens.size()));
    std::vector<int32_t> row(static_cast<size_t>(m_.planned_table_size(plan, i)) + 2, -1);
    m_.write_block_table_row(plan, i, row);
    EXPECT_EQ(row[row.size() - 1], kNullBlock);
    EXPECT_EQ(row[row.size() - 2], kNullBlock);
    for (int64_t j = 0; j < s.n_computed(); ++j) {
      const int64_t pos = s.len_before + s.n_cached + j;
      const int32_t slot = plan.slot_mapping[static_cast<size_t>(s.slot_begin + j)];
      EXPECT_EQ(slot, row[static_cast<size_t>(pos / bs)] * bs + pos % bs);
      kv_[static_cast<size_t>(slot)] = r.digests[static_cast<size_t>(pos)];
    }
    row.resize(row.size() - 2);
    rows.push_back(std::move(row));
  }
  if (discard) {
    m_.discard(plan);
    return plan;
  }
  m_.apply(plan);
  refs_ = std::move(after);
  for (size_t i = 0; i < batch.size(); ++i) {  // the tables the forward was given
    // (with a window, apply() then drops the blocks the window left)
    const auto ids = m_.block_table(batch[i].seq).ids();
    EXPECT_TRUE(std::equal(ids.begin(), ids.end(), rows[i].begin(), rows[i].end(),
                           [&](BlockId now, BlockId given) {
                             return now == given || (m_.window() > 0 && now == kNullBlock);
                           }))
        << "sequence " << batch[i].seq;
  }
  return plan;
}

std::string Harness::check() {
  if (const Status st = m_.check_invariants(); !st.ok()) return st.to_string();
  const BlockPool& pool = m_.pool();
  const int32_t bs = pool.block_size();
  std::vector<int32_t> holders(static_cast<size_t>(pool.n_blocks()), 0);
  if (m_.n_sequences() != static_cast<int32_t>(refs_.size())) {
    return fmt::format("{} live sequences, reference has {}", m_.n_sequences(), refs_.size());
  }
  for (const auto& [id, r] : refs_) {
    if (!m_.is_live(id)) return fmt::format("sequence {} is not live", id);
    if (m_.seq_len(id) != static_cast<int64_t>(r.tokens.size())) {
      return fmt::format("sequence {}: length {} vs reference {}", id, m_.seq_len(id),
                         r.tokens.size());
    }
    const auto toks = m_.tokens(id);
    if (!std::equal(toks.begin(), toks.end(), r.tokens.begin(), r.tokens.end())) {
      return fmt::format("sequence {}: tokens differ", id);
    }
    const BlockTable& t = m_.block_table(id);
    if (t.size() != (static_cast<int64_t>(r.tokens.size()) + bs - 1) / bs) {
      return fmt::format("sequence {}: {} blocks for {} tokens", id, t.size(), r.tokens.size());
    }
    // With a window, exactly the blocks before the one position len - W + 1
    // lies in are dropped (never the last); the rest are readable.
    const auto len = static_cast<int64_t>(r.tokens.size());
    const int32_t window = m_.window();
    const int32_t n_dropped =
        window == 0 || t.empty()
            ? 0
            : std::min<int32_t>(static_cast<int32_t>(std::max<int64_t>(len - window + 1, 0) / bs),
                                t.size() - 1);
    for (int32_t k = 0; k < t.size(); ++k) {
      if ((t[k] == kNullBlock) != (k < n_dropped)) {
        return fmt::format("sequence {}: block {} of {} is {} (window {}, {} positions)", id, k,
                           t.size(), t[k], window, len);
      }
      if (t[k] != kNullBlock) ++holders[static_cast<size_t>(t[k])];
    }
    for (size_t p = static_cast<size_t>(n_dropped) * static_cast<size_t>(bs); p < r.tokens.size();
         ++p) {
      const int32_t slot = t.slot(static_cast<int64_t>(p), bs);
      if (kv_[static_cast<size_t>(slot)] != r.digests[p]) {
        return fmt::format("sequence {}: position {} (slot {}) holds the K/V of another prefix", id,
                           p, slot);
      }
    }
  }
  int64_t sum_refs = 0;
  int32_t n_zero = 0;
  for (BlockId b = 1; b < pool.n_blocks(); ++b) {
    if (pool.ref(b) != holders[static_cast<size_t>(b)]) {
      return fmt::format("block {}: ref {} but {} holders", b, pool.ref(b),
                         holders[static_cast<size_t>(b)]);
    }
    sum_refs += pool.ref(b);
    if (pool.ref(b) == 0) ++n_zero;
  }
  int64_t n_entries = 0;
  for (const auto& [id, r] : refs_) {
    for (const BlockId b : m_.block_table(id).ids()) n_entries += b != kNullBlock ? 1 : 0;
  }
  if (sum_refs != n_entries)
    return fmt::format("sum of refs {} != {} table entries", sum_refs, n_entries);
  if (pool.ref(kNullBlock) != 0 || pool.is_free(kNullBlock) || pool.is_hashed(kNullBlock)) {
    return "null block touched";
  }
  const std::vector<BlockId> queue = pool.free_queue();
  if (static_cast<int32_t>(queue.size()) != n_zero || pool.n_free() != n_zero) {
    return fmt::format("free queue {} / n_free {} but {} blocks with ref 0", queue.size(),
                       pool.n_free(), n_zero);
  }
  std::vector<uint8_t> seen(static_cast<size_t>(pool.n_blocks()), 0);
  bool hashed_part = false;
  for (const BlockId b : queue) {
    if (b == kNullBlock || seen[static_cast<size_t>(b)]++)
      return fmt::format("free queue repeats {}", b);
    if (pool.ref(b) != 0)
      return fmt::format("free queue holds block {} with ref {}", b, pool.ref(b));
    if (pool.is_hashed(b))
      hashed_part = true;
    else if (hashed_part)
      return fmt::format("unhashed block {} queued behind hashed ones", b);
  }
  int32_t n_hashed = 0;
  for (BlockId b = 1; b < pool.n_blocks(); ++b) {
    auto it = frozen_.find(b);
    if (!pool.is_hashed(b)) {
      if (it != frozen_.end()) frozen_.erase(it);
      continue;
    }
    ++n_hashed;
    if (pool.find(pool.hash(b)) != b)
      return fmt::format("map does not point at hashed block {}", b);
    std::vector<uint64_t> contents(kv_.begin() + static_cast<ptrdiff_t>(b) * bs,
                                   kv_.begin() + static_cast<ptrdiff_t>(b + 1) * bs);
    if (it == frozen_.end() || !(it->second.first == pool.hash(b))) {
      frozen_[b] = {pool.hash(b), std::move(contents)};
    } else if (it->second.second != contents) {
      return fmt::format("hashed block {} was overwritten while cached", b);
    }
  }
  if (n_hashed != pool.n_cached())
    return fmt::format("{} hashed blocks, map holds {}", n_hashed, pool.n_cached());
  return {};
}

}  // namespace folio::cache::cachetest
