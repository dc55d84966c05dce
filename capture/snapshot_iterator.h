// Runs the snapshot iterator (bpf/snapshot.bpf.c): names the mms to read
// in its `snapshot_wanted` map, then reads its output a chunk at a time,
// so that a pass over many mms never holds the caller's loop long. Each
// chunk is whole entries (the kernel re-reads a task whose entry did not
// fit), decoded by SnapshotDecoder. Syscalls, a few per call: not per
// event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"

namespace rssaudit {

class SnapshotIterator {
 public:
  // `link_fd`: the attached iter/task link; `wanted_fd`: its map of mms.
  // Neither is owned.
  SnapshotIterator(int link_fd, int wanted_fd);
  SnapshotIterator(const SnapshotIterator&) = delete;
  SnapshotIterator& operator=(const SnapshotIterator&) = delete;
  ~SnapshotIterator();

  // Starts a pass over the tasks of `mms` (a pass under way is dropped).
  Result<void> begin(std::span<const uint64_t> mms);
  // Appends the pass's next chunk to `out`: false once the pass is over
  // (nothing appended), or when none was begun.
  Result<bool> read(std::vector<uint8_t>& out);
  bool running() const { return iter_fd_ >= 0; }

 private:
  void end();
  int link_fd_, wanted_fd_;
  int iter_fd_ = -1;
  size_t chunk_bytes_;  // the kernel's buffer for the output: 8 pages
};

}  // namespace rssaudit
