// The capture loop of the CLI's live commands (record, whatif --pid): a
// tick every 10 ms, or at once when the capture's doorbell rings (a stream
// a quarter full), until the duration has passed, SIGINT or SIGTERM came,
// or the tick says there is nothing more to wait for. rssauditd runs on
// Boost.Asio timers instead, beside its servers.
#pragma once

#include <functional>

#include "capture/doorbell.h"

namespace rssaudit::cli {

// Calls `tick()` every 10 ms, and each time `doorbell` rings (answered
// here), for `duration_s` seconds; stops early on SIGINT or SIGTERM (which
// then end no other way) or once `tick()` returns false. The caller drains
// once more after it returns.
void run_until(double duration_s, Doorbell& doorbell,
               const std::function<bool()>& tick);

}  // namespace rssaudit::cli
