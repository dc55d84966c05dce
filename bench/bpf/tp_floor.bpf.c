/* Bench only, never loaded by rssauditd: the floors of a capture on
 * tp_btf/rss_stat, against which the capture's own cost is read
 * (bench/capture_overhead.sh, modes `floor`, `ring` and `pcpu`).
 * - tp_floor: an empty program, the tracepoint's dispatch into BPF;
 * - tp_ring_floor: one zeroed record of rssauditd's size per update into a
 *   ring buffer without wake-ups, the least any capture pays that streams
 *   every update through a BPF ring buffer;
 * - tp_pcpu_floor: the same record into this CPU's stream of rssauditd's
 *   transport (bpf/rss_event.h), the least rssauditd's capture pays. */
#define RSSAUDIT_DEFINE_MAPS
#include "bpf/capture.bpf.h"

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 20); /* rssauditd's former default */
} floor_ring SEC(".maps");

SEC("tp_btf/rss_stat")
int BPF_PROG(tp_floor, struct mm_struct* mm, int member) { return 0; }

SEC("tp_btf/rss_stat")
int BPF_PROG(tp_ring_floor, struct mm_struct* mm, int member) {
  struct rss_event* e = bpf_ringbuf_reserve(&floor_ring, sizeof(*e), 0);
  if (!e) return 0;
  __builtin_memset(e, 0, sizeof(*e));
  bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
  return 0;
}

/* rssauditd's transport (capture.bpf.h), sized by bench/tp_floor.cc. */
SEC("tp_btf/rss_stat")
int BPF_PROG(tp_pcpu_floor, struct mm_struct* mm, int member) {
  __u8 flags = 0;
  struct stream_claim claim;
  if (!stream_reserve(&claim, &flags)) return 0;
  __builtin_memset(&claim.slot->event, 0, sizeof(claim.slot->event));
  stream_publish(&claim);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
