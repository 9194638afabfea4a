#include "base/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace troupe {

result<std::shared_ptr<mapped_file>> mapped_file::open(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error{path.string() + ": cannot open: " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return error{path.string() + ": cannot stat: " + std::strerror(e)};
  }
  size_t size = size_t(st.st_size);
  void* addr = nullptr;
  if (size > 0) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return error{path.string() + ": cannot map: " + std::strerror(e)};
    }
  }
  ::close(fd);  // the mapping keeps the file open
  return std::shared_ptr<mapped_file>(new mapped_file(static_cast<const std::byte*>(addr), size));
}

mapped_file::~mapped_file() {
  if (size_ > 0) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace troupe
