// Two open-addressing hash tables sized once at vocabulary load: text -> token
// id over texts stored elsewhere (8 bytes a slot, no per-entry allocation),
// and (left id, right id) -> merge (rank, result id), so that loading a
// vocabulary of hundreds of thousands of tokens and merges stays cheap.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace folio::tokenizer {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

inline size_t table_capacity(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;
  return cap;
}

// text -> id. The texts live in the owner; lookups pass an accessor
// `text_of(id)` so the table stays valid when the owner moves.
class TextIndex {
 public:
  void reset(size_t n) { slots_.assign(table_capacity(n), 0); }

  static uint32_t hash(std::string_view s) {
    return static_cast<uint32_t>(mix64(std::hash<std::string_view>()(s)));
  }

  // Inserts id for text s unless present; returns the id already stored or -1.
  template <typename TextOf>
  int32_t insert(std::string_view s, int32_t id, const TextOf& text_of) {
    const uint32_t h = hash(s);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint64_t slot = slots_[i];
      if (slot == 0) {
        slots_[i] = (static_cast<uint64_t>(h) << 32) | static_cast<uint32_t>(id + 1);
        return -1;
      }
      const auto other = static_cast<int32_t>(static_cast<uint32_t>(slot) - 1);
      if ((slot >> 32) == h && text_of(other) == s) return other;
    }
  }

  template <typename TextOf>
  int32_t find(std::string_view s, const TextOf& text_of) const {
    if (slots_.empty()) return -1;
    const uint32_t h = hash(s);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint64_t slot = slots_[i];
      if (slot == 0) return -1;
      const auto id = static_cast<int32_t>(static_cast<uint32_t>(slot) - 1);
      if ((slot >> 32) == h && text_of(id) == s) return id;
    }
  }

 private:
  std::vector<uint64_t> slots_;  // (hash << 32) | (id + 1); 0 = empty
};

// (left, right) -> (rank, result).
class PairIndex {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t result = 0;
  };

  void reset(size_t n) { entries_.assign(table_capacity(n), Entry{}); }

  // False if the pair is already present (the first rank is kept).
  bool insert(int32_t left, int32_t right, int32_t rank, int32_t result) {
    const uint64_t key = pack(left, right);
    const size_t mask = entries_.size() - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
      Entry& e = entries_[i];
      if (e.key == kEmpty) {
        e = Entry{key, rank, result};
        return true;
      }
      if (e.key == key) return false;
    }
  }

  const Entry* find(int32_t left, int32_t right) const {
    if (entries_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    const size_t mask = entries_.size() - 1;
    for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
      const Entry& e = entries_[i];
      if (e.key == key) return &e;
      if (e.key == kEmpty) return nullptr;
    }
  }

  bool empty() const { return entries_.empty(); }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  std::vector<Entry> entries_;
};

}  // namespace folio::tokenizer
