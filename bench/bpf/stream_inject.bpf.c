/* Bench only, never loaded by rssauditd: writes recorded rss_event records
 * into a running rssauditd's own streams (user space reuses the daemon's
 * `slots`, `positions`, `sequence` and `doorbell` maps), so the daemon's
 * consumer can be driven through the real transport at a rate no workload
 * reaches on a small machine (bench/inject_rate.cc). It writes the stream
 * of the CPU it runs on, as a capture program does: a capture program that
 * preempts it there finds the CPU busy and counts a loss. */
#define RSSAUDIT_DEFINE_MAPS
#include "bpf/capture.bpf.h"
#include "inject_args.h"

/* The recording, one record per index; sized by user space before load. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct rss_event);
} records SEC(".maps");

static long inject_one(__u32 i, struct inject_args* a) {
  __u32 key = a->first + i;
  if (key >= a->total) key -= a->total;
  struct rss_event* rec = bpf_map_lookup_elem(&records, &key);
  if (!rec) return 1;
  __u8 flags = rec->flags;
  struct stream_claim claim;
  if (!stream_reserve(&claim, &flags)) {
    a->full += 1;
    return 0;
  }
  struct rss_event* e = &claim.slot->event;
  __builtin_memcpy(e, rec, sizeof(*e));
  e->flags = flags; /* the loss mark stream_reserve() joined, if any */
  /* The capture's own records of live processes share the streams: an mm of
   * the recording must not be taken for a live mm at the same address.
   * Kernel addresses have their top bit set; none of these has. */
  e->mm ^= 1ULL << 63;
  if (e->kind == RSS_EV_EXEC && e->aux) e->aux ^= 1ULL << 63; /* old mm */
  /* Live time, so the daemon's grace and resync clocks apply as usual;
   * an untimed update stays untimed. */
  if (rec->start_ns) e->start_ns = bpf_ktime_get_ns();
  stream_publish(&claim);
  a->written += 1;
  return 0;
}

SEC("syscall")
int inject(struct inject_args* ctx) {
  struct inject_args a = *ctx;
  a.written = 0;
  a.full = 0;
  if (a.total == 0 || a.first >= a.total) return 1;
  __u32 zero = 0;
  __u64* seq = bpf_map_lookup_elem(&sequence, &zero);
  if (seq && a.holes) __sync_fetch_and_add(seq, a.holes);
  bpf_loop(a.count, inject_one, &a, 0);
  ctx->written = a.written;
  ctx->full = a.full;
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
