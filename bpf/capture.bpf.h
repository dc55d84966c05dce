/* Declarations shared by the capture programs, which bpftool links into one
 * object (see CMakeLists.txt): the maps and settings live in maps.bpf.c and
 * are `extern` everywhere else, so every program writes the same ring buffer
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

RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
} events SEC(".maps");

RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} drops SEC(".maps");

/* Identities of processes whose last thread exited. An array, not an LRU
 * hash: its update cost ~1.6 us per exit (bpf_stats), a slot write ~0. */
RSSAUDIT_SHARED struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, RSS_EXITED_SLOTS);
  __type(key, __u32);
  __type(value, struct exited_process);
} exited SEC(".maps");

/* Set by user space before load (an initializer keeps them in .rodata). */
RSSAUDIT_SHARED const volatile __u32 self_tgid RSSAUDIT_ZERO;   /* auditor */
RSSAUDIT_SHARED const volatile __u32 target_tgid RSSAUDIT_ZERO; /* 0 = all */
/* Learned from the first update a process makes to its own mm. */
RSSAUDIT_SHARED __u64 self_mm RSSAUDIT_ZERO;
RSSAUDIT_SHARED __u64 target_mm RSSAUDIT_ZERO;
/* Set when a record could not be reserved; the next reservation takes it
 * and flags its record RSS_EVF_AFTER_LOSS, so the loss has a place in the
 * stream. Taken before reserving: the flagged record is then always after
 * the failure. One load per record when nothing was lost. */
RSSAUDIT_SHARED __u32 loss_pending RSSAUDIT_ZERO;
/* Counts exit_mmap calls: an mm address seen before one may be another mm
 * after it (see needs_time() in rss_stat.bpf.c). */
RSSAUDIT_SHARED __u64 mm_epoch RSSAUDIT_ZERO;

static __always_inline void count_drop(void) {
  __u32 zero = 0;
  __u64* n = bpf_map_lookup_elem(&drops, &zero);
  if (n) *n += 1;
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

/* Reserves a record and writes every field once: `flags` joined by the
 * loss mark, the rest zero for the caller to overwrite. Nothing is read back
 * from the ring (no `e->flags |= ...`): a load from a record's cold line
 * stalled the program ~50 ns per record here (perf). */
static __always_inline struct rss_event* event_reserve(__u8 kind, __u64 mm,
                                                       __u32 tid, __u32 tgid,
                                                       __u64 start_ns,
                                                       __u8 flags) {
  if (loss_pending) {
    loss_pending = 0;
    flags |= RSS_EVF_AFTER_LOSS;
  }
  struct rss_event* e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    count_drop();
    loss_pending = 1;
    return 0;
  }
  e->mm = mm;
  e->aux = 0;
  e->start_ns = start_ns;
  e->tid = tid;
  e->tgid = tgid;
  e->slot = 0;
  e->span_ns = 0;
  e->cpu = bpf_get_smp_processor_id();
  e->faults = 0;
  e->kind = kind;
  e->member = 0;
  e->flags = flags;
  e->pad = 0;
  return e;
}

/* User space polls on a timer: a wake-up per record costs ~20x the
 * record itself (KERNEL.md). */
static __always_inline void event_submit(struct rss_event* e) {
  bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

#endif
