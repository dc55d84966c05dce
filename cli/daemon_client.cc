#include "cli/daemon_client.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/formats/live_view_json.h"

namespace rssaudit::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A whole process list of a busy host is megabytes; more than this is not
// a response but a runaway peer.
constexpr size_t kMaxResponseBytes = size_t{256} << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void fail(const std::string& why) {
  throw std::runtime_error(why);
}

std::string group_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  std::vector<char> buf(4096);
  group g{};
  group* found = nullptr;
  if (getgrgid_r(st.st_gid, &g, buf.data(), buf.size(), &found) == 0 && found)
    return found->gr_name;
  return std::to_string(st.st_gid);
}

[[noreturn]] void connect_failed(const std::string& path, int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      throw DaemonNotRunning(
          fmt::format("rssauditd is not running (no socket at {})", path));
    case ECONNREFUSED:
      throw DaemonNotRunning(fmt::format(
          "rssauditd is not running (nothing listens on the socket {})", path));
    case EACCES:
    case EPERM: {
      const std::string group = group_of(path);
      fail(group.empty()
               ? fmt::format("permission denied on {}: run as root", path)
               : fmt::format("permission denied on {}: run as root or as a "
                             "member of group '{}'",
                             path, group));
    }
    case EAGAIN:
      fail(fmt::format("rssauditd is busy ({}): try again", path));
    default:
      fail(fmt::format("cannot connect to rssauditd at {}: {}", path,
                       std::strerror(err)));
  }
}

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(left.count()));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR)
      fail(fmt::format("poll: {}", std::strerror(errno)));
  }
}

std::string exchange(const std::string& path, const std::string& line,
                     std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path)
    fail(fmt::format("socket path longer than {} bytes: {}",
                     sizeof addr.sun_path - 1, path));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) fail(fmt::format("socket: {}", std::strerror(errno)));
  const auto deadline = Clock::now() + timeout;
  const auto timed_out = [&] {
    return fmt::format("rssauditd did not answer within {:.1f} s ({})",
                       timeout.count() / 1000.0, path);
  };
  // A Unix socket connect completes at once or fails (EAGAIN: backlog
  // full), it never is in progress.
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr),
              sizeof addr) != 0)
    connect_failed(path, errno);

  const std::string request = line + "\n";
  for (size_t sent = 0; sent < request.size();) {
    // MSG_NOSIGNAL: a daemon closing early is an error line, not SIGPIPE.
    const ssize_t n = send(fd.get(), request.data() + sent,
                           request.size() - sent, MSG_NOSIGNAL);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
    } else if (errno == EAGAIN) {
      if (!wait_for(fd.get(), POLLOUT, deadline)) fail(timed_out());
    } else if (errno != EINTR) {
      // The daemon refused us (a reply waits) or went away: read on.
      break;
    }
  }

  std::string response;
  char buf[65536];
  for (;;) {
    const size_t newline = response.find('\n');
    if (newline != std::string::npos) return response.substr(0, newline);
    if (response.size() > kMaxResponseBytes)
      fail(fmt::format("rssauditd's response exceeds {} MiB ({})",
                       kMaxResponseBytes >> 20, path));
    const ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    if (n > 0) {
      response.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno == ECONNRESET) {
      fail(
          fmt::format("rssauditd closed the connection without an answer "
                      "({})",
                      path));
    } else if (errno == EAGAIN) {
      if (!wait_for(fd.get(), POLLIN, deadline)) fail(timed_out());
    } else if (errno != EINTR) {
      fail(fmt::format("reading from rssauditd ({}): {}", path,
                       std::strerror(errno)));
    }
  }
}

}  // namespace

std::string default_socket_path() {
  const char* env = std::getenv("RSSAUDIT_SOCKET");
  return env && *env ? env : kDefaultSocketPath;
}

void add_socket_option(CLI::App& sub, std::string& path) {
  path = default_socket_path();
  sub.add_option("--socket", path,
                 "rssauditd's control socket (env RSSAUDIT_SOCKET)")
      ->capture_default_str();
}

nlohmann::json ask_daemon(const std::string& socket_path,
                          const Request& request,
                          std::chrono::milliseconds timeout) {
  const std::string line =
      exchange(socket_path, request_line(request), timeout);
  Result<nlohmann::json> r = parse_response(line);
  if (!r) fail("rssauditd: " + r.error().message);
  return std::move(r).value();
}

DaemonHealth health_of(const nlohmann::json& response) {
  auto it = response.find("health");
  if (it == response.end())
    fail("rssauditd's response has no \"health\" (another version?)");
  Result<DaemonHealth> h = health_from_json(*it);
  if (!h) fail("rssauditd's response is malformed: " + h.error().message);
  return std::move(h).value();
}

LiveProcess process_of(const nlohmann::json& j, const std::string& where) {
  Result<LiveProcess> p = process_from_json(j, where);
  if (!p) fail("rssauditd's response is malformed: " + p.error().message);
  return std::move(p).value();
}

}  // namespace rssaudit::cli
