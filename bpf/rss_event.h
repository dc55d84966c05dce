/* The record the BPF programs put in their per-CPU streams; shared by the BPF
 * programs (C) and the daemon (C++). Fixed size, naturally aligned, no
 * implicit padding: the layout is the ABI between the two sides. */
#ifndef RSSAUDIT_RSS_EVENT_H
#define RSSAUDIT_RSS_EVENT_H

#ifndef RSSAUDIT_VMLINUX_MIN_H
#include <linux/types.h>
#endif

enum rss_event_kind {
  RSS_EV_UPDATE = 1,    /* one mm->rss_stat[member] update */
  RSS_EV_NEW_TASK = 2,  /* task_newtask: aux = clone flags */
  RSS_EV_EXEC = 3,      /* sched_process_exec: mm = new mm, aux = 0 */
  RSS_EV_EXIT = 4,      /* sched_process_exit, before the mm is released */
  RSS_EV_EXIT_MMAP = 5, /* exit_mmap: the mm's pages are gone */
  /* Before Linux 6.2: sync_mm_rss() is about to fold the current task's
   * cache into the mm's atomics. Four records, members 0 to 3 in order
   * (aux = the cached pages of `member`, 0: nothing to fold; slot = the
   * task's rss_stat.events); the fold of each non-zero one, an UPDATE
   * record (RSS_EVF_ATOMIC), follows from the same task. */
  RSS_EV_CACHE_SYNC = 6,
  /* The snapshot iterator (snapshot.bpf.c) read the counters of `mm` (6.2+)
   * or the cache of task `tid` (before 6.2) just after taking this
   * record's sequence number: aux = the snapshot's id, whose values the
   * daemon reads from the iterator (struct rss_snapshot). */
  RSS_EV_SNAPSHOT = 7,
};

/* rss_event.flags */
enum {
  /* The updating task's own mm (current->mm == mm). */
  RSS_EVF_OWNER = 1 << 0,
  /* The mm is being populated by its creator: a fork copying page tables
   * into a child still in TASK_NEW, or an exec setting up its new mm.
   * The counters of such an mm started at zero under our eyes. */
  RSS_EVF_CREATING = 1 << 1,
  /* sched_process_exit: the last thread of the group. */
  RSS_EVF_GROUP_DEAD = 1 << 2,
  /* UPDATE by the owner inside one of its user page faults. */
  RSS_EVF_IN_FAULT = 1 << 3,
  /* Any kind: a record was lost (its CPU's stream full) before this one; what
   * the daemon knew of every mm's slots is void from here. Always 0 in
   * recordings made before this bit existed, which had no way to say. */
  RSS_EVF_AFTER_LOSS = 1 << 4,
  /* UPDATE, before Linux 6.2: add_mm_counter_fast() added to the owner's
   * per-task cache, which no reader sees (aux = the mm's atomic, unchanged;
   * slot = the delta). */
  RSS_EVF_CACHED = 1 << 5,
  /* UPDATE, before Linux 6.2: an add to the mm's atomic (aux = its value
   * after the add; slot = how far it moved from the add to this record's
   * sequence number, 0 when no other add came between). */
  RSS_EVF_ATOMIC = 1 << 6,
  /* UPDATE that left its slot at zero (6.2+): `count` read before the
   * record's sequence number was taken already held `aux`, so no add
   * whose record comes after another record of its CPU or task later in
   * the sequence is in it (docs/kernel.md). Always 0 in recordings made
   * before this bit existed, which are ordered by time alone. */
  RSS_EVF_COUNT_STEADY = 1 << 7,
};

