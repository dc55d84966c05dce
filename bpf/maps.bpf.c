/* The one definition of the maps and settings the capture programs share
 * (declared in capture.bpf.h). */
#define RSSAUDIT_DEFINE_MAPS
#include "cpu_state.bpf.h"

char LICENSE[] SEC("license") = "GPL";
