/* tp_btf/rss_stat: one record per mm->rss_stat[member] update, with the
 * counter's `count` and this CPU's slot as they are right after the add. The
 * daemon recovers each update's exact delta from the slots (docs/kernel.md). */
#include "percpu_counter.bpf.h"

/* Where this CPU's preemption count is, so that a record can tell whether
 * a lock held preemption off from the add to it (bpf/rss_event.h). A typed
 * ksym of the count (__preempt_count, pcpu_hot) would need the symbol in
 * kallsyms, i.e. CONFIG_KALLSYMS_ALL, which this host's 6.18 lacks. So user
 * space finds each variable's offset in the per-CPU section in the kernel
 * BTF, and the section's own address comes from one per-CPU variable whose
 * address a task leads to: its runqueue, task->se.cfs_rq->rq
 * (CONFIG_FAIR_GROUP_SCHED). The current-task variable, which must read
 * back as the running task, proves the address before it is trusted. */
static __always_inline void learn_preempt_count(struct cpu_state* cs,
                                                struct task_struct* cur,
                                                __u64 offset) {
  if (!pcpu_preempt_count || !pcpu_current_task || !pcpu_runqueues) return;
  if (!bpf_core_field_exists(cur->se.cfs_rq) ||
      !bpf_core_field_exists(((struct cfs_rq*)0)->rq))
    return;
  struct cfs_rq* cfs = BPF_CORE_READ(cur, se.cfs_rq);
  if (!cfs) return;
  __u64 rq = (__u64)BPF_CORE_READ(cfs, rq);
  if (!rq) return;
  __u64 section = rq - offset - pcpu_runqueues;
  __u64 task;
  if (bpf_probe_read_kernel(
          &task, sizeof(task),
          (const void*)(section + pcpu_current_task + offset)))
    return;
  if (task != launder(cs, cur)) return;
  cs->preempt_at = section + pcpu_preempt_count + offset;
}

/* This CPU's per-CPU offset (cpu_offset()), learned once per CPU and cached
 * in `cs`, with where its preemption count is. */
static __always_inline int slot_offset(struct cpu_state* cs,
                                       struct task_struct* cur, __u32 cpu,
                                       __u64* offset) {
  if (cs->ready) {
    *offset = cs->offset;
    return 0;
  }
  if (cpu_offset(cs, cpu, &cs->offset)) return -1;
  learn_preempt_count(cs, cur, cs->offset);
  cs->ready = 1;
  *offset = cs->offset;
  return 0;
}

/* rss_event.preempt: the low byte of preempt_count() is the depth of
 * preempt_disable() (include/linux/preempt.h). */
static __always_inline __u8 preempt_depth(struct cpu_state* cs) {
  if (!cs->preempt_at) return 0;
  __u32 depth = read_s32(cs->preempt_at) & 0xff;
  return RSS_PREEMPT_KNOWN | (depth > 0x7f ? 0x7f : depth);
}

/* Whether the update must carry its time. The daemon orders two updates by
 * their windows only when one left its slot at zero (a fold, or a return to
 * zero), and it needs the time of the first record whose `count` shows
 * another CPU's fold not yet in the stream: a `count` that this CPU's
 * previous record of the mm did not show. Any other update's delta is
 * exact from its slot, and a clock read costs ~86 ns here (bpf_stats), a
 * third of the program. `noted`: this CPU's note is of this mm (an
 * exit_mmap anywhere, mm_epoch, voids every note: the address may come
 * back as another mm). */
static __always_inline bool needs_time(struct cpu_state* cs, bool noted,
                                       int member, __s32 slot, __s64 count) {
  return slot == 0 || !noted || cs->seen_count[member & 3] != count;
}

/* What this CPU's records of `mm` have shown of `member` so far. */
static __always_inline void note_seen(struct cpu_state* cs, bool noted,
                                      __u64 mm, __u64 epoch, int member,
                                      __s64 count) {
  if (!noted) {
    cs->seen_mm = mm;
    cs->seen_epoch = epoch;
    /* No count is this far below zero: none matches until written. */
    for (int m = 0; m < 4; ++m) cs->seen_count[m] = -(1LL << 62);
  }
  cs->seen_count[member & 3] = count;
}

