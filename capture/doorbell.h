// The capture's doorbell (bpf/capture.bpf.h `doorbell`): a BPF ring buffer
// a program writes to when a CPU's stream reaches a quarter full, so that a
// consumer sleeping as long as the last rate allowed wakes before a burst
// fills the stream. Its fd becomes readable when rung; answer() empties it
// (else it stays readable) and counts the rings; any thread may, so that
// a loop and a drain thread may both wait on it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/result.h"

struct ring_buffer;

namespace rssaudit {

class Doorbell {
 public:
  // Over the ring buffer map `map_fd`.
  static Result<std::unique_ptr<Doorbell>> open(int map_fd);
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;
  ~Doorbell();

  // Readable (epoll) while rung and not answered.
  int fd() const;
  // Empties the ring; how many rings it held.
  uint64_t answer();
  // Rings answered so far (any thread may read).
  uint64_t rings() const { return rings_.load(std::memory_order_relaxed); }

 private:
  Doorbell() = default;
  ring_buffer* rb_ = nullptr;
  std::mutex answering_;   // libbpf's consumer is one thread's at a time
  uint64_t answered_ = 0;  // by the consuming call's callback
  std::atomic<uint64_t> rings_{0};
};

}  // namespace rssaudit
