// The names in a recording: which mms the recorder names (a process name
// per mm, format 2 of core/formats/record_format.h), and which summary of a
// replay each name belongs to.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "audit/audit_pipeline.h"
#include "bpf/rss_event.h"
#include "core/formats/record_format.h"

namespace rssaudit {

// The recorder's side: every mm the stream shows, once per life of its
// address, with the tgid the audit will give it (that of its first owner
// update, or of the exec that made it). A name read for it is held
// kHoldNs before it is written: an exec changes the comm before its record
// is published, so an exec record of the process within that time means
// the name read may be the new program's, and the mm goes unnamed (never
// misnamed, unless one exec takes longer than kHoldNs).
class MmsToName {
 public:
  static constexpr uint64_t kHoldNs = 500'000'000;

  void see(const rss_event& e) {
    if (e.kind == RSS_EV_EXIT_MMAP) {
      named_.erase(e.mm);  // a later mm at this address is another one
      return;
    }
    if (e.kind == RSS_EV_EXEC) {
      const auto older_mm = [&](uint64_t mm, uint32_t tgid) {
        return tgid == e.tgid && mm != e.mm;
      };
      std::erase_if(pending_,
                    [&](const auto& p) { return older_mm(p.first, p.second); });
      std::erase_if(held_, [&](const Held& h) {
        return older_mm(h.name.mm, h.name.tgid);
      });
    }
    const bool owner = e.kind == RSS_EV_EXEC ||
                       (e.kind == RSS_EV_UPDATE && e.flags & RSS_EVF_OWNER);
    if (owner && named_.insert(e.mm).second) pending_.push_back({e.mm, e.tgid});
  }
  // The (mm, tgid) pairs to read a name for now, oldest first.
  std::vector<std::pair<uint64_t, uint32_t>> take() {
    return std::exchange(pending_, {});
  }
  // The name read for one of them at `now_ns` (CLOCK_MONOTONIC).
  void hold(RecordedName name, uint64_t now_ns) {
    held_.push_back({std::move(name), now_ns});
  }
  // The names held kHoldNs by `now_ns`, oldest first (all: UINT64_MAX).
  std::vector<RecordedName> ready(uint64_t now_ns) {
    std::vector<RecordedName> out;
    while (!held_.empty() && (now_ns == UINT64_MAX ||
                              now_ns - held_.front().read_ns >= kHoldNs)) {
      out.push_back(std::move(held_.front().name));
      held_.pop_front();
    }
    return out;
  }

 private:
  struct Held {
    RecordedName name;
    uint64_t read_ns = 0;
  };
  std::unordered_set<uint64_t> named_;
  std::vector<std::pair<uint64_t, uint32_t>> pending_;
  std::deque<Held> held_;
};

// The replay's side: the names a file holds, in file order.
class RecordedNames {
 public:
  void add(const RecordedName& name) {
    by_owner_[{name.tgid, name.mm}].push_back(name.comm);
  }
  bool empty() const { return by_owner_.empty(); }

  // The name of each of `mms`, in the same order; empty where the file
  // names none. The mms of one (tgid, address) take that pair's names in
  // the order they were made, the newest the last name: the oldest may
  // have been left out of `mms` (--mms-kept), never the newest.
  std::vector<std::optional<std::string>> names_of(
      const std::vector<MmSummary>& mms) const;

 private:
  std::map<std::pair<uint32_t, uint64_t>, std::vector<std::string>> by_owner_;
};

}  // namespace rssaudit
