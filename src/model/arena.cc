#include "model/arena.h"

#include <algorithm>

#include "backend/buffer_type.h"
#include "core/aligned.h"

namespace folio::model {

namespace {
constexpr size_t kAlign = 64;
}

Arena::Arena(const BufferType* type, size_t initial_bytes)
    : type_(type), initial_(std::max<size_t>(initial_bytes, 4096)) {}

bool Arena::contains(const void* p) const {
  const char* c = static_cast<const char*>(p);
  for (const auto& chunk : chunks_) {
    const char* base = static_cast<const char*>(chunk->data());
    if (c >= base && c < base + chunk->size()) return true;
  }
  return false;
}

size_t Arena::capacity() const {
  size_t n = 0;
  for (const auto& c : chunks_) n += c->size();
  return n;
}

size_t Arena::used() const {
  size_t n = off_;
  for (size_t i = 0; i < cur_ && i < chunks_.size(); ++i) n += chunks_[i]->size();
  return n;
}

Result<void*> Arena::alloc(size_t bytes) {
  bytes = align_up(std::max<size_t>(bytes, 1), kAlign);
  // The current chunk, then any kept chunk after it that is large enough.
  while (cur_ < chunks_.size()) {
    if (off_ + bytes <= chunks_[cur_]->size()) {
      void* p = static_cast<char*>(chunks_[cur_]->data()) + off_;
      off_ += bytes;
      peak_ = std::max(peak_, used());
      return p;
    }
    if (cur_ + 1 >= chunks_.size()) break;
    ++cur_;
    off_ = 0;
  }
  // A new chunk: at least double the capacity so far, at least `bytes`.
  const size_t size = std::max({bytes, capacity(), initial_});
  Result<std::unique_ptr<Buffer>> b = type_->alloc(size);
  if (!b.ok()) {
    return resource_exhausted("activation arena: cannot allocate {} bytes: {}", size,
                              b.status().message());
  }
  chunks_.push_back(std::move(b).value());
  cur_ = chunks_.size() - 1;
  off_ = bytes;
  peak_ = std::max(peak_, used());
  return chunks_[cur_]->data();
}

void Arena::release(Mark m) {
  cur_ = m.chunk;
  off_ = m.offset;
}

void Arena::reset() {
  if (chunks_.size() > 1) {
    // One chunk of the peak size replaces the list (next call allocates it).
    initial_ = std::max(initial_, align_up(peak_, size_t{1} << 16));
    chunks_.clear();
  }
  cur_ = 0;
  off_ = 0;
}

}  // namespace folio::model
