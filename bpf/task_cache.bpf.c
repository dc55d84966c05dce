/* The RSS updates of kernels before Linux 6.2 (f1a7941243c1), whose counters
 * are atomics fed by per-task caches (SPLIT_RSS_COUNTING, docs/counters.md):
 * add_mm_counter_fast() puts an update of the caller's own mm into
 * current->rss_stat and fires no tracepoint; sync_mm_rss() folds that cache
 * into the atomics at a task's 66th fault, exit, exec and a few madvise and
 * zap paths; every other update goes to the atomic and fires
 * rss_stat(mm, member, count). One record per update either way, and four
 * per sync (one per member), so the daemon knows the atomics (what every
 * reader sees), each task's cache, and their sum: the exact value. User
 * space loads these where mm->rss_stat is a struct mm_rss_stat, and
 * rss_stat.bpf.c elsewhere (capture/bpf_capture.cc). */
#include "task_rss.bpf.h"

/* mm/memory.c: `if (task->mm == mm) task->rss_stat.count[member] += val;
 * else add_mm_counter(mm, member, val);`. Runs before the add. Every caller
 * is in the fault path and holds the page-table lock, so preemption is off
 * from this program to the add. Untimed: its delta is its own, and nothing
 * orders it against other CPUs' records. */
SEC("fentry/add_mm_counter_fast")
int BPF_PROG(on_add_mm_counter_fast, struct mm_struct* mm, int member,
             int val) {
  struct task_struct* cur = bpf_get_current_task_btf();
  /* Another mm's update goes to the atomic: on_rss_stat_atomic has it. */
  if (cur->mm != mm || (unsigned)member >= 4) return 0;
  __u32 tgid = cur->tgid;
  if (!mm_wanted((__u64)mm, tgid, true)) return 0;
  struct stream_claim claim;
  struct rss_event* e =
      event_reserve(&claim, RSS_EV_UPDATE, (__u64)mm, cur->pid, tgid, 0,
                    RSS_EVF_OWNER | RSS_EVF_CACHED | RSS_EVF_IN_FAULT);
  if (!e) return 0;
  e->member = member;
  e->faults = faults_so_far(cur, true);
  e->aux = atomic_count(mm, member);
  e->slot = val;
  stream_publish(&claim);
  return 0;
}

/* One record per member, in member order, before the sync folds any
 * (aux = the cached pages of `member`, 0: nothing to fold; slot = the
 * task's rss_stat.events): the UPDATE records of the folds follow from
 * this task. sync_mm_rss() runs preemptible (at fault entry, exit, exec,
 * zaps). A BPF trampoline skips a program while another run of it on the
 * same CPU is in progress, so an fentry program preempted there would make
 * the syncs of other tasks on its CPU go unseen (counted as recursion
 * misses): the kprobe, which runs with preemption off, is loaded where
 * the kernel has kprobes (capture/bpf_capture.cc). */
static __always_inline int announce_sync(__u64 mm) {
  struct task_struct* cur = bpf_get_current_task_btf();
  if (!bpf_core_field_exists(((struct task_struct___pre62*)0)->rss_stat))
    return 0;
  const __u32 tgid = cur->tgid;
  const bool owner = (__u64)cur->mm == mm;
  if (!mm_wanted(mm, tgid, owner)) return 0;
  const __u64 start_ns = bpf_ktime_get_ns();
  const int events = ((struct task_struct___pre62*)cur)->rss_stat.events;
  for (int m = 0; m < 4; ++m) {
    struct stream_claim claim;
    struct rss_event* e =
        event_reserve(&claim, RSS_EV_CACHE_SYNC, mm, cur->pid, tgid, start_ns,
                      owner ? RSS_EVF_OWNER : 0);
    if (!e) return 0;
    e->member = m;
    e->aux = cached(cur, m);
    e->slot = events;
    stream_publish(&claim);
  }
  return 0;
}

SEC("kprobe/sync_mm_rss")
int on_sync_mm_rss_kprobe(struct pt_regs* ctx) {
  return announce_sync(ctx->di); /* x86-64: the first argument */
}

SEC("fentry/sync_mm_rss")
int BPF_PROG(on_sync_mm_rss, struct mm_struct* mm) {
  return announce_sync((__u64)mm);
}

/* include/linux/mm.h add_mm_counter(): `count =
 * atomic_long_add_return(value, ...); mm_trace_rss_stat(mm, member,
 * count)`. The delta is this count minus the one before it, which the
 * daemon chains in sequence order; the atomic read again after the
 * sequence number is taken tells whether another add came between this
 * one's add and its place in the sequence (rss_event.h). */
SEC("tp_btf/rss_stat")
int BPF_PROG(on_rss_stat_atomic, struct mm_struct* mm, int member, long count) {
  if (!bpf_core_field_exists(((struct mm_struct___pre62*)0)->rss_stat.count) ||
      (unsigned)member >= 4)
    return 0;
  struct task_struct* cur = bpf_get_current_task_btf();
  const __u32 tgid = cur->tgid;
  const bool owner = cur->mm == mm;
  if (!mm_wanted((__u64)mm, tgid, owner)) return 0;
  /* Not RSS_EVF_IN_FAULT, even from a fault: what the kernel cached is
   * what the per_task model caches, and that is add_mm_counter_fast()'s.
   * The owner's cache of the member as it is now: a fold's add runs before
   * sync_mm_rss() zeroes it, so a fold whose announcement went unseen is
   * still told apart (rss_event.h). */
  __u8 flags = RSS_EVF_ATOMIC;
  __u16 cache_now = 0;
  if (owner) {
    flags |= RSS_EVF_OWNER;
    const int c = cached(cur, member);
    cache_now = (__u16)(c > 0x7fff ? 0x7fff : c < -0x7fff ? -0x7fff : c);
  } else if (mm_creating(mm, cur)) {
    flags |= RSS_EVF_CREATING;
  }
  const __u64 start_ns = bpf_ktime_get_ns();
  struct stream_claim claim;
  struct rss_event* e = event_reserve(&claim, RSS_EV_UPDATE, (__u64)mm,
                                      cur->pid, tgid, start_ns, flags);
  if (!e) return 0;
  e->member = member;
  e->faults = cache_now;
  e->aux = count;
  const __s64 moved = atomic_count(mm, member) - count;
  e->slot = moved == 0            ? 0
            : moved > 0x7fffffff  ? 0x7fffffff
            : moved < -0x7fffffff ? -0x7fffffff
                                  : (__s32)moved;
  e->span_ns = bpf_ktime_get_ns() - start_ns;
  stream_publish(&claim);
  return 0;
}
