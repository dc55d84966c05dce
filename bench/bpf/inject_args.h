/* The context of one run of bench/bpf/stream_inject.bpf.c, shared with
 * bench/inject_rate.cc (BPF_PROG_TEST_RUN copies it back). */
#ifndef RSSAUDIT_INJECT_ARGS_H
#define RSSAUDIT_INJECT_ARGS_H

#ifndef RSSAUDIT_VMLINUX_MIN_H
#include <linux/types.h>
#endif

struct inject_args {
  __u32 first; /* index of the first record to write */
  __u32 count; /* records to write; wraps at the end of `records` */
  __u32 total; /* records in `records` */
  __u32 holes; /* sequence numbers to take first and leave without a
                  record, as a program that never published would */
  __u64 written; /* out */
  __u64 full;    /* out: reservations refused: the stream was full or busy */
};

#endif