/* A repeat of this CPU's latest record (rss_event.h, RSS_REPEATS_CLOSED):
 * counted in that record's span_ns if the record is still this CPU's newest
 * and the consumer has not closed it; true when it was. The stream is held
 * busy meanwhile, as a reservation holds it: no other program on this CPU
 * writes a record in between. Atomic: the consumer's exchange may close the
 * record at the same moment. */
static __always_inline bool repeat_run(struct cpu_state* cs,
                                       struct task_struct* cur,
                                       struct mm_struct* mm, int member,
                                       __u32 tid, __u8 flags, __u8 preempt,
                                       __s64 count, __s32 slot, __u16 faults) {
  struct cpu_run* r = &cs->run;
  if (!r->open || r->mm != (__u64)mm || r->member != member ||
      r->tid != tid || r->flags != flags || r->preempt != preempt ||
      r->count != count || slot - r->slot != r->slot_move ||
      (__u16)(faults - r->faults) != r->fault_move ||
      cur->nvcsw + cur->nivcsw != r->switches || mm->mm_users.counter != 1 ||
      *(volatile __u64*)&snapshot_epoch != r->snapshots)
    return false;
  __u32 cpu = bpf_get_smp_processor_id();
  struct rss_stream_position* at = bpf_map_lookup_elem(&positions, &cpu);
  if (!at || *(volatile __u64*)&at->busy) return false;
  *(volatile __u64*)&at->busy = 1;
  asm volatile("" ::: "memory");
  bool joined = false;
  if (*(volatile __u64*)&at->head == r->pos + 1) {
    __u32 index = cpu * slots_per_cpu + (__u32)(r->pos & (slots_per_cpu - 1));
    struct rss_slot* s = bpf_map_lookup_elem(&slots, &index);
    if (s) {
      /* The 64-bit word of slot and span_ns (no 32-bit atomics before
       * -mcpu=v3); the slot in it does not change. */
      __u64* word = (__u64*)&s->event.slot;
      __u64 old = *(volatile __u64*)word;
      joined = !(old & RSS_REPEATS_CLOSED_WORD) &&
               __sync_val_compare_and_swap(word, old, old + RSS_REPEAT_WORD) ==
                   old;
    }
  }
  asm volatile("" ::: "memory");
  *(volatile __u64*)&at->busy = 0;
  if (!joined) {
    r->open = 0;
    return false;
  }
  r->slot = slot;
  r->faults = faults;
  return true;
}

/* After an update record at position `pos` is published: it becomes the
 * record a repeat may join, if it moved what the update record before it
 * on this CPU (the same task's, of the same counter, non-zero slot) left. */
static __always_inline void note_run(struct cpu_state* cs,
                                     struct task_struct* cur, __u64 mm,
                                     int member, __u32 tid, __u8 flags,
                                     __u8 preempt, __s64 count, __s32 slot,
                                     __u16 faults, __u64 pos,
                                     __u64 snapshots) {
  struct cpu_run* r = &cs->run;
  const bool follows = r->known && r->mm == mm && r->member == member &&
                       r->tid == tid && r->slot != 0 && slot != 0;
  r->slot_move = slot - r->slot;
  r->fault_move = faults - r->faults;
  r->open = follows;
  r->known = 1;
  r->mm = mm;
  r->pos = pos;
  r->switches = cur->nvcsw + cur->nivcsw;
  r->snapshots = snapshots;
  r->count = count;
  r->slot = slot;
  r->tid = tid;
  r->faults = faults;
  r->member = member;
  r->flags = flags;
  r->preempt = preempt;
}

