/* iter/task: snapshots of the RSS counters of the mms the daemon joined
 * mid-life, whose exact values the update stream alone does not give (a
 * CPU's slot, or before 6.2 a task's cache, from before the capture). The
 * daemon names them in `snapshot_wanted` and reads this iterator; for each
 * task of a wanted mm the program takes a record's sequence number
 * (RSS_EV_SNAPSHOT) and only then reads the counters, and writes what it
 * read to the iterator's output (struct rss_snapshot). Why that order makes
 * the values exact once every CPU (task) whose update raced the reads has
 * recorded again: docs/kernel.md, "Baselines of mms older than the
 * capture". */
/* Not the hot path: no kfunc (percpu_counter.bpf.h read_s32()). */
#define RSSAUDIT_PROBE_READ
#include "percpu_counter.bpf.h"
#include "task_rss.bpf.h"

/* The mms to read (keys: mm addresses). Since 6.2 one read per mm: the
 * entry is deleted once written. Before, every task of the mm is read
 * (each has its own cache): the daemon empties the map after a pass. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1 << 18); /* DeltaReconstructor's max_mms */
  __type(key, __u64);
  __type(value, __u8);
} snapshot_wanted SEC(".maps");

/* The non-zero slots of the mm being read, gathered before they are
 * written (their number is known only at the end). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rss_snapshot_slots);
} snapshot_scratch SEC(".maps");

/* Possible CPUs (set before load): the slots to read. */
const volatile __u32 possible_cpus = 1;
/* The last snapshot's id. Only the daemon's one reader runs the iterator,
 * one task at a time, so a plain add suffices. */
__u64 snapshot_id = 0;

struct slot_walk {
  __u64 counters[4]; /* rss_stat[m].counters, as numbers */
  __u32 n;
  __u32 truncated;
};

/* bpf_loop()'s body: the four slots of `cpu`, the non-zero ones kept. */
static long read_cpu_slots(__u32 cpu, void* ctx) {
  struct slot_walk* w = ctx;
  __u32 zero = 0;
  struct cpu_state* cs = bpf_map_lookup_elem(&cpu_states, &zero);
  struct rss_snapshot_slots* out =
      bpf_map_lookup_elem(&snapshot_scratch, &zero);
  if (!cs || !out) return 1;
  __u64 offset;
  if (cpu_offset(cs, cpu, &offset)) return 0; /* not a possible CPU */
  for (int m = 0; m < 4; ++m) {
    const __s32 v = read_slot_at(w->counters[m], offset);
    if (!v) continue;
    if (w->n >= RSS_SNAPSHOT_MAX_SLOTS) {
      w->truncated = 1;
      return 1;
    }
    struct rss_snapshot_slot* s =
        &out->slot[w->n & (RSS_SNAPSHOT_MAX_SLOTS - 1)];
    s->cpu = (__u16)cpu;
    s->member = (__u8)m;
    s->pad = 0;
    s->value = v;
    ++w->n;
  }
  return 0;
}

/* Takes the record that places the snapshot in the sequence; its id, or
 * 0 when the stream refused it (counted as a drop, like any record). */
static __always_inline __u64 place(struct task_struct* task, __u64 mm) {
  struct stream_claim claim;
  struct rss_event* e =
      event_reserve(&claim, RSS_EV_SNAPSHOT, mm, task->pid, task->tgid,
                    bpf_ktime_get_ns(), RSS_EVF_OWNER);
  if (!e) return 0;
  /* After the number, before the reads (capture.bpf.h): a full barrier. */
  __sync_fetch_and_add(&snapshot_epoch, 1);
  const __u64 id = ++snapshot_id;
  e->aux = (__s64)id;
  stream_publish(&claim);
  return id;
}

