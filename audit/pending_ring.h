// The reconstruction's queue of held-back events (DeltaReconstructor): a
// FIFO whose entries keep their place in the stream (a sequence number,
// given at push), so an event can name an earlier one by number and find
// it in O(1) while it is still queued (the chain of folds that
// mark_overlaps() walks).
//
// Hand-written: std::deque neither reuses its entries (each Pending owns
// arrays a fresh entry would zero) nor indexes by a sequence number. A
// ring grown by doubling: steady state allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace rssaudit {

template <class T>
class PendingRing {
 public:
  // `capacity`: a power of two.
  explicit PendingRing(size_t capacity = 1024) : ring_(capacity) {}

  // The new newest entry, as the previous occupant of its place left it
  // (the caller resets what it uses); its number is pushed() - 1.
  T& push() {
    if (size_ == ring_.size()) grow();
    ++pushed_;
    return at(size_++);
  }
  // The i-th entry from the oldest.
  T& at(size_t i) { return ring_[(head_ + i) & (ring_.size() - 1)]; }
  const T& at(size_t i) const {
    return ring_[(head_ + i) & (ring_.size() - 1)];
  }
  T& front() { return ring_[head_]; }
  void pop_front() {
    head_ = (head_ + 1) & (ring_.size() - 1);
    --size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Entries ever pushed: the next one's number.
  uint64_t pushed() const { return pushed_; }
  // Whether the entry numbered `seq` is still queued, and it.
  bool holds(uint64_t seq) const {
    return seq < pushed_ && seq >= pushed_ - size_;
  }
  T& by_seq(uint64_t seq) { return at(seq - (pushed_ - size_)); }

 private:
  void grow() {
    std::vector<T> bigger(ring_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(at(i));
    ring_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> ring_;
  size_t head_ = 0;
  size_t size_ = 0;
  uint64_t pushed_ = 0;
};

}  // namespace rssaudit
