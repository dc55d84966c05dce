#include "audit/counter_snapshot.h"

#include <fmt/format.h>

#include <cstring>

namespace rssaudit {

Result<void> SnapshotDecoder::feed(std::span<const uint8_t> bytes,
                                   std::vector<CounterSnapshot>& out) {
  carry_.insert(carry_.end(), bytes.begin(), bytes.end());
  size_t at = 0;
  while (carry_.size() - at >= sizeof(rss_snapshot)) {
    CounterSnapshot s;
    std::memcpy(&s.head, carry_.data() + at, sizeof(rss_snapshot));
    if (s.head.slots > RSS_SNAPSHOT_MAX_SLOTS) {
      const uint64_t where = offset_ + at;
      reset();
      return unexpected(Error{fmt::format(
          "snapshot iterator output, byte {}: an entry of {} slots (at most "
          "{})",
          where, s.head.slots, RSS_SNAPSHOT_MAX_SLOTS)});
    }
    const size_t slot_bytes = s.head.slots * sizeof(rss_snapshot_slot);
    if (carry_.size() - at - sizeof(rss_snapshot) < slot_bytes) break;
    s.slots.resize(s.head.slots);
    if (slot_bytes)
      std::memcpy(s.slots.data(), carry_.data() + at + sizeof(rss_snapshot),
                  slot_bytes);
    at += sizeof(rss_snapshot) + slot_bytes;
    out.push_back(std::move(s));
  }
  carry_.erase(carry_.begin(), carry_.begin() + static_cast<ptrdiff_t>(at));
  offset_ += at;
  return {};
}

std::optional<CounterSnapshot> SnapshotQueue::take(uint64_t id) {
  while (!queue_.empty() && queue_.front().head.id < id) {
    queue_.pop_front();
    ++orphans_;
  }
  if (queue_.empty() || queue_.front().head.id != id) return std::nullopt;
  CounterSnapshot s = std::move(queue_.front());
  queue_.pop_front();
  return s;
}

}  // namespace rssaudit
