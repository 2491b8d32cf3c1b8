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
  // The type that made this buffer, or nullptr for a standalone one.
  const BufferType* type() const { return type_; }

 protected:
  explicit Buffer(const BufferType* type) : type_(type) {}

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

// A read-only mapping of a whole file (weights are mapped, not copied).
class MappedFile final : public Buffer {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile() override;
  void* data() override { return addr_; }
  const void* data() const override { return addr_; }
  size_t size() const override { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(void* addr, size_t size, std::string path)
      : Buffer(nullptr), addr_(addr), size_(size), path_(std::move(path)) {}
  void* addr_;
  size_t size_;
  std::string path_;
};

}  // namespace folio
