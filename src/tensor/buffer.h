// Buffer: owning storage for tensors (weights, KV blocks, activations). A
// buffer belongs to a BufferType (backend/buffer_type.h), which knows how to
// allocate it and which weight layouts it accepts. Host buffers are either
// aligned heap memory or a read-only file mapping.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/aligned.h"
#include "core/status.h"

namespace folio {

class BufferType;

class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  virtual void* data() = 0;
  virtual const void* data() const = 0;
  virtual size_t size() const = 0;
  virtual bool is_host() const { return true; }

  // Transfers, by byte offset within this buffer. A device buffer records
  // them in its device's command stream (ordered with the kernels run there;
  // read() waits for everything before it); a host buffer copies at once.
  // Callers that hold only views use these instead of memcpy, so the same
  // code works on host and device memory.
  virtual Status write(size_t offset, const void* src, size_t n);
  virtual Status read(size_t offset, void* dst, size_t n) const;
  virtual Status copy(size_t dst_offset, size_t src_offset, size_t n);
  virtual Status fill_zero(size_t offset, size_t n);
  // The type that made this buffer, or nullptr for a standalone one.
  const BufferType* type() const { return type_; }

 protected:
  explicit Buffer(const BufferType* type) : type_(type) {}
  // kOutOfRange unless bytes [offset, offset + n) lie in this buffer.
  Status check_range(size_t offset, size_t n) const;

 private:
  const BufferType* type_;
};

// Aligned, zero-initialised heap memory.
class HostBuffer final : public Buffer {
 public:
  static Result<std::unique_ptr<HostBuffer>> create(size_t size, const BufferType* type = nullptr,
                                                    size_t alignment = kDefaultAlignment);
  void* data() override { return mem_.get(); }
  const void* data() const override { return mem_.get(); }
  size_t size() const override { return size_; }

 private:
  HostBuffer(AlignedPtr mem, size_t size, const BufferType* type)
      : Buffer(type), mem_(std::move(mem)), size_(size) {}
  AlignedPtr mem_;
  size_t size_;
};

// How a model file is brought into memory.
struct FileLoadOptions {
  bool mmap = true;   // map the file (pages read on demand); false: read it into heap memory
  bool mlock = false; // lock the pages in RAM; a refusal (RLIMIT_MEMLOCK) is logged, not fatal
};

// A whole file, read-only: mapped (weights are not copied) or, without mmap,
// read into aligned heap memory.
class MappedFile final : public Buffer {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path,
                                                  const FileLoadOptions& options = {});
  ~MappedFile() override;
  void* data() override { return addr_; }
  const void* data() const override { return addr_; }
  size_t size() const override { return size_; }
  const std::string& path() const { return path_; }
  bool mapped() const { return heap_ == nullptr; }
  bool locked() const { return locked_; }

 private:
  MappedFile(void* addr, size_t size, std::string path, AlignedPtr heap)
      : Buffer(nullptr), addr_(addr), size_(size), path_(std::move(path)), heap_(std::move(heap)) {}
  void* addr_;
  size_t size_;
  std::string path_;
  AlignedPtr heap_;  // the file's bytes when not mapped
  bool locked_ = false;
};

}  // namespace folio
