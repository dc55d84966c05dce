/* Declarations shared by the capture programs, which bpftool links into one
 * object (see CMakeLists.txt): the maps and settings live in maps.bpf.c and
 * are `extern` everywhere else, so every program writes the same streams
 * and reads the same filters. */
#ifndef RSSAUDIT_CAPTURE_BPF_H
#define RSSAUDIT_CAPTURE_BPF_H

/* The kernel types must come before libbpf's headers. */
// clang-format off
#include "vmlinux_min.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "rss_event.h"
// clang-format on

#ifdef RSSAUDIT_DEFINE_MAPS
#define RSSAUDIT_SHARED
#define RSSAUDIT_ZERO = 0
#else
#define RSSAUDIT_SHARED extern
#define RSSAUDIT_ZERO
#endif

/* The per-CPU streams (rss_event.h); user space sizes both maps before
 * load and maps them. */
#ifndef BPF_F_MMAPABLE
#define BPF_F_MMAPABLE (1U << 10) /* linux/bpf.h, not in vmlinux_min.h */
#endif

RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rss_slot);
} slots SEC(".maps");

RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rss_stream_position);
} positions SEC(".maps");

/* The next record's sequence number. A map of its own, not a global, so
 * that bench/inject_rate's program can share it. */
RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} sequence SEC(".maps");

/* Rung when a CPU's stream reaches a quarter full (stream_reserve()): the
 * daemon sleeps between polls as long as the last rate allows, and a burst
 * that would fill a stream before then wakes it. A ring buffer for its
 * wake-up alone (a record names the CPU): the one map a program can make
 * an fd readable with, from any context (irq_work). Rung once per crossing
 * (40-90 times a second under 16 busy threads here, never while the
 * streams stay short). User space sizes it to a page. */
#ifndef BPF_RB_FORCE_WAKEUP
#define BPF_RB_FORCE_WAKEUP 2 /* linux/bpf.h, not in vmlinux_min.h */
#endif
RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096);
} doorbell SEC(".maps");

/* Identities of processes whose last thread exited. An array, not an LRU
 * hash: its update cost ~1.6 us per exit (bpf_stats), a slot write ~0.
 * Mapped by user space, which reads it without a syscall (see `drops` in
 * rss_event.h for why the daemon makes none). */
RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, RSS_EXITED_SLOTS);
  __type(key, __u32);
  __type(value, struct exited_process);
} exited SEC(".maps");

/* A one-element per-CPU array whose element addresses reveal the per-CPU
 * offset of each CPU (percpu_counter.bpf.h cpu_offset()). */
RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} pcpu_probe SEC(".maps");

/* Set by user space before load (an initializer keeps them in .rodata). */
RSSAUDIT_SHARED const volatile __u32 self_tgid RSSAUDIT_ZERO;   /* auditor */
RSSAUDIT_SHARED const volatile __u32 target_tgid RSSAUDIT_ZERO; /* 0 = all */
/* Slots of each CPU's stream: a power of two. */
RSSAUDIT_SHARED const volatile __u32 slots_per_cpu RSSAUDIT_ZERO;
/* Offsets in the kernel's per-CPU section (.data..percpu, from its BTF)
 * of this CPU's preemption count, current task and runqueue; 0: unknown
 * (rss_stat.bpf.c learn_preempt_count()). */
RSSAUDIT_SHARED const volatile __u64 pcpu_preempt_count RSSAUDIT_ZERO;
RSSAUDIT_SHARED const volatile __u64 pcpu_current_task RSSAUDIT_ZERO;
RSSAUDIT_SHARED const volatile __u64 pcpu_runqueues RSSAUDIT_ZERO;
/* Learned from the first update a process makes to its own mm. */
RSSAUDIT_SHARED __u64 self_mm RSSAUDIT_ZERO;
RSSAUDIT_SHARED __u64 target_mm RSSAUDIT_ZERO;
/* Set when a record could not be reserved; the next reservation takes it
 * and flags its record RSS_EVF_AFTER_LOSS, so the loss has a place in the
 * stream. Taken before reserving: the flagged record is then always after
 * the failure. One load per record when nothing was lost. */
RSSAUDIT_SHARED __u32 loss_pending RSSAUDIT_ZERO;
/* Counts snapshot records (snapshot.bpf.c place()), each bumped after its
 * record's number is taken and before its reads: a repeat may join a record
 * only while no snapshot has begun since that record's number was taken
 * (rss_stat.bpf.c repeat_run()), so every add placed before a snapshot is
 * in what it reads. Written once per snapshot, read per update. */
RSSAUDIT_SHARED __u64 snapshot_epoch RSSAUDIT_ZERO;
/* Counts exit_mmap calls: an mm address seen before one may be another mm
 * after it (see needs_time() in rss_stat.bpf.c). */
RSSAUDIT_SHARED __u64 mm_epoch RSSAUDIT_ZERO;

/* The kfuncs: these programs are built twice (bpf/CMakeLists.txt), with
 * RSSAUDIT_KFUNCS for kernels whose BTF has bpf_rdonly_cast() (6.2,
 * fd264ca02094) and bpf_preempt_disable() (6.10, fc7566ad0a82), and
 * without for the rest. A kfunc the kernel lacks, even a weak one, makes
 * libbpf search the modules' BTF, which takes CAP_SYS_ADMIN: the service
 * has not got it, so an object must not name a kfunc its kernel lacks. */
