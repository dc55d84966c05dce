/* tp_btf/page_fault_user: counts each task's user page faults in task
 * storage; rss_stat reports and resets the count with the task's next update
 * of its own mm, so faults add no records of their own. */
#include "capture.bpf.h"

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_page_fault_user, unsigned long address, struct pt_regs* regs,
             unsigned long error_code) {
  struct task_struct* cur = bpf_get_current_task_btf();
  __u64 mm = (__u64)cur->mm;
  if (!mm_wanted(mm, bpf_get_current_pid_tgid() >> 32, true)) return 0;
  struct task_state* ts = bpf_task_storage_get(&task_states, cur, 0,
                                               BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!ts) return 0;
  if (!ts->mm) ts->mm = mm;
  ts->faults += 1;
  return 0;
}