SEC("tp_btf/rss_stat")
int BPF_PROG(on_rss_stat, struct mm_struct* mm, int member) {
  /* Before f1a7941243c1 the counters are plain atomics, which user space
   * audits with task_cache.bpf.c; this keeps the program from mis-reading
   * one. */
  if (bpf_core_field_exists(((struct mm_struct___pre62*)0)->rss_stat.count))
    return 0;
  struct percpu_counter* pc = rss_counter(mm, member);
  if (!pc) return 0;

  struct task_struct* cur = bpf_get_current_task_btf();
  /* The task's own fields, not bpf_get_current_pid_tgid(): no helper call. */
  __u32 tid = cur->pid;
  __u32 tgid = cur->tgid;
  bool owner = cur->mm == mm;
  if (!mm_wanted((__u64)mm, tgid, owner)) return 0;

  __u32 zero = 0;
  struct cpu_state* cs = bpf_map_lookup_elem(&cpu_states, &zero);
  if (!cs) return 0;
  __u64 offset;
  if (slot_offset(cs, cur, bpf_get_smp_processor_id(), &offset)) return 0;
  /* Only this CPU writes its slot, and this program runs with preemption
   * off: the slot read here is the one right after the add. */
  __s32 slot = read_slot(pc, offset);
  __s64 count = pc->count;
  /* 0: untimed (rss_event.h). The add came before this program ran; a
   * window that starts here is later by the program's first steps, well
   * within the slack the daemon allows between an add and its record. */
  const __u64 epoch = mm_epoch;
  const bool noted = cs->seen_mm == (__u64)mm && cs->seen_epoch == epoch;
  __u64 start_ns =
      needs_time(cs, noted, member, slot, count) ? bpf_ktime_get_ns() : 0;

  __u8 flags = 0;
  __u16 faults = 0;
  if (owner) {
    bool in_fault = in_page_fault(cs, cur);
    flags = RSS_EVF_OWNER | (in_fault ? RSS_EVF_IN_FAULT : 0);
    faults = faults_so_far(cur, in_fault);
  } else if (mm_creating(mm, cur)) {
    flags = RSS_EVF_CREATING;
  }

  const __u8 preempt = preempt_depth(cs);
  if (!start_ns && slot != 0 &&
      repeat_run(cs, cur, mm, member, tid, flags, preempt, count, slot,
                 faults))
    return 0;

  /* Before the number is taken (its atomic add orders it): a snapshot
   * placed after this record bumps it before reading (capture.bpf.h). */
  const __u64 snapshots = *(volatile __u64*)&snapshot_epoch;
  /* Reserve before reading `count`: a record earlier in the sequence then
   * always has its add before this record's read (the daemon relies on it). */
  struct stream_claim claim;
  struct rss_event* e = event_reserve(&claim, RSS_EV_UPDATE, (__u64)mm, tid,
                                      tgid, start_ns, flags);
  if (!e) {
    cs->run.known = 0; /* the next record follows a lost one */
    cs->run.open = 0;
    return 0;
  }
  e->member = member;
  e->faults = faults;
  e->preempt = preempt;
  __s64 after = pc->count;
  e->aux = after;
  e->slot = slot;
  if (!start_ns && after != count) {
    /* Another CPU's fold landed since the first read: this record may be
     * the first to show it, so it is timed, after the read (an upper bound
     * of that fold's add, which is what the daemon takes from it). */
    e->start_ns = bpf_ktime_get_ns();
  } else if (slot == 0) {
    /* Which of two folds on different CPUs moved `count` first is told
     * from their windows: a fold's window ends where `count` was read;
     * or from the sequence, when `count` was already this before the
     * number was taken. */
    e->span_ns = bpf_ktime_get_ns() - start_ns;
    if (after == count) e->flags |= RSS_EVF_COUNT_STEADY;
  }
  note_seen(cs, noted, (__u64)mm, epoch, member, after);
  const __u64 pos = claim.at->head;
  stream_publish(&claim);
  note_run(cs, cur, (__u64)mm, member, tid, flags, preempt, after, slot, faults,
           pos, snapshots);
  return 0;
}
