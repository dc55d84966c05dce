// The control socket over real Unix sockets in a temp dir: the server runs
// on its own io_context thread, the test talks to it as clients do.
#include "daemon/control_server.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/idle_flood.h"
#include "tests/support/sample_live_view.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr auto kWait = std::chrono::seconds(5);

// A connected client socket, or the errno of connect().
struct Connection {
  int fd = -1;
  int error = 0;

  explicit Connection(const std::string& path) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      error = errno;
      close(fd);
      fd = -1;
    }
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    if (fd >= 0) close(fd);
  }

  bool send_all(const std::string& data) {
    for (size_t sent = 0; sent < data.size();) {
      const ssize_t n =
          ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  // The next line (without '\n'); empty optional on EOF, error or timeout.
  std::optional<std::string> read_line() {
    const auto deadline = Clock::now() + kWait;
    for (;;) {
      if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return line;
      }
      if (!wait_readable(deadline)) return std::nullopt;
      char buf[65536];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return std::nullopt;
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  json ask(const std::string& request) {
    if (!send_all(request + "\n")) return json();
    const std::optional<std::string> line = read_line();
    return line ? json::parse(*line) : json();
  }

  // The server closed the connection (EOF or reset) within kWait.
  bool closed_by_peer() {
    const auto deadline = Clock::now() + kWait;
    while (wait_readable(deadline)) {
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;
    }
    return false;
  }

 private:
  bool wait_readable(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, static_cast<int>(left.count())) > 0;
  }

  std::string pending_;
};

// Polls `done` until true or kWait passes.
template <class Fn>
bool eventually(Fn done) {
  const auto deadline = Clock::now() + kWait;
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = fs::temp_directory_path() / "rssaudit-control-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = (dir_ / "control.sock").string();
  }

  void TearDown() override {
    stop_loop();
    fs::remove_all(dir_);
  }

  ControlServerOptions options() const {
    ControlServerOptions o;
    o.path = path_;
    return o;
  }

  // A server on the test's io_context; not yet started.
  std::unique_ptr<ControlServer> make(ControlServerOptions o) {
    return std::make_unique<ControlServer>(io_, std::move(o),
                                           [this](const LabelScope&) {
                                             ++views_;
                                             return view_;
                                           });
  }

  // Starts `server` and the loop thread; the server is then only touched
  // on the loop (on_loop()).
  void start(ControlServer& server) {
    const Result<void> started = server.start();
    ASSERT_EQ(started ? "" : started.error().message, "");
    if (!loop_.joinable()) loop_ = std::thread([this] { io_.run(); });
  }

  template <class Fn>
  auto on_loop(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    asio::post(io_, [&task] { task(); });
    return result.get();
  }

  void stop_loop() {
    if (!loop_.joinable()) return;
    work_.reset();
    io_.stop();
    loop_.join();
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ =
      asio::make_work_guard(io_);
  std::thread loop_;
  std::atomic<int> views_{0};
  LiveView view_ = testing::sample_live_view();  // set before make()
  fs::path dir_;
  std::string path_;
};

TEST(PeerAllowed, RootDaemonUserAndGroupMembersOnly) {
  const std::vector<gid_t> none, groups = {5, 27, 1001};
  EXPECT_TRUE(peer_allowed(0, 0, none, 1000, 1001));        // root
  EXPECT_TRUE(peer_allowed(1000, 50, none, 1000, 1001));    // the daemon's user
  EXPECT_TRUE(peer_allowed(2000, 1001, none, 1000, 1001));  // primary group
  EXPECT_TRUE(peer_allowed(2000, 50, groups, 1000, 1001));  // supplementary
  EXPECT_FALSE(peer_allowed(2000, 50, std::vector<gid_t>{5, 27}, 1000, 1001));
  EXPECT_FALSE(peer_allowed(65534, 65534, none, 1000, 1001));
}

TEST_F(ControlServerTest, SocketIsMode0660AndAnswers) {
  auto server = make(options());
  start(*server);
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  Connection c(path_);
  ASSERT_EQ(c.error, 0) << std::strerror(c.error);
  const json r = c.ask(R"({"request":"health","id":1})");
  EXPECT_EQ(r["ok"], true) << r;
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["health"]["host"], "testhost");
  const json p = c.ask(R"({"request":"process","pid":400})");
  EXPECT_EQ(p["process"]["comm"], "worker") << p;
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, PipelinedRequestsAreAnsweredInOrder) {
  auto server = make(options());
  start(*server);
  Connection c(path_);
  ASSERT_TRUE(c.send_all(R"({"request":"health","id":"a"})"
                         "\n"
                         R"({"request":"processes","top":1,"id":"b"})"
                         "\n"
                         R"({"request":"process","pid":999,"id":"c"})"
                         "\n"));
  for (const char* id : {"a", "b", "c"}) {
    const auto line = c.read_line();
    ASSERT_TRUE(line) << id;
    EXPECT_EQ(json::parse(*line)["id"], id);
  }
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, GarbageGetsAnErrorAndTheConnectionKeepsServing) {
  auto server = make(options());
  start(*server);
  Connection bad(path_), good(path_);
  for (const std::string& garbage :
       {std::string("\x00\xff\x01\x02", 4), std::string("{{{{"),
        std::string(""), std::string("[1,2,3]"),
        std::string(R"({"request":"process","pid":-5})")}) {
    const json r = bad.ask(garbage);
    EXPECT_EQ(r["ok"], false) << garbage;
    EXPECT_FALSE(r.value("error", "").empty());
  }
  EXPECT_EQ(views_, 0) << "garbage must not build snapshots";
  EXPECT_EQ(bad.ask(R"({"request":"health"})")["ok"], true);
  EXPECT_EQ(good.ask(R"({"request":"health"})")["ok"], true);
  const ControlServerStats stats = on_loop([&] { return server->stats(); });
  EXPECT_EQ(stats.bad_requests, 5u);
  EXPECT_EQ(stats.requests, 7u);
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, OversizedLineGetsAnErrorAndIsClosedOthersServed) {
  auto server = make(options());
  start(*server);
  Connection other(path_);
  ASSERT_EQ(other.error, 0);
  {
    // Exactly the limit is still a request.
    Connection c(path_);
    std::string line = R"({"request":"health"})";
    line.resize(kMaxRequestBytes, ' ');
    EXPECT_EQ(c.ask(line)["ok"], true);
  }
  Connection c(path_);
  ASSERT_TRUE(c.send_all(std::string(kMaxRequestBytes + 2, 'x')));
  const auto line = c.read_line();
  ASSERT_TRUE(line);
  const json r = json::parse(*line);
  EXPECT_EQ(r["ok"], false);
  EXPECT_EQ(r["error"], "request line longer than 65536 bytes");
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(other.ask(R"({"request":"health"})")["ok"], true);
  EXPECT_EQ(on_loop([&] { return server->stats().oversized; }), 1u);
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, ConcurrentClientsAllGetTheirAnswers) {
  auto server = make(options());
  start(*server);
  constexpr int kClients = 8, kRequests = 25;
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      Connection c(path_);
      for (int k = 0; k < kRequests; ++k) {
        const json r = c.ask(json{
            {"request", "processes"},
            {"top", 2},
            {"id", i * 1000 + k}}.dump());
        if (r.is_object() && r["ok"] == true && r["id"] == i * 1000 + k &&
            r["processes"].size() == 2)
          ++answered;
      }
    });
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered, kClients * kRequests);
  on_loop([&] { server->stop(); });
}

