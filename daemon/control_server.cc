#include "daemon/control_server.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59  // Linux 4.13; older libc headers lack the name
#endif

namespace rssaudit {
namespace {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;
using boost::system::error_code;

std::string errno_text(int err) { return std::strerror(err); }

struct PeerCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  std::vector<gid_t> groups;
};

// The connecting process's credentials as the kernel recorded them at
// connect(): unforgeable, unlike anything the client could send.
std::optional<PeerCredentials> peer_credentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return std::nullopt;
  PeerCredentials p{cred.uid, cred.gid, cred.pid, {}};
  std::vector<gid_t> groups(32);
  for (int attempt = 0; attempt < 2; ++attempt) {
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      p.groups = std::move(groups);
      return p;
    }
    if (errno != ERANGE) break;  // kernel < 4.13: primary group only
    groups.resize(len / sizeof(gid_t) + 1);
  }
  return p;
}

std::string group_name(gid_t gid) {
  std::vector<char> buf(4096);
  group g{};
  group* found = nullptr;
  if (getgrgid_r(gid, &g, buf.data(), buf.size(), &found) == 0 && found)
    return found->gr_name;
  return std::to_string(gid);
}

std::optional<gid_t> group_id(const std::string& name) {
  std::vector<char> buf(4096);
  group g{};
  group* found = nullptr;
  if (getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &found) == 0 &&
      found)
    return found->gr_gid;
  return std::nullopt;
}

// Whether a process listens on the socket file at `path`: a non-blocking
// connect succeeds (or finds the backlog full) only then. Errno otherwise:
// ECONNREFUSED for a stale file.
int probe_listener(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int rc =
      connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int err = rc == 0 ? 0 : errno;
  close(fd);
  return err == EAGAIN || err == EINPROGRESS ? 0 : err;
}

}  // namespace

bool peer_allowed(uid_t uid, gid_t gid, std::span<const gid_t> groups,
                  uid_t daemon_uid, gid_t socket_gid) {
  return uid == 0 || uid == daemon_uid || gid == socket_gid ||
         std::ranges::find(groups, socket_gid) != groups.end();
}

class Session;

struct ControlServer::State {
  State(asio::io_context& io, ControlServerOptions o, ViewSource v)
      : io(io),
        options(std::move(o)),
        view(std::move(v)),
        acceptor(io),
        retry(io) {}

  asio::io_context& io;
  ControlServerOptions options;
  ViewSource view;
  Local::acceptor acceptor;
  asio::steady_timer retry;  // after a failed accept (EMFILE)
  bool running = false;
  uid_t daemon_uid = 0;
  gid_t socket_gid = 0;
  std::string socket_group;  // its name, for refusals
  // The socket file we created: stop() unlinks only that one, never the
  // socket of a daemon started since.
  dev_t socket_dev = 0;
  ino_t socket_ino = 0;
  ControlServerStats stats;
  std::set<std::shared_ptr<Session>> sessions;
  uint64_t waits = 0;  // orders the sessions' waits for a request
};

namespace {

using State = ControlServer::State;

}  // namespace

