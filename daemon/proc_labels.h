// Labels (start time, comm, cgroup) of live mms the history recorder has not
// recorded (filtered out, or born since its last tick), read from /proc for
// the live view. Each costs a few /proc reads, tens of milliseconds on a
// loaded host, and every view asked again for each process the filters
// leave out and each newborn of a fork storm. So a read is kept until the
// next tick (when the recorder names a newborn itself), and a view reads
// at most kReadsPerView: the processes beyond stay unlabelled in that
// view (in no comm or cgroup group, as any process not read yet) and are
// read by the next views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "daemon/live_view_builder.h"

namespace rssaudit {

class ProcLabels {
 public:
  static constexpr size_t kReadsPerView = 64;

  // A view begins: its reads start from the full allowance.
  void begin_view() { reads_left_ = kReadsPerView; }
  // A tick begins: what was read may have changed (an exec renames).
  void begin_tick() { known_.clear(); }

  // The labels of mm `mm` (first owner `tgid`): kept, or `read(tgid)`
  // (nullopt: the process is gone) while the view's allowance lasts.
  template <class Read>
  std::optional<ProcessLabels> lookup(uint64_t mm, uint32_t tgid, Read&& read) {
    if (const auto it = known_.find(mm);
        it != known_.end() && it->second.tgid == tgid)
      return it->second.labels;
    if (reads_left_ == 0) return std::nullopt;
    --reads_left_;
    Known& k = known_[mm];
    k = Known{tgid, read(tgid)};
    return k.labels;
  }

 private:
  struct Known {
    uint32_t tgid = 0;
    std::optional<ProcessLabels> labels;
  };
  std::unordered_map<uint64_t, Known> known_;  // by mm address
  size_t reads_left_ = kReadsPerView;
};

}  // namespace rssaudit