// Idle clients holding every slot, and more arriving all the time, still
// leave room for a real request: each is answered long before any idle
// client could time out.
TEST_F(ControlServerTest, IdleClientsDoNotLockOthersOut) {
  ControlServerOptions o = options();
  o.idle_timeout = o.first_request_timeout = std::chrono::seconds(5);
  auto server = make(o);
  start(*server);
  std::vector<std::unique_ptr<Connection>> idle;
  for (size_t i = 0; i < o.max_connections; ++i)
    idle.push_back(std::make_unique<Connection>(path_));
  ASSERT_TRUE(eventually([&] {
    return on_loop([&] { return server->connections(); }) == o.max_connections;
  }));
  testing::IdleFlood<std::unique_ptr<Connection>> flood(
      [&] { return std::make_unique<Connection>(path_); },
      std::chrono::milliseconds(50));
  for (int i = 0; i < 10; ++i) {
    const auto asked = Clock::now();
    Connection c(path_);
    const json r = c.ask(R"({"request":"health"})");
    EXPECT_EQ(r["ok"], true) << r;
    EXPECT_LT(Clock::now() - asked, o.idle_timeout / 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const ControlServerStats stats = on_loop([&] { return server->stats(); });
  EXPECT_GT(stats.evicted, 0u);
  EXPECT_EQ(stats.over_limit, 0u);
  on_loop([&] { server->stop(); });
}

// Idle clients are displaced first: one sending its request byte by byte
// while they keep arriving is answered.
TEST_F(ControlServerTest, AClientPartWayThroughARequestOutlastsIdleOnes) {
  ControlServerOptions o = options();
  o.idle_timeout = o.first_request_timeout = std::chrono::seconds(5);
  auto server = make(o);
  start(*server);
  // Older than the slow client: without the rule it would go first after
  // them.
  std::vector<std::unique_ptr<Connection>> idle;
  for (size_t i = 0; i + 1 < o.max_connections; ++i)
    idle.push_back(std::make_unique<Connection>(path_));
  ASSERT_TRUE(eventually([&] {
    return on_loop([&] { return server->connections(); }) ==
           o.max_connections - 1;
  }));
  Connection slow(path_);
  testing::IdleFlood<std::unique_ptr<Connection>> flood(
      [&] { return std::make_unique<Connection>(path_); },
      std::chrono::milliseconds(50));
  const std::string request = R"({"request":"health","id":"slow"})"
                              "\n";
  for (char byte : request) {
    ASSERT_TRUE(slow.send_all(std::string(1, byte))) << "displaced";
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  const auto line = slow.read_line();
  ASSERT_TRUE(line) << "displaced";
  EXPECT_EQ(json::parse(*line)["id"], "slow");
  EXPECT_GT(on_loop([&] { return server->stats().evicted; }), 0u);
  on_loop([&] { server->stop(); });
}

// Only a connection in the middle of being answered is never displaced:
// with every slot taken by one, a newcomer gets a line and is closed.
TEST_F(ControlServerTest, ANewcomerIsRefusedOnlyWhileAllAreBeingAnswered) {
  // An answer far larger than a socket buffer: a client that does not read
  // it keeps its connection being answered.
  view_.processes.assign(5000, view_.processes[0]);
  ControlServerOptions o = options();
  o.max_connections = 2;
  auto server = make(o);
  start(*server);
  auto a = std::make_unique<Connection>(path_);
  Connection b(path_);
  for (Connection* c : {a.get(), &b})
    ASSERT_TRUE(c->send_all(R"({"request":"processes"})"
                            "\n"));
  ASSERT_TRUE(eventually(
      [&] { return on_loop([&] { return server->stats().requests; }) == 2; }));
  Connection c(path_);
  const auto line = c.read_line();
  ASSERT_TRUE(line);
  EXPECT_EQ(json::parse(*line)["error"],
            "too many connections (limit 2); try again");
  EXPECT_TRUE(c.closed_by_peer());
  a.reset();  // its answer fails: the slot is free
  ASSERT_TRUE(eventually(
      [&] { return on_loop([&] { return server->connections(); }) == 1; }));
  Connection d(path_);
  EXPECT_EQ(d.ask(R"({"request":"health"})")["ok"], true);
  const ControlServerStats stats = on_loop([&] { return server->stats(); });
  EXPECT_EQ(stats.over_limit, 1u);
  EXPECT_EQ(stats.evicted, 0u);
  on_loop([&] { server->stop(); });
}

// A client gets first_request_timeout to send its first request, then
// idle_timeout between requests.
TEST_F(ControlServerTest, AClientMustAskSoonAfterConnectingThenMayIdle) {
  ControlServerOptions o = options();  // idle_timeout: 10 s
  o.first_request_timeout = std::chrono::seconds(1);
  auto server = make(o);
  start(*server);
  Connection silent(path_), established(path_);
  EXPECT_EQ(established.ask(R"({"request":"health"})")["ok"], true);
  EXPECT_TRUE(silent.closed_by_peer()) << "kept for idle_timeout";
  std::this_thread::sleep_for(o.first_request_timeout * 3 / 2);
  EXPECT_EQ(established.ask(R"({"request":"health"})")["ok"], true);
  EXPECT_EQ(on_loop([&] { return server->stats().timeouts; }), 1u);
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, IdleConnectionsAreClosed) {
  ControlServerOptions o = options();
  o.idle_timeout = std::chrono::milliseconds(100);
  auto server = make(o);
  start(*server);
  Connection c(path_);
  ASSERT_EQ(c.error, 0);
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(on_loop([&] { return server->stats().timeouts; }), 1u);
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, ASecondServerOnTheSamePathIsRefused) {
  auto first = make(options());
  start(*first);
  auto second = make(options());
  const std::string error = on_loop([&] {
    const Result<void> started = second->start();
    return started ? "" : started.error().message;
  });
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("another process is listening"), std::string::npos)
      << error;
  Connection c(path_);
  EXPECT_EQ(c.ask(R"({"request":"health"})")["ok"], true)
      << "the first server must keep its socket";
  on_loop([&] {
    second->stop();  // never started: must not unlink the first's socket
    return 0;
  });
  EXPECT_TRUE(fs::exists(path_));
  on_loop([&] { first->stop(); });
}

TEST_F(ControlServerTest, AStaleSocketFileIsReplaced) {
  {
    // A socket bound and closed without unlink: what a crashed daemon
    // leaves behind.
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    close(fd);
    ASSERT_EQ(Connection(path_).error, ECONNREFUSED);
  }
  auto server = make(options());
  start(*server);
  Connection c(path_);
  EXPECT_EQ(c.ask(R"({"request":"health"})")["ok"], true);
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, ARegularFileIsNotReplaced) {
  std::ofstream(path_) << "precious";
  auto server = make(options());
  const Result<void> started = server->start();
  const std::string error = started ? "" : started.error().message;
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("not a socket"), std::string::npos) << error;
  std::ifstream in(path_);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious");
}

TEST_F(ControlServerTest, CreatesAMissingParentDirectory) {
  ControlServerOptions o = options();
  o.path = (dir_ / "run" / "rssaudit" / "control.sock").string();
  auto server = make(o);
  start(*server);
  Connection c(o.path);
  EXPECT_EQ(c.ask(R"({"request":"health"})")["ok"], true);
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, StopClosesClientsAndUnlinks) {
  auto server = make(options());
  start(*server);
  Connection c(path_);
  EXPECT_EQ(c.ask(R"({"request":"health"})")["ok"], true);
  on_loop([&] { server->stop(); });
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(Connection(path_).error, ENOENT);
}

TEST_F(ControlServerTest, AnUnknownGroupIsAnErrorNamingPathAndGroup) {
  ControlServerOptions o = options();
  o.group = "rssaudit-no-such-group";
  auto server = make(o);
  const Result<void> started = server->start();
  const std::string error = started ? "" : started.error().message;
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("'rssaudit-no-such-group' does not exist"),
            std::string::npos)
      << error;
  EXPECT_FALSE(fs::exists(path_));
}

