// rssauditd's control socket: a Unix stream socket answering the line
// protocol of core/formats/control_protocol.h on the daemon's own
// (single-threaded) Asio loop, so building a LiveView needs no locking.
//
// Who may ask: the socket file is 0660 (owner: the daemon's user; group:
// `group`, else the daemon's), and every connection's peer credentials
// (SO_PEERCRED, SO_PEERGROUPS) are checked again, so a descriptor passed
// on by an allowed process, or a permissive mode set by hand, grants
// nothing: allowed are uid 0, the daemon's uid and members of the socket
// file's group. Anyone else gets one error line and is closed.
//
// What a client may cost: lines of at most kMaxRequestBytes;
// `first_request_timeout` to send its first complete line, then
// `idle_timeout` for each further read or write; at most `max_connections`
// at once. Idle clients cannot lock others out: when every slot is taken,
// a newcomer displaces a connection waiting for a request — first one that
// has sent nothing of it, then one part-way through it; within each, the one
// that has waited longest. A connection being answered is never displaced:
// only when all of them are is the newcomer refused.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/formats/control_protocol.h"
#include "core/formats/live_view.h"
#include "core/result.h"

namespace rssaudit {

struct ControlServerOptions {
  std::string path = kDefaultSocketPath;
  std::string group;  // by name; empty: the daemon's group
  size_t max_connections = 16;
  std::chrono::milliseconds idle_timeout{10'000};
  // Clients send their request as they connect: a slot is not held longer
  // by one that does not (never longer than idle_timeout).
  std::chrono::milliseconds first_request_timeout{2'000};
  size_t max_line_bytes = kMaxRequestBytes;
};

// What the server has seen, for the daemon's summaries.
struct ControlServerStats {
  uint64_t accepted = 0;
  uint64_t requests = 0;
  uint64_t bad_requests = 0;  // answered with an error
  uint64_t refused_peers = 0;
  uint64_t over_limit = 0;  // refused: every connection was being answered
  uint64_t evicted = 0;     // closed to make room for a newcomer
  uint64_t timeouts = 0;
  uint64_t oversized = 0;
};

// The peer may use the socket: root, the daemon's own user, or a member
// (primary or supplementary group) of the socket's group.
bool peer_allowed(uid_t uid, gid_t gid, std::span<const gid_t> groups,
                  uid_t daemon_uid, gid_t socket_gid);

class ControlServer {
 public:
  // `view` builds the snapshot, called on `io`'s thread for each valid
  // request. `io` must outlive the server's pending handlers.
  ControlServer(boost::asio::io_context& io, ControlServerOptions options,
                ViewSource view);
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;
  ~ControlServer();  // stop()

  // Creates the parent directory if missing, replaces a stale socket file,
  // binds, sets mode and group, listens. Refuses (leaving it alone) a path
  // another process listens on, or one that is not a socket. On failure,
  // one line naming the path.
  Result<void> start();
  // Closes the listener and every connection, and unlinks the socket file.
  // Idempotent.
  void stop();

  const std::string& path() const;
  ControlServerStats stats() const;
  size_t connections() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace rssaudit
