/* What each CPU's capture programs keep between runs (the slot offset, the
 * counts its records showed, the task in a page fault there), and how an
 * update tells it is inside a page fault: shared by the programs of both
 * counting schemes (rss_stat.bpf.c, task_cache.bpf.c, page_fault.bpf.c). */
#ifndef RSSAUDIT_CPU_STATE_BPF_H
#define RSSAUDIT_CPU_STATE_BPF_H

#include "capture.bpf.h"

/* This CPU's latest update record from on_rss_stat (see repeat_run() in
 * rss_stat.bpf.c): what it showed, at which stream position, and what it
 * moved since the update record before it, when both were one task's
 * non-zero-slot updates of one counter (`open`: a repeat may join it). */
struct cpu_run {
  __u64 mm;
  __u64 pos;      /* its position in this CPU's stream */
  __u64 switches; /* its task's nvcsw + nivcsw then */
  __u64 snapshots; /* snapshot_epoch before its number was taken */
  __s64 count;
  __s32 slot;
  __s32 slot_move;
  __u32 tid;
  __u16 faults;
  __u16 fault_move;
  __u8 member;
  __u8 flags;
  __u8 preempt;
  __u8 known; /* the fields above are of a published update */
  __u8 open;
  __u8 pad[7];
};

struct cpu_state {
  __u64 offset;  /* __per_cpu_offset[this CPU] */
  __u64 scratch; /* launders pointers into plain numbers */
  __u64 ready;
  /* The mm of this CPU's latest record, mm_epoch then, and the `count` of
   * each member its records last showed (see needs_time()). */
  __u64 seen_mm;
  __u64 seen_epoch;
  __s64 seen_count[4];
  /* The task (as a number) whose page fault started last on this CPU,
   * and its min_flt + maj_flt then (see in_page_fault()). */
  __u64 fault_task;
  __u64 fault_total;
  /* This CPU's preemption count, or 0: unknown (learn_preempt_count()). */
  __u64 preempt_at;
  struct cpu_run run;
};

RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct cpu_state);
} cpu_states SEC(".maps");

/* A number the verifier treats as a scalar: the store into a map value and
 * the load back (volatile, so clang keeps both) drop the pointer type, which
 * forbids arithmetic. Needs CAP_BPF+CAP_PERFMON (pointer leaks allowed). */
static __always_inline __u64 launder(struct cpu_state* cs, const void* p) {
  *(volatile __u64*)&cs->scratch = (__u64)p;
  return *(volatile __u64*)&cs->scratch;
}

/* The task's faults so far, counting a user fault in progress: the kernel
 * accounts a fault in min_flt/maj_flt only after handling it. Cumulative, so
 * no per-task state is kept here; the daemon takes differences. */
static __always_inline __u16 faults_so_far(struct task_struct* cur,
                                           bool in_fault) {
  return (__u16)(cur->min_flt + cur->maj_flt + in_fault);
}

/* Whether `cur` is inside a page fault, i.e. in handle_mm_fault(), which
 * before 6.2 ran check_sync_rss_stat() and cached the fault's updates in
 * the task (docs/counters.md). No task field tells it on every kernel:
 * in_user_fault (user faults only) is there with CONFIG_MEMCG_V1 (6.18
 * here, not Debian's 6.12), in_lru_fault (any fault, unless the vma is
 * VM_SEQ_READ/VM_RAND_READ) with CONFIG_LRU_GEN (6.12, not 6.18 here). So
 * the page-fault exception marks its CPU (on_page_fault()): the mark holds
 * while this task's fault total has not moved, i.e. until
 * mm_account_fault() counts the fault. The fields cover a fault that
 * slept and resumed on another CPU. */
static __always_inline bool in_page_fault(struct cpu_state* cs,
                                          struct task_struct* cur) {
  if (cs->fault_task && cs->fault_task == launder(cs, cur) &&
      cs->fault_total == cur->min_flt + cur->maj_flt)
    return true;
  if (bpf_core_field_exists(cur->in_user_fault) &&
      BPF_CORE_READ_BITFIELD(cur, in_user_fault))
    return true;
  return bpf_core_field_exists(cur->in_lru_fault) &&
         BPF_CORE_READ_BITFIELD(cur, in_lru_fault);
}

/* The mm is being filled by its creator: fork's copy runs before the child
 * leaves TASK_NEW; exec fills the new mm (owned by current) before switching
 * to it. The old mm an exec tears down is also owned by current but has no
 * user left. Needs mm->owner (CONFIG_MEMCG); without it no mm is new. */
static __always_inline bool mm_creating(struct mm_struct* mm,
                                        struct task_struct* cur) {
  if (!bpf_core_field_exists(mm->owner)) return false;
  struct task_struct* owner = mm->owner;
  if (!owner || mm->mm_users.counter <= 0) return false;
  return owner == cur || (owner->__state & TASK_NEW);
}

#endif
