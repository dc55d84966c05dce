/* Bench only, never loaded by rssauditd: what an atomic add costs on a
 * cache line that every CPU writes, against one on the CPU's own line
 * (bench/line_cost.cc). The capture's global `sequence` (capture.bpf.h)
 * is such a shared line, written once per RSS update on every CPU. */
// clang-format off
#include "bpf/vmlinux_min.h"
#include <bpf/bpf_helpers.h>
// clang-format on

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} shared_line SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} own_line SEC(".maps");

struct line_args {
  __u32 adds;
  __u32 shared; /* 1: the shared line, 0: this CPU's own */
};

static long add_shared(__u32 i, void* ctx) {
  __u32 zero = 0;
  __u64* v = bpf_map_lookup_elem(&shared_line, &zero);
  if (v) __sync_fetch_and_add(v, 1);
  return 0;
}

static long add_own(__u32 i, void* ctx) {
  __u32 zero = 0;
  __u64* v = bpf_map_lookup_elem(&own_line, &zero);
  if (v) __sync_fetch_and_add(v, 1);
  return 0;
}

SEC("syscall")
int line_add(struct line_args* a) {
  if (a->shared)
    bpf_loop(a->adds, add_shared, 0, 0);
  else
    bpf_loop(a->adds, add_own, 0, 0);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
