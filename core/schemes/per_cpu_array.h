// Per-CPU state of one mm, allocated in chunks of kChunk CPUs on first
// write. rssauditd keeps such state per audited mm in several models: dense
// arrays cost every possible CPU for each mm (43 KB per one-thread mm at
// 384 CPUs, bench/mm_footprint), while most mms run on a few CPUs and pay
// here for one chunk. 16 CPUs a chunk: a one-thread mm at 384 CPUs takes
// 7.4 KB, 16.4 KB with chunks of 64; one threaded on every CPU 99 KB
// against 97 KB (more chunk pointers), 23 KB against 20 KB an mm at
// 8 192 CPUs. Hand-written: no library offers a lazily chunked
// fixed-size array, and std::unordered_map would cost a hash per update.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace rssaudit {

template <class T>
class PerCpuArray {
 public:
  static constexpr uint32_t kChunk = 16;

  // `initial`: the value of every CPU's element until written.
  explicit PerCpuArray(uint32_t nr_cpus = 0, const T& initial = T{})
      : nr_cpus_(nr_cpus),
        chunks_(new std::unique_ptr<T[]>[chunks_for(nr_cpus)]),
        initial_(initial) {}

  uint32_t size() const { return nr_cpus_; }

  // The element of `cpu` (< size()), its chunk allocated if needed.
  T& at(uint32_t cpu) {
    std::unique_ptr<T[]>& chunk = chunks_[cpu / kChunk];
    if (!chunk) [[unlikely]] {
      const uint32_t n = chunk_length(cpu / kChunk);
      chunk.reset(new T[n]);
      for (uint32_t i = 0; i < n; ++i) chunk[i] = initial_;
    }
    return chunk[cpu % kChunk];
  }
  // The element of `cpu` without allocating.
  const T& get(uint32_t cpu) const {
    const std::unique_ptr<T[]>& chunk = chunks_[cpu / kChunk];
    return chunk ? chunk[cpu % kChunk] : initial_;
  }

  // Sets every element, allocated or not, to `value`.
  void fill(const T& value) {
    update_all([&](T& e) { e = value; });
  }

  // f(T&) for every element, allocated or not, in O(allocated): the
  // unallocated ones all read the initial value, which f changes for them.
  // (A loop over every CPU calling at() allocated them all: 1 MB per mm
  // of a recording whose header claims 8 192 CPUs.)
  template <class F>
  void update_all(F&& f) {
    f(initial_);
    for (size_t c = 0; c < chunks_for(nr_cpus_); ++c)
      if (chunks_[c])
        for (uint32_t i = 0; i < chunk_length(c); ++i) f(chunks_[c][i]);
  }

  // f(cpu, const T&) for every CPU of an allocated chunk: the others hold
  // the initial value.
  template <class F>
  void for_each_allocated(F&& f) const {
    for (size_t c = 0; c < chunks_for(nr_cpus_); ++c) {
      if (!chunks_[c]) continue;
      const uint32_t first = static_cast<uint32_t>(c * kChunk);
      for (uint32_t i = 0; i < chunk_length(c); ++i)
        f(first + i, chunks_[c][i]);
    }
  }

 private:
  static size_t chunks_for(uint32_t nr_cpus) {
    return (size_t{nr_cpus} + kChunk - 1) / kChunk;
  }
  // Elements of chunk `c`: the last one stops at nr_cpus_.
  uint32_t chunk_length(size_t c) const {
    const size_t left = nr_cpus_ - c * kChunk;
    return static_cast<uint32_t>(left < kChunk ? left : kChunk);
  }

  uint32_t nr_cpus_;
  std::unique_ptr<std::unique_ptr<T[]>[]> chunks_;
  T initial_;
};

}  // namespace rssaudit