// One client connection: read a line, answer it, repeat. Each wait for a
// request and each write has its own deadline, so a silent or non-reading
// client is closed.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<State> state, Local::socket socket)
      : state_(std::move(state)),
        socket_(std::move(socket)),
        timer_(state_->io) {}

  void begin() { await_request(); }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ignored;
    socket_.close(ignored);
    timer_.cancel();
    // Last: may drop the final reference to this session.
    state_->sessions.erase(shared_from_this());
  }

  // Whether a newcomer may displace this session, and in what order
  // (control_server.h): the lowest rank first.
  bool evictable() const { return phase_ != Phase::kAnswering; }
  std::pair<bool, uint64_t> eviction_rank() const {
    return {phase_ == Phase::kReceiving, waiting_since_};
  }

 private:
  enum class Phase {
    kIdle,       // waiting for a request, none of it received
    kReceiving,  // part of a request received
    kAnswering,  // a request read, its answer not yet written
  };

  void arm_deadline(std::chrono::milliseconds timeout) {
    timer_.expires_after(timeout);
    timer_.async_wait([self = shared_from_this()](error_code ec) {
      // A re-arm cancels the wait, but one that had already expired may
      // still be queued: trust the expiry time, not the error code.
      if (ec == asio::error::operation_aborted || self->closed_ ||
          self->timer_.expiry() > asio::steady_timer::clock_type::now())
        return;
      ++self->state_->stats.timeouts;
      self->close();
    });
  }

  // One deadline for the whole request, however it trickles in.
  void await_request() {
    const ControlServerOptions& o = state_->options;
    phase_ = Phase::kIdle;
    waiting_since_ = ++state_->waits;
    arm_deadline(answered_ ? o.idle_timeout
                           : std::min(o.first_request_timeout, o.idle_timeout));
    if (!buffer_.empty()) return receive();  // pipelined
    // Readability, not a read: until a byte arrives the session is idle,
    // the first kind a newcomer displaces.
    socket_.async_wait(Local::socket::wait_read,
                       [self = shared_from_this()](error_code ec) {
                         if (self->closed_) return;
                         if (ec) return self->close();
                         self->receive();
                       });
  }

  void receive() {
    phase_ = Phase::kReceiving;
    // One byte past the limit for the '\n': a full buffer without one is a
    // line too long (error::not_found).
    asio::async_read_until(
        socket_,
        asio::dynamic_buffer(buffer_, state_->options.max_line_bytes + 1), '\n',
        [self = shared_from_this()](error_code ec, size_t n) {
          self->on_read(ec, n);
        });
  }

  void on_read(error_code ec, size_t n) {
    if (closed_) return;
    if (ec == asio::error::not_found) {
      ++state_->stats.oversized;
      ++state_->stats.bad_requests;
      reply_ = error_line(fmt::format("request line longer than {} bytes",
                                      state_->options.max_line_bytes)) +
               "\n";
      write(/*then_close=*/true);
      return;
    }
    if (ec) {  // EOF, reset, or cancelled by close()
      close();
      return;
    }
    const std::string_view line(buffer_.data(), n - 1);
    ++state_->stats.requests;
    bool ok = false;
    reply_ = answer_line(line, state_->view, &ok);
    if (!ok) ++state_->stats.bad_requests;
    reply_ += '\n';
    buffer_.erase(0, n);
    write(/*then_close=*/false);
  }

  void write(bool then_close) {
    phase_ = Phase::kAnswering;
    arm_deadline(state_->options.idle_timeout);
    asio::async_write(
        socket_, asio::buffer(reply_),
        [self = shared_from_this(), then_close](error_code ec, size_t) {
          if (self->closed_) return;
          if (ec || then_close) return self->close();
          self->answered_ = true;
          self->await_request();
        });
  }

  std::shared_ptr<State> state_;
  Local::socket socket_;
  asio::steady_timer timer_;
  std::string buffer_;
  std::string reply_;
  Phase phase_ = Phase::kIdle;
  uint64_t waiting_since_ = 0;  // State::waits when the wait began
  bool answered_ = false;       // a request was answered: no longer new
  bool closed_ = false;
};

namespace {

// One line to a client we will not serve, then close. Non-blocking: the
// line fits any socket buffer of a fresh connection, and a refused client
// must not hold the loop.
void refuse(Local::socket& socket, const std::string& why) {
  error_code ec;
  socket.non_blocking(true, ec);
  const std::string line = error_line(why) + "\n";
  asio::write(socket, asio::buffer(line), ec);
  socket.close(ec);
}

// Closes the session a newcomer displaces, if any may be.
bool make_room(State& state) {
  std::shared_ptr<Session> victim;
  for (const std::shared_ptr<Session>& s : state.sessions)
    if (s->evictable() &&
        (!victim || s->eviction_rank() < victim->eviction_rank()))
      victim = s;
  if (!victim) return false;
  ++state.stats.evicted;
  victim->close();
  return true;
}

void accept_next(const std::shared_ptr<State>& state);

void on_accept(const std::shared_ptr<State>& state, error_code ec,
               Local::socket socket) {
  if (!state->running) return;
  if (ec) {
    if (ec == asio::error::operation_aborted) return;
    // Out of descriptors or memory: retrying at once would spin the loop.
    state->retry.expires_after(std::chrono::milliseconds(100));
    state->retry.async_wait([state](error_code e) {
      if (!e) accept_next(state);
    });
    return;
  }
  ++state->stats.accepted;
  const std::optional<PeerCredentials> peer =
      peer_credentials(socket.native_handle());
  if (!peer || !peer_allowed(peer->uid, peer->gid, peer->groups,
                             state->daemon_uid, state->socket_gid)) {
    ++state->stats.refused_peers;
    refuse(socket,
           peer ? fmt::format("permission denied: uid {} is not root, "
                              "rssauditd's user (uid {}) or a member of "
                              "group '{}'",
                              peer->uid, state->daemon_uid, state->socket_group)
                : "permission denied: peer credentials unavailable");
  } else if (state->sessions.size() >= state->options.max_connections &&
             !make_room(*state)) {
    ++state->stats.over_limit;
    refuse(socket, fmt::format("too many connections (limit {}); try again",
                               state->options.max_connections));
  } else {
    auto session = std::make_shared<Session>(state, std::move(socket));
    state->sessions.insert(session);
    session->begin();
  }
  accept_next(state);
}

void accept_next(const std::shared_ptr<State>& state) {
  if (!state->running) return;
  state->acceptor.async_accept([state](error_code ec, Local::socket socket) {
    on_accept(state, ec, std::move(socket));
  });
}

}  // namespace

