// The service manager's side of sd_notify, for tests: a datagram socket
// bound in a fresh temp dir, to point NOTIFY_SOCKET at, that hands back each
// notification with the sender's pid (what NotifyAccess=main checks).
#pragma once

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rssaudit::testing {

struct Notification {
  std::string text;  // the datagram: "KEY=value" lines
  pid_t pid = 0;     // sender, from SCM_CREDENTIALS
};

class NotifyListener {
 public:
  NotifyListener() {
    char dir[] = "/tmp/rssaudit-notify-XXXXXX";
    if (!mkdtemp(dir)) {
      error_ = std::string("mkdtemp: ") + std::strerror(errno);
      return;
    }
    dir_ = dir;
    path_ = (dir_ / "notify.sock").string();
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      error_ = std::string("socket: ") + std::strerror(errno);
      return;
    }
    // The kernel attaches the sender's credentials only when asked.
    const int on = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      error_ = std::string("bind: ") + std::strerror(errno);
  }
  ~NotifyListener() {
    if (fd_ >= 0) ::close(fd_);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  NotifyListener(const NotifyListener&) = delete;
  NotifyListener& operator=(const NotifyListener&) = delete;

  // Empty when the socket is bound and listening.
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  const std::filesystem::path& dir() const { return dir_; }

  // The next notification, or nothing if none arrives within `timeout`.
  std::optional<Notification> receive(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) return std::nullopt;
    std::vector<char> buf(4096);
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_DONTWAIT);
    if (n < 0) return std::nullopt;
    Notification note{std::string(buf.data(), static_cast<size_t>(n)), 0};
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
        note.pid = cred.pid;
      }
    }
    return note;
  }

 private:
  std::filesystem::path dir_;
  std::string path_;
  std::string error_;
  int fd_ = -1;
};

}  // namespace rssaudit::testing
