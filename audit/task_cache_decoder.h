// The records of a kernel before Linux 6.2 (bpf/task_cache.bpf.c), whose
// counters are atomics fed by per-task caches: cached updates, atomic adds
// chained in sequence order, and the syncs that fold a task's cache.
#pragma once

#include <cstdint>

#include "audit/reconstruction_core.h"
#include "bpf/rss_event.h"

namespace rssaudit {

class TaskCacheDecoder {
 public:
  explicit TaskCacheDecoder(ReconstructionCore& core) : core_(core) {}

  // An RSS_EV_UPDATE record flagged RSS_EVF_CACHED or RSS_EVF_ATOMIC.
  void on_update(const rss_event& e);
  // An RSS_EV_CACHE_SYNC record: a sync's announcement of one member.
  void on_cache_sync(const rss_event& e);

 private:
  void on_overtaken_add(Pending& p, MmState& st);
  void push_correction(const rss_event& e, MmState& st, int64_t rest);
  void push_cache_correction(const rss_event& e, MmState& st, int m,
                             int64_t delta);

  ReconstructionCore& core_;
};

}  // namespace rssaudit