TEST_F(ControlServerTest, TheSocketGetsTheNamedGroup) {
  // Our own primary group: chown to it works without privileges.
  const group* g = getgrgid(getegid());
  ASSERT_NE(g, nullptr);
  ControlServerOptions o = options();
  o.group = g->gr_name;
  auto server = make(o);
  start(*server);
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, getegid());
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  on_loop([&] { server->stop(); });
}

TEST_F(ControlServerTest, AnErrorNamesThePath) {
  ControlServerOptions o = options();
  o.path = std::string(200, 'x');
  EXPECT_NE(make(o)->start().error().message.find(o.path), std::string::npos);
}

// Child exit codes of the nobody test.
constexpr int kConnectDenied = 10;    // EACCES from the 0660 file mode
constexpr int kRefusedByServer = 11;  // connected, got the refusal, EOF

// In a forked child: become nobody, connect, classify what happened. Only
// system calls: the parent is multi-threaded.
[[noreturn]] void connect_as_nobody(const std::string& path) {
  const gid_t nogroup = 65534;
  if (setgroups(1, &nogroup) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
    _exit(2);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    _exit(errno == EACCES ? kConnectDenied : 3);
  const char request[] = "{\"request\":\"health\"}\n";
  // The server may already have refused and closed: EPIPE, not SIGPIPE.
  (void)!send(fd, request, sizeof request - 1, MSG_NOSIGNAL);
  char buf[4096];
  size_t got = 0;
  for (ssize_t n; (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0;)
    got += static_cast<size_t>(n);  // until EOF or reset
  buf[got] = 0;
  if (std::strstr(buf, "\"ok\":false") &&
      std::strstr(buf, "permission denied: uid 65534") &&
      !std::strstr(buf, "testhost"))
    _exit(kRefusedByServer);
  _exit(4);
}

int exit_code_as_nobody(const std::string& path) {
  const pid_t child = fork();
  if (child == 0) connect_as_nobody(path);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(ControlServerTest, AnotherUserIsRefusedAsRoot) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to setuid() a child to nobody (65534)";
  // nobody must reach the socket through the temp dir (mkdtemp: 0700).
  ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
  auto server = make(options());
  start(*server);
  // The file mode alone keeps nobody out...
  EXPECT_EQ(exit_code_as_nobody(path_), kConnectDenied);
  // ...and with a permissive mode set by hand, the peer credentials still
  // do.
  ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
  EXPECT_EQ(exit_code_as_nobody(path_), kRefusedByServer);
  EXPECT_EQ(on_loop([&] { return server->stats().refused_peers; }), 1u);
  EXPECT_EQ(views_, 0);
  on_loop([&] { server->stop(); });
}

}  // namespace
}  // namespace rssaudit
