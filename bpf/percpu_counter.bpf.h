/* Reading the kernel's struct percpu_counter (Linux 6.2+ mm->rss_stat):
 * the per-CPU offset of any CPU, learned from a per-CPU array map's own
 * element addresses (docs/kernel.md), and a counter's slot on a CPU.
 * Shared by the update program (rss_stat.bpf.c, its own CPU's slot) and
 * the snapshot iterator (snapshot.bpf.c, every CPU's). */
#ifndef RSSAUDIT_PERCPU_COUNTER_BPF_H
#define RSSAUDIT_PERCPU_COUNTER_BPF_H

#include "cpu_state.bpf.h"

/* The per-CPU offset of `cpu`: the element pointer
 * bpf_map_lookup_percpu_elem() returns for it, minus the raw per-CPU
 * pointer the array keeps right after its struct bpf_array. */
static __always_inline int cpu_offset(struct cpu_state* cs, __u32 cpu,
                                      __u64* offset) {
  __u32 zero = 0;
  __u64 pptr;
  __u64 array = launder(cs, &pcpu_probe);
  if (bpf_probe_read_kernel(
          &pptr, sizeof(pptr),
          (const void*)(array + bpf_core_type_size(struct bpf_array))))
    return -1;
  void* elem = bpf_map_lookup_percpu_elem(&pcpu_probe, &zero, cpu);
  if (!elem) return -1;
  *offset = launder(cs, elem) - pptr;
  return 0;
}

/* Constant indices only: with a variable one clang would scale by the size
 * of our minimal struct percpu_counter, not the kernel's. */
static __always_inline struct percpu_counter* rss_counter(struct mm_struct* mm,
                                                          int member) {
  switch (member) {
    case 0:
      return &mm->rss_stat[0];
    case 1:
      return &mm->rss_stat[1];
    case 2:
      return &mm->rss_stat[2];
    case 3:
      return &mm->rss_stat[3];
  }
  return 0;
}

/* An s32 of kernel memory: with bpf_rdonly_cast() a plain load with an
 * exception-table fixup, measured ~1 ns here where bpf_probe_read_kernel()
 * costs ~35 (the build for kernels without the kfuncs, capture.bpf.h).
 * One object of a linked set may call a kfunc: bpftool's linker (libbpf
 * 1.1) fails on the same extern in two ("failed to resolve size of
 * underlying type"), so a program other than the update path defines
 * RSSAUDIT_PROBE_READ before including this. */
static __always_inline __s32 read_s32(__u64 address) {
#if defined(RSSAUDIT_KFUNCS) && !defined(RSSAUDIT_PROBE_READ)
  struct refcount_struct* v = bpf_rdonly_cast(
      (void*)address, bpf_core_type_id_kernel(struct refcount_struct));
  return v->refs.counter;
#else
  __s32 v = 0;
  bpf_probe_read_kernel(&v, sizeof(v), (const void*)address);
  return v;
#endif
}

/* The slot of the counter whose per-CPU `counters` is `counters`, on the
 * CPU whose per-CPU offset is `offset`. */
static __always_inline __s32 read_slot_at(__u64 counters, __u64 offset) {
  return read_s32(counters + offset);
}

static __always_inline __s32 read_slot(struct percpu_counter* pc,
                                       __u64 offset) {
  return read_slot_at((__u64)pc->counters, offset);
}

#endif
