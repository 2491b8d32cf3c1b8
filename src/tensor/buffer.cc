#include "tensor/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace folio {

Result<std::unique_ptr<HostBuffer>> HostBuffer::create(size_t size, const BufferType* type,
                                                       size_t alignment) {
  AlignedPtr mem = aligned_alloc_bytes(size, alignment);
  if (!mem) return resource_exhausted("cannot allocate {} bytes of host memory", size);
  std::memset(mem.get(), 0, size);
  return std::unique_ptr<HostBuffer>(new HostBuffer(std::move(mem), size, type));
}

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
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
  if (size > 0) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return io_error("cannot mmap '{}' ({} bytes): {}", path, size, std::strerror(e));
    }
  }
  ::close(fd);
  return std::unique_ptr<MappedFile>(new MappedFile(addr, size, path));
}

MappedFile::~MappedFile() {
  if (addr_ != nullptr && size_ > 0) ::munmap(addr_, size_);
}

}  // namespace folio
