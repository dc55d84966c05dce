#include "sampler/proc_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace rssaudit {

ReadStatus classify_proc_errno(int error) {
  switch (error) {
    case ENOENT:
    case ESRCH:
      return ReadStatus::kVanished;
    case EACCES:
    case EPERM:
      return ReadStatus::kPermissionDenied;
    default:
      return ReadStatus::kFailed;
  }
}

ProcDir ProcDir::open(std::string_view proc_root, uint32_t pid) {
  ProcDir dir;
  // On the stack: opening a directory per sample allocates nothing.
  std::array<char, 256> path;
  const auto r =
      fmt::format_to_n(path.data(), path.size() - 1, "{}/{}", proc_root, pid);
  if (r.size >= path.size()) {
    dir.error_ = ENAMETOOLONG;
    return dir;
  }
  *r.out = '\0';
  const int fd = ::open(path.data(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    dir.error_ = errno;
    dir.status_ = classify_proc_errno(dir.error_);
    return dir;
  }
  dir.fd_ = UniqueFd(fd);
  dir.status_ = ReadStatus::kOk;
  dir.error_ = 0;
  return dir;
}

int ProcDir::open_file(const char* name) const {
  const int fd = ::openat(fd_.get(), name, O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

Result<std::string_view, ReadError> ProcReader::read(const ProcDir& dir,
                                                     const char* name) {
  if (dir.status() != ReadStatus::kOk)
    return unexpected(ReadError{dir.status(), dir.error()});
  const int fd = dir.open_file(name);
  if (fd < 0) return unexpected(ReadError{classify_proc_errno(-fd), -fd});
  const UniqueFd owned(fd);
  size_t length = 0;
  for (;;) {
    if (length == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    const ssize_t n =
        ::read(fd, buffer_.data() + length, buffer_.size() - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      return unexpected(ReadError{classify_proc_errno(error), error});
    }
    if (n == 0) break;
    length += static_cast<size_t>(n);
  }
  return std::string_view(buffer_.data(), length);
}

}  // namespace rssaudit
