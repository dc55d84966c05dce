// On a function whose page faults are measured (the reader probe's child,
// tests that count faults): no sanitizer checks in it. Their reads and
// writes of shadow memory would fault too and map pages (a zero page, or
// an RSS page, per 32 KiB of memory touched) in a checked build
// (tests/sanitized_suite.sh).
#pragma once

#define RSSAUDIT_FAULTS_COUNTED \
  __attribute__((no_sanitize("address", "undefined")))
