// Checks of the programs' numeric options (CLI11 validators), shared by
// rssauditd and rssaudit so that every number is refused the same way, in
// one line naming the option and the value. CLI11 2.1 converts "-5" into
// an unsigned option by wrapping it and lets NaN through CLI::Range (every
// comparison with NaN is false): a negative count then filtered out every
// process, and a NaN interval busy-looped.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace rssaudit {

// A number: finite, from `min` to `max`, or 0 where `zero` (off, "until
// stopped", "keep") is allowed. NaN, infinities and 1e-300 busy-loop or
// overflow a timer.
CLI::Validator finite_in(double min, double max, bool zero, const char* unit);

// Seconds: from `min` to a year (longer than any interval means), or 0
// where `zero` is allowed.
CLI::Validator seconds_in(double min, bool zero);

// A whole number written in digits only (no sign, no fraction, no
// exponent), from `min` to `max`; `unit` says what it counts.
CLI::Validator whole_in(uint64_t min, uint64_t max, const char* unit);

}  // namespace rssaudit
