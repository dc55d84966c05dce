#include "capture/snapshot_iterator.h"

#include <bpf/bpf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rssaudit {

SnapshotIterator::SnapshotIterator(int link_fd, int wanted_fd)
    : link_fd_(link_fd),
      wanted_fd_(wanted_fd),
      // kernel/bpf/bpf_iter.c: the seq_file buffer is PAGE_SIZE << 3; a
      // read at least as large takes it whole.
      chunk_bytes_(static_cast<size_t>(sysconf(_SC_PAGESIZE)) << 3) {}

SnapshotIterator::~SnapshotIterator() { end(); }

void SnapshotIterator::end() {
  if (iter_fd_ >= 0) close(iter_fd_);
  iter_fd_ = -1;
}

Result<void> SnapshotIterator::begin(std::span<const uint64_t> mms) {
  end();
  // Since 6.2 the iterator deletes what it read; what is left (mms that
  // ended) and, before 6.2, every entry goes.
  uint64_t key = 0, next = 0;
  std::vector<uint64_t> stale;
  for (const uint64_t* prev = nullptr;
       bpf_map_get_next_key(wanted_fd_, prev, &next) == 0; prev = &key) {
    stale.push_back(next);
    key = next;
  }
  for (const uint64_t k : stale) bpf_map_delete_elem(wanted_fd_, &k);
  const uint8_t wanted = 1;
  for (const uint64_t mm : mms)
    if (bpf_map_update_elem(wanted_fd_, &mm, &wanted, BPF_ANY) != 0)
      return unexpected(Error{fmt::format(
          "snapshot iterator: naming mm {:#x}: {}", mm, std::strerror(errno))});
  iter_fd_ = bpf_iter_create(link_fd_);
  if (iter_fd_ < 0)
    return unexpected(Error{fmt::format(
        "snapshot iterator: bpf_iter_create: {}", std::strerror(errno))});
  return {};
}

Result<bool> SnapshotIterator::read(std::vector<uint8_t>& out) {
  if (iter_fd_ < 0) return false;
  const size_t at = out.size();
  out.resize(at + chunk_bytes_);
  ssize_t n;
  do {
    n = ::read(iter_fd_, out.data() + at, chunk_bytes_);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    out.resize(at);
    const int err = errno;
    end();
    if (n < 0)
      return unexpected(Error{
          fmt::format("snapshot iterator: read: {}", std::strerror(err))});
    return false;
  }
  out.resize(at + static_cast<size_t>(n));
  return true;
}

}  // namespace rssaudit
