/* Bench only, never loaded by rssauditd: the floors of a capture on
 * tp_btf/rss_stat, against which the capture's own cost is read
 * (bench/capture_overhead.sh, modes `floor` and `ring`).
 * - tp_floor: an empty program, the tracepoint's dispatch into BPF;
 * - tp_ring_floor: one zeroed record of rssauditd's size per update into a
 *   ring buffer without wake-ups, the least any capture pays that streams
 *   every update through a BPF ring buffer. */
// clang-format off
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "rss_event.h"
// clang-format on

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 20); /* rssauditd's default */
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

char LICENSE[] SEC("license") = "GPL";