ControlServer::ControlServer(asio::io_context& io, ControlServerOptions options,
                             ViewSource view)
    : state_(std::make_shared<State>(io, std::move(options), std::move(view))) {
}

ControlServer::~ControlServer() { stop(); }

const std::string& ControlServer::path() const { return state_->options.path; }

ControlServerStats ControlServer::stats() const { return state_->stats; }

size_t ControlServer::connections() const { return state_->sessions.size(); }

Result<void> ControlServer::start() {
  State& s = *state_;
  const std::string& path = s.options.path;
  if (s.running)
    return unexpected(Error{path + ": control socket already started"});
  if (path.empty()) return unexpected(Error{"control socket: empty path"});
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return unexpected(
        Error{fmt::format("{}: control socket path longer than {} bytes", path,
                          sizeof(sockaddr_un::sun_path) - 1)});

  std::optional<gid_t> gid;
  if (!s.options.group.empty()) {
    gid = group_id(s.options.group);
    if (!gid)
      return unexpected(
          Error{fmt::format("{}: control socket group '{}' does not exist",
                            path, s.options.group)});
  }

  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  std::error_code fs_ec;
  if (!parent.empty()) {
    std::filesystem::create_directories(parent, fs_ec);
    if (fs_ec)
      return unexpected(
          Error{fmt::format("{}: cannot create directory {}: {}", path,
                            parent.string(), fs_ec.message())});
  }

  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return unexpected(Error{fmt::format(
          "{}: exists and is not a socket; not replacing it", path)});
    const int err = probe_listener(path);
    if (err == 0)
      return unexpected(Error{fmt::format(
          "{}: another process is listening there (rssauditd already "
          "running?)",
          path)});
    if (err != ECONNREFUSED)
      return unexpected(Error{fmt::format(
          "{}: cannot check the existing socket: {}", path, errno_text(err))});
    // Stale: left by a daemon that did not stop cleanly.
    if (unlink(path.c_str()) != 0 && errno != ENOENT)
      return unexpected(Error{fmt::format(
          "{}: cannot remove the stale socket: {}", path, errno_text(errno))});
  } else if (errno != ENOENT) {
    return unexpected(Error{fmt::format("{}: {}", path, errno_text(errno))});
  }

  error_code ec;
  auto fail = [&](std::string why) {
    error_code ignored;
    s.acceptor.close(ignored);
    return unexpected(Error{fmt::format("{}: {}", path, why)});
  };
  s.acceptor.open(Local(), ec);
  if (ec) return fail("socket: " + ec.message());
  // Created 0660 by bind() itself (the umask around it; the daemon has one
  // thread here): a chmod() by path after it would follow whatever another
  // user put at the path meanwhile, a link to any file included.
  const mode_t umask_before = umask(0117);
  s.acceptor.bind(Local::endpoint(path), ec);
  umask(umask_before);
  if (ec) return fail("bind: " + ec.message());
  // The group before listen(): until then every connect() is refused, so
  // no client ever sees the socket with another group.
  auto fail_bound = [&](std::string why) {
    unlink(path.c_str());
    return fail(std::move(why));
  };
  if (gid && fchownat(AT_FDCWD, path.c_str(), static_cast<uid_t>(-1), *gid,
                      AT_SYMLINK_NOFOLLOW) != 0)
    return fail_bound(fmt::format("chown to group '{}': {}", s.options.group,
                                  errno_text(errno)));
  if (lstat(path.c_str(), &st) != 0)
    return fail_bound("stat: " + errno_text(errno));
  if (!S_ISSOCK(st.st_mode))
    return fail_bound("replaced by another file while binding");
  s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail_bound("listen: " + ec.message());

  s.socket_dev = st.st_dev;
  s.socket_ino = st.st_ino;
  s.socket_gid = st.st_gid;
  s.socket_group = group_name(st.st_gid);
  s.daemon_uid = geteuid();
  s.running = true;
  accept_next(state_);
  return {};
}

void ControlServer::stop() {
  State& s = *state_;
  if (!s.running) return;
  s.running = false;
  error_code ignored;
  s.acceptor.close(ignored);
  s.retry.cancel();
  // close() erases from the set: iterate over a copy.
  const std::vector<std::shared_ptr<Session>> open(s.sessions.begin(),
                                                   s.sessions.end());
  for (const auto& session : open) session->close();
  struct stat st {};
  if (lstat(s.options.path.c_str(), &st) == 0 && st.st_dev == s.socket_dev &&
      st.st_ino == s.socket_ino)
    unlink(s.options.path.c_str());
}

}  // namespace rssaudit
