#include "core/schemes/sync_before_query.h"

namespace rssaudit {

bool SyncBeforeQuery::on_event(const LifeEvent& e) {
  // The RFC folds in the exit path and before rusage/taskstats read the
  // counters; every other path keeps upstream's behaviour.
  if (e.kind != LifeKind::kMmExit && e.kind != LifeKind::kRusageQuery)
    return false;
  upstream_.fold_all();
  return true;
}

}  // namespace rssaudit