struct rss_event {
  __u64 mm;       /* kernel address of the mm_struct */
  __s64 aux;      /* UPDATE: rss_stat[member].count after the update;
                     NEW_TASK: clone flags; EXEC: 0 (older versions'
                     recordings hold the task's previous mm: honoured);
                     EXIT with RSS_EVF_GROUP_DEAD: the process's start
                     time in USER_HZ (/proc/PID/stat field 22; 0 in older
                     recordings) */
  __u64 start_ns; /* bpf_ktime_get_ns() before `aux` and `slot` are
                     read, just after the add; UPDATE: 0 (untimed) when
                     the slot is non-zero and `count` is what this CPU's
                     previous record of the mm showed (no time needed,
                     rss_stat.bpf.c) */
  __u32 tid;
  __u32 tgid;
  __s32 slot;    /* UPDATE: this CPU's slot of the counter after the add */
  __u32 span_ns; /* end - start: `aux` and `slot` were read in between;
                    UPDATE with a non-zero slot: 0, its end not taken; in
                    the stream, the repeats that joined it (below) */
  __u16 cpu;
  __u16 faults; /* UPDATE by the owner: the task's page faults so far
                   (min_flt + maj_flt, plus a user fault in progress), mod
                   2^16; user space differences them per task. But with
                   RSS_EVF_ATOMIC (before 6.2): the owner's cache of the
                   member at the add, an __s16, ±0x7fff when it did not
                   fit (0 for another task's add) */
  __u8 kind;    /* enum rss_event_kind */
  __u8 member;  /* UPDATE: MM_FILEPAGES..MM_SHMEMPAGES */
  __u8 flags;   /* RSS_EVF_* */
  __u8 preempt; /* UPDATE: RSS_PREEMPT_KNOWN | the preemption depth at the
                   tracepoint (preempt_count() & 0x7f, the tracepoint's own
                   level included), or 0 when unknown: where a lock holds
                   preemption off from the add to the record, the depth is
                   above the tracepoint's own (rss_stat.bpf.c) */
};
#define RSS_PREEMPT_KNOWN 0x80

/* The transport: each CPU has its own stream of records, `slots_per_cpu`
 * slots of the `slots` map from index cpu * slots_per_cpu, written only by
 * the capture programs running on that CPU (never preempted: every hook is
 * a tracepoint) and read by the daemon. One global sequence number orders
 * the records of all CPUs. A BPF ring buffer (a lock with interrupts off
 * and an atomic exchange on a cold header per record) cost 36-134 ns more
 * per record here (docs/kernel.md). */
/* A repeat: an update identical to its CPU's latest record, an UPDATE with
 * a non-zero slot, joins that record instead of taking a slot of its own
 * while the consumer has not read it: the record's span_ns counts them. Same
 * task, no context switch of it since, its mm's only user (so no other
 * CPU's update of the mm falls between), no snapshot begun since the
 * record's number was taken (so every add placed before a snapshot is in
 * what it reads), same counter, flags and
 * preemption depth, untimed, `count` unchanged, and it moves the slot and
 * the task's fault total by what the record moved them since the update
 * record before it on this CPU, which was one by the same task of the same
 * counter (rss_stat.bpf.c repeat_run()). The consumer closes a record by
 * setting RSS_REPEATS_CLOSED with an atomic exchange, which returns the
 * repeats, and hands over the record and its repeats, each moved on by that
 * move (capture/stream_reader.h): the audit sees every update. */
#define RSS_REPEATS_CLOSED 0x80000000u
/* Both sides change span_ns through the aligned 64-bit word it shares with
 * `slot` (little-endian: span_ns is its upper half), one size of atomic. */
#define RSS_REPEAT_WORD (1ULL << 32)
#define RSS_REPEATS_CLOSED_WORD ((__u64)RSS_REPEATS_CLOSED << 32)

struct rss_slot {
  __u64 seq; /* taken after the checks: every seq has exactly one record */
  struct rss_event event;
};

/* The `positions` map's value, one per CPU: the producer's line (head,
 * busy) and the consumer's (tail) a cache line apart. The stream holds the
 * records at positions [tail, head), position p in slot p % slots_per_cpu. */
struct rss_stream_position {
  __u64 head; /* records published; the BPF side adds 1 after each */
  __u64 busy; /* a program is writing this CPU's next record */
  /* Records this CPU's programs could not write (a full or busy stream).
   * Here, not in a per-CPU map, so that user space reads it without a
   * syscall: a map syscall holds bpf_prog_active, and on a preemptible
   * kernel before 6.7 every kprobe program on that CPU is skipped,
   * uncounted, while its task is preempted there. */
  __u64 drops;
  __u64 pad1[5];
  __u64 tail; /* records the daemon is done with */
  __u64 pad2[7];
};

