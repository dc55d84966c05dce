// Drives a running rssauditd's consumer through its own streams at a chosen
// rate: a BPF program (bench/bpf/stream_inject.bpf.c) run with
// BPF_PROG_TEST_RUN writes the records of a recording into the stream of
// its CPU, as the daemon's on_rss_stat program does, in 1 ms steps, from one
// pinned CPU. No workload on a 2-CPU machine makes 1 M updates/s (a page fault
// costs ~3.5 us here); this shows whether the consumer and the streams keep
// up. Prints the rate reached, the records refused (drops) and,
// given the daemon's pid, its CPU time per record.
// Usage (root, one rssauditd running):
//   inject_rate FILE [RATE_PER_S] [SECONDS] [CPU] [DAEMON_PID] [HOLES]
// HOLES: sequence numbers left without a record before the first one, as a
// program that took its number and never published would leave them.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/core.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/bpf/inject_args.h"
#include "core/formats/record_format.h"
#include "core/result.h"
#include "os/clock.h"
#include "pin_to_cpu.h"
#include "program_maps.h"
#include "sampler/sampler.h"
#include "stream_inject.skel.h"

namespace {

// The ids of the BPF programs process `pid` holds (its fds' and links'
// fdinfo name them): the capture of that rssauditd and no other's.
std::set<uint32_t> programs_of(int pid) {
  std::set<uint32_t> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(
           fmt::format("/proc/{}/fdinfo", pid), ec)) {
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);)
      if (line.rfind("prog_id:", 0) == 0)
        ids.insert(
            static_cast<uint32_t>(std::strtoul(line.c_str() + 8, nullptr, 10)));
  }
  return ids;
}

// The maps of the on_rss_stat program of rssauditd `pid` (0: the only one
// loaded), or why there is no such one. Another rssauditd on the host
// (a service, say) is left alone when the pid is given.
rssaudit::Result<std::map<std::string, rssaudit::bench::ProgramMap>>
daemon_maps(int pid) {
  std::map<std::string, rssaudit::bench::ProgramMap> maps;
  const std::set<uint32_t> held = pid ? programs_of(pid) : std::set<uint32_t>{};
  int programs = 0;
  for (uint32_t id = 0; bpf_prog_get_next_id(id, &id) == 0;) {
    if (pid && !held.count(id)) continue;
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
        // on_rss_stat, or before 6.2 on_rss_stat_atomic (kernel names keep
        // 15 characters): one of the two per rssauditd.
        std::strncmp(info.name, "on_rss_stat", 11) == 0) {
      ++programs;
      maps = rssaudit::bench::maps_of_program(fd);
    }
    close(fd);
  }
  const auto fail = [](std::string message) {
    return rssaudit::unexpected(rssaudit::Error{std::move(message)});
  };
  if (programs == 0)
    return fail(pid ? fmt::format("pid {} holds no on_rss_stat program", pid)
                    : "no on_rss_stat program loaded: start rssauditd");
  if (programs > 1)
    return fail(fmt::format(
        "{} on_rss_stat programs loaded: give the daemon's pid", programs));
  for (const char* name : {"slots", "positions", "sequence"})
    if (!maps.count(name))
      return fail(fmt::format("the on_rss_stat program has no map `{}`", name));
  return maps;
}

