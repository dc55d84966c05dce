// What an attached BPF program adds to each page fault, measured round by
// round. The program (by id) is taken from its owner (rssauditd, tp_floor,
// bpftrace), which is stopped with SIGINT once this tool holds it; the tool
// then attaches it for every other round of fault_round.h's workload
// (pinned to CPU 0), and drains the records it writes (a ring buffer or
// rssauditd's streams), every 10 ms on CPU 1, reading each record once as
// a consumer would. Each attached round is compared with the detached
// rounds on either side of it: on this shared host the speed drifts by up
// to ~30% within seconds, so only rounds ~50 ms apart see the same machine.
// tp_btf programs are attached by a raw tracepoint link, perf tracepoint
// programs (bpftrace) by a perf event.
// Prints the median ns per page detached and attached and the median of
// the per-round differences ("added" ns per update).
// With `both`, each pair is measured twice: the loop on CPU 0 alone, then
// on CPU 0 and, in a second process (its own mm), on CPU 1 at once, and a
// second line starting "both" gives the figures of the latter (ns per page
// of the two CPUs' mean). A line of the capture's that every CPU writes per
// update (a shared counter, a shared ring's head) moves between the CPUs
// on every update when both fault: it shows as "both" adding more than
// "alone". The records are then drained between rounds, not during them,
// so that neither round pays the consumer's CPU time (both CPUs are busy).
// Usage (root): attach_toggle PROG_ID OWNER_PID PAIRS [both]
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "capture/stream_reader.h"
#include "fault_round.h"
#include "os/clock.h"
#include "pin_to_cpu.h"
#include "program_maps.h"

namespace {

using rssaudit::bench::pin_to_cpu;

[[noreturn]] void fail(const std::string& what) {
  fmt::print(stderr, "attach_toggle: {}: {}\n", what, std::strerror(errno));
  std::exit(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Whether `owner` holds program `prog_id` (an fd whose fdinfo names it):
// the pid stopped below must be the program's, never another process.
bool holds_program(pid_t owner, uint32_t prog_id) {
  const std::string fdinfo = "/proc/" + std::to_string(owner) + "/fdinfo";
  const std::string wanted = "prog_id:\t" + std::to_string(prog_id);
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator(fdinfo, ec)) {
    std::ifstream in(fd.path());
    for (std::string line; std::getline(in, line);)
      if (line == wanted) return true;
  }
  return false;
}

// Stops the program's owner and waits until it has closed its links and
// perf events (it is then gone or a zombie): the program, held here, lives
// on unattached. A raw tracepoint link cannot be detached from outside.
void stop_owner(pid_t owner) {
  if (kill(owner, SIGINT) != 0) fail(fmt::format("signalling pid {}", owner));
  // 60 s: bpftrace under load took more than the 10 s this once waited.
  for (int i = 0; i < 6000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(owner) + "/stat");
    std::string pid, comm, state;
    if (!(stat >> pid >> comm >> state) || state == "Z") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  errno = ETIMEDOUT;
  fail(fmt::format("waiting for pid {} to exit", owner));
}

int tracepoint_id(const char* path) {
  std::ifstream in(path);
  int id = -1;
  if (!(in >> id)) fail(fmt::format("reading {}", path));
  return id;
}

// The program's attachment while a round runs attached: one raw tracepoint
// link (tp_btf), or a perf event on kmem/rss_stat (tracepoint).
class Attachment {
 public:
  Attachment(int prog_fd, bool perf) : prog_fd_(prog_fd), perf_(perf) {
    if (perf_)
      tp_id_ = tracepoint_id("/sys/kernel/tracing/events/kmem/rss_stat/id");
  }
  void attach() {
    if (!perf_) {
      const int fd = bpf_raw_tracepoint_open(nullptr, prog_fd_);
      if (fd < 0) fail("attaching the program");
      fds_.push_back(fd);
      return;
    }
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = tp_id_;
    attr.sample_period = 1;
    attr.wakeup_events = 1;
    // The program runs on every CPU from one event: the tracepoint's
    // programs belong to the tracepoint, not to the event.
    const int fd = static_cast<int>(
        syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd < 0) fail("opening a perf event on kmem/rss_stat");
    fds_.push_back(fd);
    if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog_fd_) != 0 ||
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)
      fail("attaching the program to a perf event");
  }
  void detach() {
    for (const int fd : fds_) close(fd);
    fds_.clear();
  }

 private:
  int prog_fd_;
  bool perf_;
  int tp_id_ = -1;
  std::vector<int> fds_;
};