/* The `exited` map's value: who a process was, written when its last
 * thread exits, for the daemon to name a process its parent reaped before
 * /proc could be read. Slot tgid % RSS_EXITED_SLOTS: a direct-mapped cache
 * (a later exit in the same slot replaces it; `tgid` tells). 32 768 slots
 * (1 MiB): the kernel's default pid_max, so there only a reused pid shares
 * a slot; with a larger pid_max, two exits 32 768 pids apart before the
 * daemon reads the first. */
#define RSS_EXITED_SLOTS 32768
struct exited_process {
  __u32 tgid;
  __u32 pad;
  __u64 start_ticks; /* /proc/PID/stat field 22: start_boottime in USER_HZ */
  char comm[16];     /* TASK_COMM_LEN */
};

/* What the snapshot iterator (snapshot.bpf.c) writes for each task it
 * reads, in the iterator's output: one rss_snapshot, then `slots`
 * rss_snapshot_slot. Its RSS_EV_SNAPSHOT record (same id) places it in
 * the capture's sequence: every read came after that record's number was
 * taken (docs/kernel.md, "Baselines of mms older than the capture"). */
enum {
  /* Since 6.2: count and the non-zero slots of every possible CPU. */
  RSS_SNAP_PERCPU = 1 << 0,
  /* Before 6.2: the task's own cache (cache[]), and the atomics. */
  RSS_SNAP_TASK_CACHE = 1 << 1,
  /* The task was off its CPU and did not run from before the record's
   * number was taken to after its cache was read: no cached update of
   * it was between its record and its add (they run back to back). */
  RSS_SNAP_TASK_QUIET = 1 << 2,
  /* More non-zero slots than RSS_SNAPSHOT_MAX_SLOTS: the slots are not
   * all there, the values unknown. */
  RSS_SNAP_TRUNCATED = 1 << 3,
};
#define RSS_SNAPSHOT_MAX_SLOTS 2048
struct rss_snapshot {
  __u64 id; /* its RSS_EV_SNAPSHOT record's aux */
  __u64 mm;
  __u32 tid;
  __u32 tgid;
  __s64 count[4];       /* rss_stat[m].count (before 6.2: the atomics),
                           read before the slots */
  __s64 count_after[4]; /* the same, read after them: equal unless a fold
                           (or an atomic add) came in between */
  __s32 cache[4];       /* RSS_SNAP_TASK_CACHE: task->rss_stat.count[] */
  __u32 flags;          /* RSS_SNAP_* */
  __u32 slots;          /* rss_snapshot_slot that follow */
};
struct rss_snapshot_slot {
  __u16 cpu;
  __u8 member;
  __u8 pad;
  __s32 value;
};
/* The scratch the iterator gathers a task's slots in before writing them. */
struct rss_snapshot_slots {
  struct rss_snapshot_slot slot[RSS_SNAPSHOT_MAX_SLOTS];
};

#ifdef __cplusplus
static_assert(sizeof(rss_snapshot) == 112, "rss_snapshot is a fixed ABI");
static_assert(sizeof(rss_snapshot_slot) == 8, "rss_snapshot_slot is 8 bytes");
static_assert(sizeof(rss_event) == 48, "rss_event is a fixed 48-byte ABI");
static_assert(alignof(rss_event) == 8, "rss_event is 8-byte aligned");
static_assert(sizeof(rss_slot) == 56, "rss_slot is a fixed 56-byte ABI");
static_assert(__builtin_offsetof(rss_event, slot) % 8 == 0 &&
                  __builtin_offsetof(rss_event, span_ns) ==
                      __builtin_offsetof(rss_event, slot) + 4,
              "slot and span_ns share one aligned 64-bit word");
static_assert(sizeof(rss_stream_position) == 128, "two cache lines");
#else
_Static_assert(sizeof(struct rss_event) == 48, "rss_event size");
_Static_assert(sizeof(struct rss_slot) == 56, "rss_slot size");
_Static_assert(sizeof(struct rss_stream_position) == 128, "position size");
#endif

#endif
