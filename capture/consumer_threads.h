// Who reads the capture's streams (capture/live_audit.h): the caller's
// thread, as part of each drain (one); a DrainThread from the start (two);
// or from the first second in which draining took more than half of the
// loop's wall time (automatic: the rate calls for a second thread only
// then).
#pragma once

namespace rssaudit {

enum class ConsumerThreads { automatic, one, two };

}  // namespace rssaudit
