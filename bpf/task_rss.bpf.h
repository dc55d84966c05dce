/* Reading the RSS counters of kernels before Linux 6.2 (f1a7941243c1):
 * the mm's atomics and a task's own cache (SPLIT_RSS_COUNTING). Shared by
 * the update programs (task_cache.bpf.c) and the snapshot iterator
 * (snapshot.bpf.c). */
#ifndef RSSAUDIT_TASK_RSS_BPF_H
#define RSSAUDIT_TASK_RSS_BPF_H

#include "cpu_state.bpf.h"

/* The atomic of `member`. Read with a helper: 6.1's verifier cannot walk
 * into an array of atomic_long_t, a typedef ("Type 'atomic_long_t' is not a
 * struct"), so a plain load of it is refused. */
static __always_inline long atomic_count(struct mm_struct* mm, int member) {
  struct mm_struct___pre62* old = (void*)mm;
  long v = 0;
  switch (member) {
    case 0:
      v = BPF_CORE_READ(old, rss_stat.count[0].counter);
      break;
    case 1:
      v = BPF_CORE_READ(old, rss_stat.count[1].counter);
      break;
    case 2:
      v = BPF_CORE_READ(old, rss_stat.count[2].counter);
      break;
    case 3:
      v = BPF_CORE_READ(old, rss_stat.count[3].counter);
      break;
  }
  return v;
}

static __always_inline int cached(struct task_struct* task, int member) {
  struct task_struct___pre62* old = (void*)task;
  switch (member) {
    case 0:
      return old->rss_stat.count[0];
    case 1:
      return old->rss_stat.count[1];
    case 2:
      return old->rss_stat.count[2];
    case 3:
      return old->rss_stat.count[3];
  }
  return 0;
}

#endif
