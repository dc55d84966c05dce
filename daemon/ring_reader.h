// Reads a BPF ring buffer map (BPF_MAP_TYPE_RINGBUF) from its mapped pages.
//
// Hand-written instead of libbpf's ring_buffer__consume(), which stores the
// consumer position after every record: each store takes the cache line
// that every producing CPU reads on each reservation, so while the daemon
// drains, both sides pay a cache miss per record. This reader publishes its
// position once per kPublishEvery records and at the end of a drain. The
// layout is the kernel's UAPI (linux/bpf.h, kernel/bpf/ringbuf.c): a
// consumer page (ours to write), a producer page, then the data pages,
// mapped twice in a row so that no record wraps.
#pragma once

#include <linux/bpf.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rssaudit {

class RingReader {
 public:
  // Maps the ring buffer `map_fd` whose max_entries is `data_bytes` (a
  // power of two, a multiple of the page size). Null with a message naming
  // the failed call on failure.
  static std::unique_ptr<RingReader> map(int map_fd, size_t data_bytes,
                                         std::string& error);
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();

  // Calls fn(const void* sample, uint32_t length) for each committed record,
  // in ring order, at most `max` of them, without blocking; stops at the
  // first record still being written. Returns how many were handed over.
  template <class Fn>
  size_t consume(size_t max, Fn&& fn) {
    uint64_t cons = __atomic_load_n(consumer_pos_, __ATOMIC_ACQUIRE);
    size_t n = 0, unpublished = 0;
    for (;;) {
      const uint64_t prod = __atomic_load_n(producer_pos_, __ATOMIC_ACQUIRE);
      if (cons >= prod || n >= max) break;
      bool busy = false;
      while (cons < prod && n < max) {
        const auto* header =
            reinterpret_cast<const uint32_t*>(data_ + (cons & mask_));
        const uint32_t len = __atomic_load_n(header, __ATOMIC_ACQUIRE);
        if (len & BPF_RINGBUF_BUSY_BIT) {
          busy = true;  // reserved, not committed yet: later records wait
          break;
        }
        const uint32_t size = len & ~BPF_RINGBUF_DISCARD_BIT;
        cons += (size + BPF_RINGBUF_HDR_SZ + 7) / 8 * 8;
        if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
          fn(static_cast<const void*>(header + 2), size);
          ++n;
        }
        if (++unpublished == kPublishEvery) {
          __atomic_store_n(consumer_pos_, cons, __ATOMIC_RELEASE);
          unpublished = 0;
        }
      }
      if (busy) break;
    }
    __atomic_store_n(consumer_pos_, cons, __ATOMIC_RELEASE);
    return n;
  }

 private:
  RingReader() = default;

  // Frees ring space for the producers often enough during a long drain.
  static constexpr size_t kPublishEvery = 1024;

  void* consumer_page_ = nullptr;
  void* producer_pages_ = nullptr;
  size_t producer_bytes_ = 0;
  size_t page_size_ = 0;
  uint64_t* consumer_pos_ = nullptr;
  const uint64_t* producer_pos_ = nullptr;
  const uint8_t* data_ = nullptr;
  uint64_t mask_ = 0;
};

}  // namespace rssaudit
