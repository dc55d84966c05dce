/* Hand-written CO-RE subset of the kernel types rssaudit's BPF programs read.
 * Every struct is preserve_access_index: libbpf relocates each field against
 * the running kernel's BTF, so only names and types matter here, not layout.
 * Keep it minimal: add a field only when a program reads it. */
#ifndef RSSAUDIT_VMLINUX_MIN_H
#define RSSAUDIT_VMLINUX_MIN_H

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
enum { false = 0, true = 1 };
typedef int pid_t;

/* UAPI constants (include/uapi/linux/bpf.h, sched.h); stable ABI values. */
enum bpf_map_type {
  BPF_MAP_TYPE_HASH = 1,
  BPF_MAP_TYPE_ARRAY = 2,
  BPF_MAP_TYPE_PERCPU_ARRAY = 6,
  BPF_MAP_TYPE_RINGBUF = 27,
};
enum {
  BPF_RB_NO_WAKEUP = 1ULL << 0,
};
/* include/linux/sched.h: set by sched_fork() until wake_up_new_task(). */
#define TASK_NEW 0x00000800

typedef struct {
  int counter;
} atomic_t;

typedef struct {
  long counter;
} atomic_long_t;

/* lib/percpu_counter.c; `counters` is a per-CPU offset, not a pointer the
 * verifier lets us follow (see docs/kernel.md). */
struct percpu_counter {
  s64 count;
  s32* counters;
} __attribute__((preserve_access_index));

struct mm_struct {
  atomic_t mm_users;
  struct percpu_counter rss_stat[4];
  struct task_struct* owner; /* CONFIG_MEMCG */
} __attribute__((preserve_access_index));

/* Layout before f1a7941243c1 ("mm: convert mm's rss stats into
 * percpu_counter", Linux 6.2): one atomic per member, no per-CPU slots,
 * and each task's cache of its own mm's updates (SPLIT_RSS_COUNTING). */
struct mm_rss_stat {
  atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___pre62 {
  struct mm_rss_stat rss_stat;
} __attribute__((preserve_access_index));

struct task_rss_stat {
  int events; /* faults since the last sync */
  int count[4];
} __attribute__((preserve_access_index));

struct task_struct___pre62 {
  struct task_rss_stat rss_stat;
} __attribute__((preserve_access_index));

/* kernel/sched/sched.h: the runqueue a CFS runqueue belongs to
 * (CONFIG_FAIR_GROUP_SCHED). Only its address is used. */
struct rq;
struct cfs_rq {
  struct rq* rq;
} __attribute__((preserve_access_index));

struct sched_entity {
  struct cfs_rq* cfs_rq; /* CONFIG_FAIR_GROUP_SCHED */
} __attribute__((preserve_access_index));

/* include/linux/sched.h */
#define PF_KTHREAD 0x00200000

struct task_struct {
  unsigned int __state;
  unsigned int flags;
  int on_cpu;           /* CONFIG_SMP: running on a CPU, or being switched */
  unsigned long nvcsw;  /* context switches, voluntary */
  unsigned long nivcsw; /* and involuntary */
  struct sched_entity se;
  struct mm_struct* mm;
  pid_t pid;
  pid_t tgid;
  unsigned long min_flt;
  unsigned long maj_flt;
  unsigned int in_user_fault : 1; /* CONFIG_MEMCG_V1 (CONFIG_MEMCG before) */
  unsigned int in_lru_fault : 1;  /* CONFIG_LRU_GEN */
  struct task_struct* group_leader;
  u64 start_boottime;
} __attribute__((preserve_access_index));

/* A kernel struct that starts with an int: bpf_rdonly_cast() casts only to
 * structs (a35b9af4ec2c, 6.2), and a per-CPU slot is a bare s32. */
struct refcount_struct {
  atomic_t refs;
} __attribute__((preserve_access_index));

struct linux_binprm;

/* include/linux/bpf.h: what an iter/task program is handed; task is NULL
 * once at the end of a pass. */
struct seq_file;
struct bpf_iter_meta {
  struct seq_file* seq;
} __attribute__((preserve_access_index));
struct bpf_iter__task {
  struct bpf_iter_meta* meta;
  struct task_struct* task;
} __attribute__((preserve_access_index));
/* arch/x86/include/asm/ptrace.h: the registers a kprobe program reads its
 * function's arguments from (x86-64: di, si, dx, ...). */
struct pt_regs {
  unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si,
      di, orig_ax, ip, cs, flags, sp, ss;
} __attribute__((preserve_access_index));

/* kernel/bpf/arraymap.c: a per-CPU array stores one per-CPU pointer per
 * element right after the struct (the `pptrs` flexible array). Only the
 * struct's size is relocated; one member keeps the type non-empty. */
struct bpf_array {
  u32 elem_size;
} __attribute__((preserve_access_index));

#endif
