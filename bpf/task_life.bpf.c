/* The life-cycle records of tasks and mms: new task (with its clone flags),
 * exec, exit, and exit_mmap.
 *
 * Two life events of core/schemes/update.h are not captured live, on purpose:
 * - kCpuSwitch (the per_cpu model folds a CPU's cache when it switches mm)
 *   would need sched_switch, which runs on every context switch of the
 *   host, RSS activity or not: each attached program costs ~100 ns per run
 *   here, paid by every process, to serve one model. The daemon infers a
 *   switch from the next owner update of another mm on the CPU instead.
 * - kRusageQuery (the sync_query model folds before rusage/taskstats is
 *   read) has no tracepoint: getrusage, wait4 and taskstats readers could
 *   only be hooked by kprobes or fentry, which do not load here
 *   (docs/kernel.md). Live, sync_query folds at exit only.
 * Simulations and workloads still produce both. */
#include "capture.bpf.h"

static __always_inline struct rss_event* task_event(struct stream_claim* c,
                                                    __u8 kind,
                                                    struct task_struct* task,
                                                    __u64 mm, __u8 flags) {
  __u64 start_ns = bpf_ktime_get_ns();
  __u32 tgid = task->tgid;
  if (!mm_wanted(mm, tgid, false)) return 0;
  return event_reserve(c, kind, mm, task->pid, tgid, start_ns, flags);
}

/* Fires in copy_process() after copy_mm(): task->mm is the child's own mm,
 * or the parent's one with CLONE_VM (threads, vfork). */
SEC("tp_btf/task_newtask")
int BPF_PROG(on_task_newtask, struct task_struct* task, __u64 clone_flags) {
  __u64 mm = (__u64)task->mm;
  if (!mm) return 0; /* kernel thread */
  struct stream_claim claim;
  struct rss_event* e = task_event(&claim, RSS_EV_NEW_TASK, task, mm, 0);
  if (!e) return 0;
  e->aux = clone_flags;
  stream_publish(&claim);
  return 0;
}

/* Fires after the switch to the new mm. The old one is no longer reachable
 * from the task: the daemon knows it from the task's NEW_TASK record or its
 * updates. (A task-storage map kept it here before, at ~2.4 us per clone
 * for the storage allocation, measured with bpf_stats.) */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_sched_process_exec, struct task_struct* task, pid_t old_pid,
             struct linux_binprm* bprm) {
  struct stream_claim claim;
  struct rss_event* e =
      task_event(&claim, RSS_EV_EXEC, task, (__u64)task->mm, 0);
  if (!e) return 0;
  stream_publish(&claim);
  return 0;
}

/* The exit record of `task`, taken while task->mm is still its mm. */
static __always_inline int task_exit(struct task_struct* task,
                                     bool group_dead) {
  __u64 mm = (__u64)task->mm;
  if (!mm) return 0;
  struct stream_claim claim;
  struct rss_event* e = task_event(&claim, RSS_EV_EXIT, task, mm,
                                   group_dead ? RSS_EVF_GROUP_DEAD : 0);
  if (!e) return 0;
  if (group_dead) {
    /* proc_pid_stat(): nsec_to_clock_t(start_boottime), USER_HZ = 100.
     * In the record too: the slot below is another process's once a pid
     * is reused and ends again before the daemon reads it. */
    __u64 start_ticks = task->group_leader->start_boottime / 10000000;
    e->aux = (__s64)start_ticks;
    /* A shell reaps its child within microseconds, long before the daemon
     * handles this record: keep the name /proc will no longer give. */
    __u32 tgid = task->tgid;
    __u32 slot = tgid % RSS_EXITED_SLOTS;
    struct exited_process* who = bpf_map_lookup_elem(&exited, &slot);
    if (who) {
      who->tgid = tgid;
      who->start_ticks = start_ticks;
      bpf_get_current_comm(who->comm, sizeof(who->comm));
    }
  }
  stream_publish(&claim);
  return 0;
}

/* Where sched_process_exit passes group_dead (6.18 does), it fires before
 * exit_mm(). User space loads this program or the next, never both
 * (capture/bpf_capture.cc, exit_hook()). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_sched_process_exit, struct task_struct* task, bool group_dead) {
  return task_exit(task, group_dead);
}

/* Where it passes the task alone (6.12, 6.1), sched_process_exit fires
 * after exit_mm(), when task->mm is NULL. do_exit() has called
 * taskstats_exit(tsk, group_dead) just before exit_mm() since 115085ea0794
 * (2006), so the exit is taken there, by fentry; a kernel built without
 * CONFIG_TASKSTATS has no such function to trace. */
SEC("fentry/taskstats_exit")
int BPF_PROG(on_taskstats_exit, struct task_struct* task, int group_dead) {
  hold_preemption();
  int ret = task_exit(task, group_dead != 0);
  release_preemption();
  return ret;
}

/* The same where no kfunc holds preemption (before 6.10): a kprobe runs
 * with preemption off. Preempted, an fentry program would make the exits
 * of other tasks on its CPU go unseen (the trampoline skips a program
 * while another run of it is in progress there). do_exit() passes the
 * exiting task itself, current. */
SEC("kprobe/taskstats_exit")
int on_taskstats_exit_kprobe(struct pt_regs* ctx) {
  const int group_dead = (int)ctx->si; /* x86-64: the second argument */
  return task_exit(bpf_get_current_task_btf(), group_dead != 0);
}

/* Fires after the teardown's counter updates: no update of this mm follows,
 * and its address may be reused by the next mm. */
SEC("tp_btf/exit_mmap")
int BPF_PROG(on_exit_mmap, struct mm_struct* mm) {
  __sync_fetch_and_add(&mm_epoch, 1);
  __u64 start_ns = bpf_ktime_get_ns();
  __u64 id = bpf_get_current_pid_tgid();
  if (!mm_wanted((__u64)mm, id >> 32, false)) return 0;
  struct stream_claim claim;
  struct rss_event* e = event_reserve(&claim, RSS_EV_EXIT_MMAP, (__u64)mm,
                                      (__u32)id, id >> 32, start_ns, 0);
  /* The target's mm is gone: the next mm at its address is another
   * process's, not the target's (whose next mm, after an exec, its next
   * update names). */
  if (target_tgid && (__u64)mm == target_mm) target_mm = 0;
  if (!e) return 0;
  stream_publish(&claim);
  return 0;
}
