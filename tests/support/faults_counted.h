// On a function whose page faults a test counts: no sanitizer checks in it,
// whose reads of the shadow memory would fault too, and map pages, under
// tests/sanitized_suite.sh (a zero page each 32 KiB of memory touched).
#pragma once

#define RSSAUDIT_FAULTS_COUNTED \
  __attribute__((no_sanitize("address", "undefined")))