#ifdef RSSAUDIT_KFUNCS
extern void* bpf_rdonly_cast(const void* obj, __u32 btf_id) __ksym;
extern void bpf_preempt_disable(void) __ksym;
extern void bpf_preempt_enable(void) __ksym;
#endif

/* An fentry program runs preemptible (migration disabled only): preempted
 * while it owns its CPU's stream, it would make every other program on
 * that CPU drop its record meanwhile. It holds preemption where the kernel
 * lets a program do so; elsewhere those drops stay counted
 * (BpfCapture::limits()). */
static __always_inline void hold_preemption(void) {
#ifdef RSSAUDIT_KFUNCS
  bpf_preempt_disable();
#endif
}
static __always_inline void release_preemption(void) {
#ifdef RSSAUDIT_KFUNCS
  bpf_preempt_enable();
#endif
}

/* Whether an event about `mm` by (or about) a task of `tgid` is wanted. The
 * auditor's own mm is excluded, but not its updates to other mms: a fork
 * copies the parent's counters into the child in the parent's context. */
static __always_inline bool mm_wanted(__u64 mm, __u32 tgid, bool owner) {
  if (owner && tgid == self_tgid && self_mm != mm) self_mm = mm;
  if (mm == self_mm) return false;
  if (!target_tgid) return true;
  if (owner && tgid == target_tgid && target_mm != mm) target_mm = mm;
  return mm == target_mm;
}

/* A record being written: its slot and its CPU, with that CPU's position,
 * which the record is published to. */
struct stream_claim {
  struct rss_stream_position* at;
  struct rss_slot* slot;
  __u32 cpu;
};

/* Claims this CPU's next slot, with its sequence number taken, the CPU
 * marked busy, and `*flags` joined by the loss mark; false (the record
 * counted as dropped) when the stream is full or the CPU's stream is
 * already being written, which a hook that could be preempted or nested
 * would cause: the loss is then counted, never a record overwritten.
 * Publish with stream_publish(). */
static __always_inline bool stream_reserve(struct stream_claim* c,
                                           __u8* flags) {
  __u32 cpu = bpf_get_smp_processor_id(), zero = 0;
  struct rss_stream_position* at = bpf_map_lookup_elem(&positions, &cpu);
  __u64* seq = bpf_map_lookup_elem(&sequence, &zero);
  if (!at || !seq || *(volatile __u64*)&at->busy) goto lost;
  /* Busy from before the head is read until after the new head is
   * stored (stream_publish): a program that ran in between on this CPU
   * would write the same slot. */
  *(volatile __u64*)&at->busy = 1;
  asm volatile("" ::: "memory");
  const __u64 head = at->head;
  __u32 index = cpu * slots_per_cpu + (__u32)(head & (slots_per_cpu - 1));
  struct rss_slot* slot = bpf_map_lookup_elem(&slots, &index);
  const __u64 used = head - *(volatile __u64*)&at->tail;
  if (!slot || used >= slots_per_cpu) {
    *(volatile __u64*)&at->busy = 0;
    goto lost;
  }
  if (used == slots_per_cpu >> 2)
    bpf_ringbuf_output(&doorbell, &cpu, sizeof(cpu), BPF_RB_FORCE_WAKEUP);
  if (loss_pending) {
    loss_pending = 0;
    *flags |= RSS_EVF_AFTER_LOSS;
  }
  /* A full barrier: what this program reads after it comes after every
   * earlier record's reservation (see rss_stat.bpf.c). */
  slot->seq = __sync_fetch_and_add(seq, 1);
  c->at = at;
  c->slot = slot;
  c->cpu = cpu;
  return true;
lost:
  /* Atomic: a program preempted in the middle of an add would lose
   * another's; the line is this CPU's alone. */
  if (at) __sync_fetch_and_add(&at->drops, 1);
  loss_pending = 1;
  return false;
}

/* Publishes the record of a claim. Nothing wakes user space, which polls on
 * a timer (a wake-up per record costs ~20x the record, docs/kernel.md).
 * The record's writes must be visible before the new head. x86 makes stores
 * visible in program order and its JIT emits plain moves, so there a compiler
 * barrier is enough; elsewhere an atomic add orders them. */
static __always_inline void stream_publish(const struct stream_claim* c) {
  struct rss_stream_position* at = c->at;
#if defined(__TARGET_ARCH_x86)
  asm volatile("" ::: "memory");
  *(volatile __u64*)&at->head = at->head + 1;
#else
  __sync_fetch_and_add(&at->head, 1);
#endif
  asm volatile("" ::: "memory");
  *(volatile __u64*)&at->busy = 0;
}

/* Claims a record and writes every field once: `flags` joined by the
 * loss mark, the rest zero for the caller to overwrite. Nothing is read back
 * from the record (no `e->flags |= ...`): a load from a record's cold line
 * stalled the program ~50 ns per record here (perf). */
static __always_inline struct rss_event* event_reserve(struct stream_claim* c,
                                                       __u8 kind, __u64 mm,
                                                       __u32 tid, __u32 tgid,
                                                       __u64 start_ns,
                                                       __u8 flags) {
  if (!stream_reserve(c, &flags)) return 0;
  struct rss_event* e = &c->slot->event;
  e->mm = mm;
  e->aux = 0;
  e->start_ns = start_ns;
  e->tid = tid;
  e->tgid = tgid;
  e->slot = 0;
  e->span_ns = 0;
  e->cpu = c->cpu;
  e->faults = 0;
  e->kind = kind;
  e->member = 0;
  e->flags = flags;
  e->preempt = 0;
  return e;
}

#endif
