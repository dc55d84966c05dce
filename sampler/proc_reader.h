// Reads the files of one /proc/PID directory for the pure parsers in core/:
// each file whole, from one open, into a buffer reused across reads.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

struct ReadResult {
  ReadStatus status = ReadStatus::kOk;
  int error = 0;  // the errno behind a status other than kOk
  // The whole file; a view into the reader's buffer, valid until its next
  // read. Empty unless kOk.
  std::string_view text;

  bool ok() const { return status == ReadStatus::kOk; }
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
  // the largest file read.
  ReadResult read(const ProcDir& dir, const char* name);

  size_t capacity() const { return buffer_.size(); }

 private:
  std::string buffer_ = std::string(kInitialBytes, '\0');
  static constexpr size_t kInitialBytes = 16 << 10;
};

}  // namespace rssaudit
