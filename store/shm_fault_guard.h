// SQLite writes a WAL database's -shm through a shared map. When chattr
// makes that file immutable or append-only, the kernel writes its pages
// back and write-protects them (ext4's setflags), and the next write to
// the map is a SIGBUS, not an error SQLite could return: before this
// guard a `chattr +i` landing inside a flush stopped rssauditd (exit 135).
// SQLite has no option that keeps the wal-index out of a shared map and
// readers in (locking_mode=EXCLUSIVE keeps it on the heap but locks the
// CLI out), so the fault itself is handled: a SIGBUS while a registered
// -shm is frozen waits for it to thaw and the write is tried again; one
// that is not explained so, or frozen longer than the wait, ends the
// process as the SIGBUS would have, saying why.
#pragma once

#include <string>

namespace rssaudit {

// Longest a write to a frozen -shm waits for chattr to be undone.
inline constexpr int kShmThawWaitMs = 5000;

// Guards the -shm of the database at `db_path` while it lives (installs
// the SIGBUS handler at the first). A path longer than the guard keeps
// (1 KiB), or a 17th database open at once, is not guarded.
class ShmFaultGuard {
 public:
  explicit ShmFaultGuard(const std::string& db_path);
  ~ShmFaultGuard();
  ShmFaultGuard(const ShmFaultGuard&) = delete;
  ShmFaultGuard& operator=(const ShmFaultGuard&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace rssaudit
