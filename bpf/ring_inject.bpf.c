/* Bench only, never loaded by rssauditd: writes recorded rss_event records
 * into a running rssauditd's own ring buffer (user space reuses that map's
 * fd for `events`), so the daemon's consumer can be driven through the real
 * kernel ring buffer at a rate no workload reaches on a small machine
 * (bench/inject_rate.cc). */
// clang-format off
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include "inject_args.h"
#include "rss_event.h"
// clang-format on

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096); /* replaced by the daemon's map */
} events SEC(".maps");

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
  struct rss_event* e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (!e) {
    a->full += 1;
    a->lost = 1;
    return 0;
  }
  __builtin_memcpy(e, rec, sizeof(*e));
  /* The capture's own records of live processes share the ring: an mm of
   * the recording must not be taken for a live mm at the same address.
   * Kernel addresses have their top bit set; none of these has. */
  e->mm ^= 1ULL << 63;
  if (e->kind == RSS_EV_EXEC && e->aux) e->aux ^= 1ULL << 63; /* old mm */
  /* As the capture does: the record after a loss says so. */
  if (a->lost) {
    e->flags |= RSS_EVF_AFTER_LOSS;
    a->lost = 0;
  }
  /* Live time, so the daemon's grace and resync clocks apply as usual;
   * an untimed update stays untimed. */
  if (rec->start_ns) e->start_ns = bpf_ktime_get_ns();
  bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
  a->written += 1;
  return 0;
}

SEC("syscall")
int inject(struct inject_args* ctx) {
  struct inject_args a = *ctx;
  a.written = 0;
  a.full = 0;
  if (a.total == 0 || a.first >= a.total) return 1;
  bpf_loop(a.count, inject_one, &a, 0);
  ctx->written = a.written;
  ctx->full = a.full;
  ctx->lost = a.lost;
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
