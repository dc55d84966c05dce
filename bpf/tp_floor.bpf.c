/* Bench only, never loaded by rssauditd: the floors of a capture on
 * tp_btf/rss_stat, against which the capture's own cost is read
 * (bench/capture_overhead.sh, modes `floor` and `ring`).
 * - tp_floor: an empty program, the tracepoint's dispatch into BPF;
 * - tp_ring_floor: one zeroed record of rssauditd's size per update into a
 *   ring buffer without wake-ups, the least any capture pays that streams
 *   every update through a BPF ring buffer;
 * - tp_pcpu_floor: the same record into this CPU's slots of an mmapable
 *   array instead, ordered across CPUs by one atomic sequence number: the
 *   floor of a per-CPU transport (not adopted; README "Benchmarks"). Its
 *   slots are overwritten, never drained: it loads the tail a consumer
 *   would advance but never finds the slots full. */
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

/* Slots per CPU; a power of two. Two CPUs here, four allowed for. */
#define PCPU_SLOTS (1 << 16)
#define PCPU_CPUS 4

struct pcpu_slot {
  __u64 seq;
  struct rss_event event;
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, 1U << 10); /* BPF_F_MMAPABLE */
  __uint(max_entries, PCPU_CPUS * PCPU_SLOTS);
  __type(key, __u32);
  __type(value, struct pcpu_slot);
} pcpu_slots SEC(".maps");

/* Each CPU's producer and consumer positions, a cache line apart. */
struct pcpu_position {
  __u64 head;
  __u64 pad1[7];
  __u64 tail;
  __u64 pad2[7];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, 1U << 10); /* BPF_F_MMAPABLE */
  __uint(max_entries, PCPU_CPUS);
  __type(key, __u32);
  __type(value, struct pcpu_position);
} pcpu_positions SEC(".maps");

__u64 pcpu_next_seq = 0;

SEC("tp_btf/rss_stat")
int BPF_PROG(tp_pcpu_floor, struct mm_struct* mm, int member) {
  __u32 cpu = bpf_get_smp_processor_id() % PCPU_CPUS;
  struct pcpu_position* at = bpf_map_lookup_elem(&pcpu_positions, &cpu);
  if (!at) return 0;
  const __u64 head = at->head;
  /* Overwriting: only the load of the tail is paid (see above). */
  if (head - *(volatile __u64*)&at->tail > (1ULL << 62)) return 0;
  __u32 index = cpu * PCPU_SLOTS + (head & (PCPU_SLOTS - 1));
  struct pcpu_slot* slot = bpf_map_lookup_elem(&pcpu_slots, &index);
  if (!slot) return 0;
  slot->seq = __sync_fetch_and_add(&pcpu_next_seq, 1);
  __builtin_memset(&slot->event, 0, sizeof(slot->event));
  /* An atomic add: ordered after the record's writes on any architecture. */
  __sync_fetch_and_add(&at->head, 1);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
