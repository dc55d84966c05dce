/* Bench only, never loaded by rssauditd: an empty tp_btf/rss_stat program.
 * What the fault loop pays with it attached is the floor of any capture on
 * this hook (the tracepoint's dispatch into BPF), against which the capture's
 * own cost is read (bench/capture_overhead.sh). */
// clang-format off
#include "vmlinux_min.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
// clang-format on

SEC("tp_btf/rss_stat")
int BPF_PROG(tp_floor, struct mm_struct* mm, int member) { return 0; }

char LICENSE[] SEC("license") = "GPL";