uint64_t cpu_ns_of(int pid) {  // /proc/PID/schedstat: time on CPU, ns
  std::ifstream in(fmt::format("/proc/{}/schedstat", pid));
  uint64_t ns = 0;
  in >> ns;
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rssaudit;
  if (argc < 2) {
    fmt::print(stderr,
               "usage: inject_rate FILE [RATE_PER_S] [SECONDS] [CPU] "
               "[DAEMON_PID] [HOLES]\n");
    return 2;
  }
  const uint64_t rate = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1e6;
  const double seconds = argc > 3 ? std::atof(argv[3]) : 10;
  const int cpu = argc > 4 ? std::atoi(argv[4]) : 0;
  const int daemon_pid = argc > 5 ? std::atoi(argv[5]) : 0;
  const uint32_t holes = argc > 6 ? std::strtoul(argv[6], nullptr, 10) : 0;

  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  std::vector<rss_event> events;
  RecordReader reader([](const RecordHeader&) {},
                      [&](const rss_event& e) { events.push_back(e); });
  if (auto fed = reader.feed(bytes); !fed) {
    fmt::print(stderr, "{}: {}\n", argv[1], fed.error().message);
    return 1;
  }
  if (events.empty()) {
    fmt::print(stderr, "{}: no records\n", argv[1]);
    return 1;
  }

  auto found = daemon_maps(daemon_pid);
  if (!found) {
    fmt::print(stderr, "inject_rate: {}\n", found.error().message);
    return 1;
  }
  auto& maps = *found;
  stream_inject_bpf* skel = stream_inject_bpf__open();
  if (skel) {
    skel->rodata->slots_per_cpu =
        maps["slots"].info.max_entries / maps["positions"].info.max_entries;
  }
  if (!skel || bpf_map__reuse_fd(skel->maps.slots, maps["slots"].fd) ||
      bpf_map__reuse_fd(skel->maps.positions, maps["positions"].fd) ||
      bpf_map__reuse_fd(skel->maps.sequence, maps["sequence"].fd) ||
      // A stream a quarter full wakes the daemon as its own programs'
      // records do (absent in builds before the doorbell: unrung there).
      (maps.count("doorbell") &&
       bpf_map__reuse_fd(skel->maps.doorbell, maps["doorbell"].fd)) ||
      bpf_map__set_max_entries(skel->maps.records, events.size()) ||
      stream_inject_bpf__load(skel)) {
    fmt::print(stderr,
               "inject_rate: loading bench/bpf/stream_inject.bpf.c: {}\n",
               std::strerror(errno));
    return 1;
  }
  const int records_fd = bpf_map__fd(skel->maps.records);
  for (uint32_t i = 0; i < events.size(); ++i)
    bpf_map_update_elem(records_fd, &i, &events[i], BPF_ANY);

  bench::pin_to_cpu(cpu);

  constexpr uint64_t kStepNs = 1'000'000;
  const uint64_t per_step = rate * kStepNs / 1'000'000'000;
  const uint64_t steps = uint64_t(seconds * 1e9 / kStepNs);
  const int prog = bpf_program__fd(skel->progs.inject);
  inject_args args{};
  args.total = static_cast<uint32_t>(events.size());
  args.holes = holes;
  uint64_t written = 0, full = 0, late_steps = 0;
  const uint64_t daemon_cpu0 = daemon_pid ? cpu_ns_of(daemon_pid) : 0;
  const uint64_t t0 = monotonic_ns();
  for (uint64_t s = 0; s < steps; ++s) {
    const uint64_t due = t0 + s * kStepNs;
    if (monotonic_ns() < due) {
      const timespec ts{time_t(due / 1'000'000'000), long(due % 1'000'000'000)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    } else if (s > 0) {
      ++late_steps;
    }
    args.count = static_cast<uint32_t>(per_step);
    LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = &args,
                .ctx_size_in = sizeof(args));
    if (bpf_prog_test_run_opts(prog, &opts) || opts.retval) {
      fmt::print(stderr, "inject_rate: BPF_PROG_TEST_RUN: {}\n",
                 std::strerror(errno));
      return 1;
    }
    written += args.written;
    full += args.full;
    args.first = static_cast<uint32_t>((args.first + per_step) % args.total);
    args.holes = 0;
  }
  const double elapsed = (monotonic_ns() - t0) / 1e9;
  fmt::print(
      "target {:.2f} M records/s for {:.1f} s; reached {:.2f} M/s "
      "({} written, {} steps late)\n",
      rate / 1e6, seconds, written / elapsed / 1e6, written, late_steps);
  fmt::print("refused by the full or busy stream (drops): {}\n", full);
  if (daemon_pid) {
    // Let the daemon drain what is left before reading its CPU time.
    timespec pause{0, 500'000'000};
    nanosleep(&pause, nullptr);
    const uint64_t ns = cpu_ns_of(daemon_pid) - daemon_cpu0;
    fmt::print("rssauditd CPU: {:.0f} ms, {:.1f} ns per record injected\n",
               ns / 1e6, double(ns) / double(written ? written : 1));
  }
  stream_inject_bpf__destroy(skel);
  return full == 0 ? 0 : 3;
}
