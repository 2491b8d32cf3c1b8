// Arena: bump allocation of activation memory for one forward call. Memory
// comes in chunks from a BufferType (host memory for the CPU backend);
// allocations never move, so views stay valid until reset(). When a call
// needed more than the first chunk, reset() replaces the chunks by one chunk
// of the peak size, so after the first calls of a given batch size a forward
// performs no heap allocation at all. mark()/release() free everything
// allocated after a mark (per-layer temporaries).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/status.h"
#include "tensor/buffer.h"

namespace folio {
class BufferType;
}

namespace folio::model {

class Arena {
 public:
  struct Mark {
    size_t chunk = 0;
    size_t offset = 0;
  };

  explicit Arena(const BufferType* type, size_t initial_bytes = size_t{1} << 20);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // `bytes` of memory aligned to 64 bytes (contents undefined), or
  // kResourceExhausted.
  Result<void*> alloc(size_t bytes);

  Mark mark() const { return {cur_, off_}; }
  // Frees every allocation made after `m` (chunks are kept for reuse).
  void release(Mark m);
  // Frees everything; consolidates the chunks into one of the peak size.
  void reset();

  // Does `p` lie in one of this arena's chunks?
  bool contains(const void* p) const;
  const BufferType* type() const { return type_; }

  size_t capacity() const;               // bytes held in all chunks
  size_t peak() const { return peak_; }  // most bytes in use at once since construction
  size_t n_chunks() const { return chunks_.size(); }

 private:
  size_t used() const;

  const BufferType* type_;
  size_t initial_;
  std::vector<std::unique_ptr<Buffer>> chunks_;
  size_t cur_ = 0;  // chunk being filled
  size_t off_ = 0;  // bytes used in chunks_[cur_]
  size_t peak_ = 0;
};

}  // namespace folio::model
