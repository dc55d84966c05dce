// The names in a recording: which mms the recorder names (a process name
// per mm, format 2 of core/formats/record_format.h), and which summary of a
// replay each name belongs to.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bpf/rss_event.h"
#include "capture/audit_pipeline.h"
#include "core/formats/record_format.h"

namespace rssaudit {

// The recorder's side: every mm the stream shows, once per life of its
// address, with the tgid the audit will give it (that of its first owner
// update, or of the exec that made it).
class MmsToName {
 public:
  void see(const rss_event& e) {
    if (e.kind == RSS_EV_EXIT_MMAP) {
      named_.erase(e.mm);  // a later mm at this address is another one
      return;
    }
    if (e.kind == RSS_EV_EXEC) {
      // The name /proc will give is the new program's: an mm of this
      // process still waiting for its name goes without (never a wrong one).
      std::erase_if(pending_, [&](const auto& p) {
        return p.second == e.tgid && p.first != e.mm;
      });
    }
    const bool owner = e.kind == RSS_EV_EXEC ||
                       (e.kind == RSS_EV_UPDATE && e.flags & RSS_EVF_OWNER);
    if (owner && named_.insert(e.mm).second) pending_.push_back({e.mm, e.tgid});
  }
  // The (mm, tgid) pairs to name now, oldest first: /proc/tgid/comm (or the
  // exit's name) is theirs until the process's next exec.
  std::vector<std::pair<uint64_t, uint32_t>> take() {
    return std::exchange(pending_, {});
  }

 private:
  std::unordered_set<uint64_t> named_;
  std::vector<std::pair<uint64_t, uint32_t>> pending_;
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