/* Since 6.2: `count` before and after every possible CPU's slot. */
static __always_inline int read_percpu(struct seq_file* seq,
                                       struct task_struct* task,
                                       struct mm_struct* mm, __u64 key) {
  __u32 zero = 0;
  struct cpu_state* cs = bpf_map_lookup_elem(&cpu_states, &zero);
  struct rss_snapshot_slots* slots =
      bpf_map_lookup_elem(&snapshot_scratch, &zero);
  if (!cs || !slots) return 0;
  struct rss_snapshot head = {};
  head.mm = key;
  head.tid = task->pid;
  head.tgid = task->tgid;
  head.id = place(task, key);
  if (!head.id) return 0;
  struct slot_walk walk = {};
  for (int m = 0; m < 4; ++m) {
    struct percpu_counter* pc = rss_counter(mm, m);
    if (!pc) return 0;
    head.count[m] = pc->count;
    walk.counters[m] = launder(cs, pc->counters);
  }
  bpf_loop(possible_cpus, read_cpu_slots, &walk, 0);
  for (int m = 0; m < 4; ++m) {
    struct percpu_counter* pc = rss_counter(mm, m);
    if (!pc) return 0;
    head.count_after[m] = pc->count;
  }
  /* The task still holds the mm: it was not freed under the reads. */
  if ((__u64)task->mm != key) return 0;
  head.flags = RSS_SNAP_PERCPU | (walk.truncated ? RSS_SNAP_TRUNCATED : 0);
  head.slots = walk.n;
  if (bpf_seq_write(seq, &head, sizeof(head))) return 0;
  const __u32 bytes = walk.n * sizeof(struct rss_snapshot_slot);
  if (bytes > sizeof(*slots)) return 0;
  /* An overflow of the output makes the iterator run this task again. */
  if (bytes && bpf_seq_write(seq, slots, bytes)) return 0;
  bpf_map_delete_elem(&snapshot_wanted, &key);
  return 0;
}

/* Before 6.2: the atomics before and after this task's own cache, and
 * whether the task stayed off its CPU throughout. Its cached updates are
 * recorded before their add, in one run with preemption off (the page
 * table lock, task_cache.bpf.c): a task that did not run across the reads
 * had none between its record and its add. */
static __always_inline int read_task_cache(struct seq_file* seq,
                                           struct task_struct* task,
                                           struct mm_struct* mm, __u64 key) {
  struct rss_snapshot head = {};
  head.mm = key;
  head.tid = task->pid;
  head.tgid = task->tgid;
  const int on_cpu = task->on_cpu;
  const __u64 switches = task->nvcsw + task->nivcsw;
  head.id = place(task, key);
  if (!head.id) return 0;
  for (int m = 0; m < 4; ++m) {
    head.count[m] = atomic_count(mm, m);
    head.cache[m] = cached(task, m);
    head.count_after[m] = atomic_count(mm, m);
  }
  /* A full barrier (a fetching atomic): the checks below come after the
   * reads. */
  if (__sync_fetch_and_add(&snapshot_id, 0) == ~0ULL) return 0;
  const bool quiet =
      !on_cpu && !task->on_cpu && switches == task->nvcsw + task->nivcsw;
  if ((__u64)task->mm != key) return 0;
  head.flags = RSS_SNAP_TASK_CACHE | (quiet ? RSS_SNAP_TASK_QUIET : 0);
  bpf_seq_write(seq, &head, sizeof(head));
  return 0;
}

/* The end of a pass: a record with no mm, aux = the pass's last id. Every
 * snapshot of the pass comes before it in the sequence. */
static __always_inline int end_pass(void) {
  struct stream_claim claim;
  struct rss_event* e =
      event_reserve(&claim, RSS_EV_SNAPSHOT, 0, 0, 0, bpf_ktime_get_ns(), 0);
  if (!e) return 0;
  e->aux = (__s64)snapshot_id;
  stream_publish(&claim);
  return 0;
}

SEC("iter/task")
int snapshot_task(struct bpf_iter__task* ctx) {
  struct task_struct* task = ctx->task;
  if (!task) return end_pass();
  struct mm_struct* mm = task->mm;
  if (!mm || (task->flags & PF_KTHREAD)) return 0;
  __u64 key = (__u64)mm;
  if (!bpf_map_lookup_elem(&snapshot_wanted, &key)) return 0;
  struct seq_file* seq = ctx->meta->seq;
  if (bpf_core_field_exists(((struct mm_struct___pre62*)0)->rss_stat.count))
    return read_task_cache(seq, task, mm, key);
  return read_percpu(seq, task, mm, key);
}
