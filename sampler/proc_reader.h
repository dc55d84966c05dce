// Reads the files of one /proc/PID directory for the pure parsers in core/:
// each file whole, from one open, into a buffer reused across reads.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "os/unique_fd.h"

namespace rssaudit {

enum class ReadStatus : uint8_t {
  kOk,
  // ENOENT or ESRCH: the process exited (or its mm is gone). Normal.
  kVanished,
  kPermissionDenied,  // EACCES or EPERM
  kFailed,            // any other errno
};

// The status an errno from opening or reading a /proc file means.
ReadStatus classify_proc_errno(int error);

// Why a /proc file or directory could not be read.
struct ReadError {
  ReadStatus status = ReadStatus::kFailed;  // never kOk
  int errnum = 0;                           // the errno behind it

  bool vanished() const { return status == ReadStatus::kVanished; }
};

// An open /proc/PID directory. Files opened through it belong to the process
// that had the pid when it was opened: once that process is reaped they fail
// with ENOENT or ESRCH, even if the pid has been reused, so one sample never
// mixes two processes.
class ProcDir {
 public:
  // `proc_root` is "/proc" except in tests.
  static ProcDir open(std::string_view proc_root, uint32_t pid);

  // kOk when the directory is open; otherwise why not.
  ReadStatus status() const { return status_; }
  int error() const { return error_; }
  int fd() const { return fd_.get(); }

  // Opens the file `name` ("pagemap") read-only; a negative errno on failure.
  int open_file(const char* name) const;

 private:
  UniqueFd fd_;
  ReadStatus status_ = ReadStatus::kFailed;
  int error_ = EBADF;
};

class ProcReader {
 public:
  // Reads the file `name` ("stat", "maps", ...) of `dir` from one open, with
  // reads until EOF. seq_file files produce a page or more per read and
  // drop the process's locks between reads, so each read asks for all the
  // room the buffer has. The buffer only grows: no allocation once it fits
  // the largest file read. The text is a view into the buffer, valid until
  // the next read. A directory that did not open fails with its own error.
  Result<std::string_view, ReadError> read(const ProcDir& dir,
                                           const char* name);

  size_t capacity() const { return buffer_.size(); }

 private:
  std::string buffer_ = std::string(kInitialBytes, '\0');
  static constexpr size_t kInitialBytes = 16 << 10;
};

}  // namespace rssaudit