// Drains what the program writes: its BPF ring buffers, or rssauditd's
// per-CPU streams (the `slots` and `positions` maps) through the daemon's
// own StreamReader. `concurrent`: every 10 ms on CPU 1 while it lives;
// else only when drain_now() is called.
class Drain {
 public:
  Drain(int prog_fd, bool concurrent) {
    auto maps = rssaudit::bench::maps_of_program(prog_fd);
    if (maps.count("slots") && maps.count("positions")) {
      const auto& slots = maps["slots"];
      const auto& positions = maps["positions"];
      auto streams = rssaudit::StreamReader::map(
          slots.fd, positions.fd, positions.info.max_entries,
          slots.info.max_entries / positions.info.max_entries);
      if (!streams) fail(streams.error().message);
      streams_ = std::move(streams).value();
    }
    for (const auto& [name, map] : maps) {
      if (map.info.type != BPF_MAP_TYPE_RINGBUF) continue;
      if (!rings_)
        rings_ = ring_buffer__new(map.fd, read_record, this, nullptr);
      else if (ring_buffer__add(rings_, map.fd, read_record, this) != 0)
        fail("opening the program's ring buffers");
      if (!rings_) fail("opening the program's ring buffer");
    }
    if (concurrent && (rings_ || streams_))
      thread_ = std::thread([this] { run(); });
  }
  ~Drain() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ring_buffer__free(rings_);
  }
  // Reads every record written so far, once.
  void drain_now() {
    if (rings_) ring_buffer__consume(rings_);
    if (streams_)
      streams_->consume(
          SIZE_MAX, rssaudit::monotonic_ns(), [this](const rss_event& e) {
            read_record(this, const_cast<rss_event*>(&e), sizeof(e));
          });
  }

 private:
  static int read_record(void* self, void* data, size_t size) {
    auto* bytes = static_cast<const unsigned char*>(data);
    unsigned sum = 0;
    for (size_t i = 0; i < size; ++i) sum += bytes[i];
    static_cast<Drain*>(self)->sink_ += sum;
    return 0;
  }
  void run() {
    pin_to_cpu(1);
    while (!stop_) {
      drain_now();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  ring_buffer* rings_ = nullptr;
  std::unique_ptr<rssaudit::StreamReader> streams_;
  std::atomic<bool> stop_{false};
  unsigned sink_ = 0;
  std::thread thread_;
};

// A second process (its own mm: no counter or page-table lock shared with
// the first) pinned to CPU 1 that runs one round of the loop each time it
// is told to, at the same moment as the caller's on CPU 0.
class Partner {
 public:
  Partner() {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) fail("creating pipes");
    pid_ = fork();
    if (pid_ < 0) fail("forking the partner");
    if (pid_ == 0) {
      close(to[1]);
      close(from[0]);
      if (!pin_to_cpu(1)) _exit(1);
      char go;
      while (read(to[0], &go, 1) == 1) {
        const double ns = rssaudit::bench::fault_round_ns_per_page();
        if (write(from[1], &ns, sizeof(ns)) != sizeof(ns)) _exit(1);
      }
      _exit(0);
    }
    close(to[0]);
    close(from[1]);
    go_ = to[1];
    done_ = from[0];
  }
  ~Partner() {
    close(go_);
    close(done_);
    waitpid(pid_, nullptr, 0);
  }
  // One round on both CPUs: the mean ns per page of the two.
  double round_with() {
    const char go = 1;
    if (write(go_, &go, 1) != 1) fail("starting the partner's round");
    const double own = rssaudit::bench::fault_round_ns_per_page();
    double theirs = -1;
    if (read(done_, &theirs, sizeof(theirs)) != sizeof(theirs))
      fail("reading the partner's round");
    return own < 0 || theirs < 0 ? -1 : (own + theirs) / 2;
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1, done_ = -1;
};

// Rounds alternately attached and detached: each attached round against
// the detached rounds on either side of it.
struct Toggled {
  std::vector<double> detached, attached, added;
  void first(double off) { detached.push_back(off); }
  void pair(double on, double off) {
    if (on < 0 || off < 0) fail("mapping 64 MiB");
    added.push_back(on - (detached.back() + off) / 2);
    attached.push_back(on);
    detached.push_back(off);
  }
  void print(const char* prefix) const {
    fmt::print(
        "{}detached {:.1f} attached {:.1f} ns/page added {:.1f} ns/event\n",
        prefix, median(detached), median(attached), median(added));
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace rssaudit::bench;
  const bool both = argc == 5 && std::strcmp(argv[4], "both") == 0;
  if (argc != 4 && !both) {
    fmt::print(stderr, "usage: attach_toggle PROG_ID OWNER_PID PAIRS [both]\n");
    return 2;
  }
  const uint32_t prog_id = std::strtoul(argv[1], nullptr, 10);
  const pid_t owner = std::atoi(argv[2]);
  const int pairs = std::atoi(argv[3]);
  const int prog_fd = bpf_prog_get_fd_by_id(prog_id);
  if (prog_fd < 0) fail(fmt::format("program id {}", prog_id));
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0)
    fail(fmt::format("program id {}", prog_id));
  if (!holds_program(owner, prog_id)) {
    errno = ESRCH;
    fail(fmt::format("pid {} holds no program id {}", owner, prog_id));
  }
  stop_owner(owner);
  Drain drain(prog_fd, /*concurrent=*/!both);
  if (!pin_to_cpu(0)) fail("pinning to CPU 0");

  Attachment attachment(prog_fd, info.type == BPF_PROG_TYPE_TRACEPOINT);
  fault_round_ns_per_page();  // warm-up: pages the host took back return
  Toggled alone, together;
  alone.first(fault_round_ns_per_page());
  if (!both) {
    for (int i = 0; i < pairs; ++i) {
      attachment.attach();
      const double on = fault_round_ns_per_page();
      attachment.detach();
      alone.pair(on, fault_round_ns_per_page());
    }
    alone.print("");
    return 0;
  }
  Partner partner;
  together.first(partner.round_with());
  for (int i = 0; i < pairs; ++i) {
    attachment.attach();
    const double on = fault_round_ns_per_page();
    attachment.detach();
    drain.drain_now();
    alone.pair(on, fault_round_ns_per_page());
    attachment.attach();
    const double on_both = partner.round_with();
    attachment.detach();
    drain.drain_now();
    together.pair(on_both, partner.round_with());
  }
  alone.print("");
  together.print("both ");
}
