/* Marks of the page faults in progress, for the update programs to tell
 * an update inside one (cpu_state.bpf.h in_page_fault()). */
#include "cpu_state.bpf.h"

/* The start of a page fault on a user address (x86's exception
 * tracepoints, before handle_mm_fault()): marks this CPU's task as in it
 * (in_page_fault()). A get_user_pages() fault raises no exception and is
 * told by in_lru_fault alone; a failed fault leaves its mark until the
 * task's next one. */
static __always_inline int on_page_fault(unsigned long address) {
  if ((long)address < 0) return 0; /* a kernel address: no task's RSS */
  __u32 zero = 0;
  struct cpu_state* cs = bpf_map_lookup_elem(&cpu_states, &zero);
  if (!cs) return 0;
  struct task_struct* cur = bpf_get_current_task_btf();
  cs->fault_task = launder(cs, cur);
  cs->fault_total = cur->min_flt + cur->maj_flt;
  return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_page_fault_user, unsigned long address, struct pt_regs* regs,
             unsigned long error_code) {
  return on_page_fault(address);
}

/* A fault the kernel takes on user memory: copy_to_user into a fresh
 * buffer, fork's set_child_tid write. */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(on_page_fault_kernel, unsigned long address, struct pt_regs* regs,
             unsigned long error_code) {
  return on_page_fault(address);
}
