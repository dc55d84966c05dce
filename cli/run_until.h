// The capture loop of the CLI's live commands (record, whatif --pid): a
// tick every 10 ms until the duration has passed, SIGINT or SIGTERM came,
// or the tick says there is nothing more to wait for. rssauditd runs on
// Boost.Asio timers instead, beside its servers.
#pragma once

#include <functional>

namespace rssaudit::cli {

// Calls `tick()` every 10 ms for `duration_s` seconds; stops early on
// SIGINT or SIGTERM (which then end no other way) or once `tick()` returns
// false. The caller drains once more after it returns.
void run_until(double duration_s, const std::function<bool()>& tick);

}  // namespace rssaudit::cli
