// Files opened at a path a user named, by programs that often run as root:
// the path may be one another user prepared. An output is never written
// through a symbolic link (a link planted in /tmp or a shared directory
// would have root create or fill a file of the planter's choosing), and
// neither an output nor an input is a FIFO, device or socket (a FIFO
// without a peer blocks the command for ever; a device is written into).
// The checks are the open's own (O_NOFOLLOW, O_NONBLOCK, fstat of the
// descriptor), not a stat before it, so no race lets another file in.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "core/result.h"
#include "os/unique_fd.h"

namespace rssaudit {

// What a file that is not a regular one is, as a message names it.
inline std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of another kind";  // fstat never shows a link: O_NOFOLLOW refused it
}

// "PATH: not written: REASON" for an errno of open().
inline Error open_error(const std::string& path, std::string_view doing,
                        int err) {
  if (err == ELOOP)
    return Error{path + ": " + std::string(doing) +
                 ": a symbolic link, which is never followed here (another "
                 "user may have planted it); name the file itself"};
  if (err == ENXIO)  // O_WRONLY|O_NONBLOCK on a FIFO with no reader
    return Error{path + ": " + std::string(doing) +
                 ": a FIFO or device, not a regular file"};
  return Error{path + ": " + std::string(doing) + ": " + std::strerror(err)};
}

// A descriptor that must be of a regular file: refused otherwise.
inline Result<UniqueFd, Error> regular_only(UniqueFd fd,
                                            const std::string& path,
                                            std::string_view doing) {
  struct stat st {};
  if (fstat(fd.get(), &st) != 0)
    return unexpected(open_error(path, doing, errno));
  if (!S_ISREG(st.st_mode))
    return unexpected(Error{path + ": " + std::string(doing) + ": " +
                            std::string(file_kind(st.st_mode)) +
                            ", not a regular file"});
  // Blocking again, as a regular file's reads and writes always are.
  fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// Opens `path` to write from its start (created with `mode` less the
// umask, or truncated): not through a symbolic link, and only a regular
// file.
inline Result<UniqueFd, Error> open_output_file(const std::string& path,
                                                mode_t mode = 0644) {
  constexpr std::string_view doing = "cannot write";
  UniqueFd fd(::open(path.c_str(),
                     O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                     mode));
  if (!fd) return unexpected(open_error(path, doing, errno));
  Result<UniqueFd, Error> regular = regular_only(std::move(fd), path, doing);
  // Truncated only once known regular: O_TRUNC would empty a device.
  if (regular && ftruncate(regular->get(), 0) != 0)
    return unexpected(open_error(path, doing, errno));
  return regular;
}

// Opens `path` to read: only a regular file (symbolic links followed: a
// reader creates nothing). `doing` leads the reason in an error.
inline Result<UniqueFd, Error> open_input_file(
    const std::string& path, std::string_view doing = "cannot read") {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return unexpected(open_error(path, doing, errno));
  return regular_only(std::move(fd), path, doing);
}

}  // namespace rssaudit
