#include "tensor/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace folio {

Status Buffer::check_range(size_t offset, size_t n) const {
  if (offset > size() || n > size() - offset) {
    return out_of_range("buffer: bytes [{}, {}) outside a buffer of {}", offset, offset + n,
                        size());
  }
  return Status();
}

Status Buffer::write(size_t offset, const void* src, size_t n) {
  FOLIO_RETURN_IF_ERROR(check_range(offset, n));
  if (n != 0) std::memcpy(static_cast<char*>(data()) + offset, src, n);
  return Status();
}

Status Buffer::read(size_t offset, void* dst, size_t n) const {
  FOLIO_RETURN_IF_ERROR(check_range(offset, n));
  if (n != 0) std::memcpy(dst, static_cast<const char*>(data()) + offset, n);
  return Status();
}

Status Buffer::copy(size_t dst_offset, size_t src_offset, size_t n) {
  FOLIO_RETURN_IF_ERROR(check_range(dst_offset, n));
  FOLIO_RETURN_IF_ERROR(check_range(src_offset, n));
  char* base = static_cast<char*>(data());
  if (n != 0) std::memmove(base + dst_offset, base + src_offset, n);
  return Status();
}

Status Buffer::fill_zero(size_t offset, size_t n) {
  FOLIO_RETURN_IF_ERROR(check_range(offset, n));
  if (n != 0) std::memset(static_cast<char*>(data()) + offset, 0, n);
  return Status();
}

Result<std::unique_ptr<HostBuffer>> HostBuffer::create(size_t size, const BufferType* type,
                                                       size_t alignment) {
  AlignedPtr mem = large_alloc_bytes(size, alignment);
  if (!mem) return resource_exhausted("cannot allocate {} bytes of host memory", size);
  std::memset(mem.get(), 0, size);
  return std::unique_ptr<HostBuffer>(new HostBuffer(std::move(mem), size, type));
}

namespace {

// Reads all of fd into `dst` (size bytes).
Status read_all(int fd, uint8_t* dst, size_t size, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, dst + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot read '{}': {}", path, std::strerror(errno));
    if (n == 0) return io_error("cannot read '{}': the file ended after {} of {} bytes", path, done, size);
    done += static_cast<size_t>(n);
  }
  return Status();
}

}  // namespace

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path,
                                                     const FileLoadOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open '{}': {}", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return io_error("cannot stat '{}': {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("'{}' is not a regular file", path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* addr = nullptr;
  AlignedPtr heap;
  if (size > 0 && options.mmap) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return io_error("cannot mmap '{}' ({} bytes): {}", path, size, std::strerror(e));
    }
    // Decode reads the whole mapping each step: PMD-sized page cache folios
    // mapped whole spare the TLB (the advice only shapes how the kernel
    // reads the file in; declined, the mapping is as before).
    advise_huge_pages(addr, size);
  } else if (size > 0) {
    heap = large_alloc_bytes(size, kDefaultAlignment);
    if (!heap) {
      ::close(fd);
      return resource_exhausted("cannot allocate {} bytes to read '{}'", size, path);
    }
    Status s = read_all(fd, static_cast<uint8_t*>(heap.get()), size, path);
    if (!s.ok()) {
      ::close(fd);
      return s;
    }
    addr = heap.get();
  }
  ::close(fd);
  auto file = std::unique_ptr<MappedFile>(new MappedFile(addr, size, path, std::move(heap)));
  if (options.mlock && size > 0) {
    if (::mlock(addr, size) == 0) {
      file->locked_ = true;
    } else {
      FOLIO_LOG_WARN("--mlock: cannot lock {} MiB of '{}' in memory: {} (raise the limit with "
                     "'ulimit -l'); continuing unlocked",
                     size >> 20, path, std::strerror(errno));
    }
  }
  return file;
}

MappedFile::~MappedFile() {
  if (locked_) ::munlock(addr_, size_);
  if (heap_ == nullptr && addr_ != nullptr && size_ > 0) ::munmap(addr_, size_);
}

}  // namespace folio
