// rssauditd's options as a whole (daemon/daemon_options.h): a command line
// and the config file it names. Never an exception: options, or one
// printable line (core/formats/printable_text.h) naming what is wrong, with
// exit 2 (a flag) or 1 (the file). Options that load are within what each
// says it takes, and build the walk policy (the PIDs written, not wrapped)
// and the recorder's options without throwing. The same settings given as
// flags or as config entries load the same options, or both fail.
//
// Input: the config file's text, then the arguments, separated by NUL
// bytes. An argument naming another config file is dropped: the target
// reads only the file it writes.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/formats/config_file.h"
#include "core/formats/printable_text.h"
#include "daemon/daemon_options.h"
#include "fuzz/command_line.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

constexpr size_t kMaxArgs = 32;

// A file of the target's own, rewritten for each input.
const std::string& config_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string p = fmt::format("{}/rssaudit-daemon-options-fuzz-{}.conf",
                                dir && *dir ? dir : "/tmp", ::getpid());
    std::atexit([] { ::unlink(config_path().c_str()); });
    return p;
  }();
  return path;
}

void write_config(std::string_view text) {
  const int fd =
      ::open(config_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
             0600);
  if (fd < 0 || ::write(fd, text.data(), text.size()) !=
                    static_cast<ssize_t>(text.size())) {
    std::perror(config_path().c_str());
    std::abort();  // the target's own failure, not a finding
  }
  ::close(fd);
}

Result<DaemonOptions, OptionsError> load(std::string_view config_text,
                                         std::vector<std::string> args) {
  write_config(config_text);
  args.insert(args.begin(), "--config=" + config_path());
  return load_daemon_options(args);
}

bool seconds_ok(double s, double min, bool zero) {
  return std::isfinite(s) && ((zero && s == 0) || (s >= min && s <= 3.2e7));
}

void check_loaded(const DaemonOptions& o, const std::string& what) {
  FUZZ_CHECK(seconds_ok(o.duration_s, 0.001, true) &&
                 seconds_ok(o.summary_s, 0.1, true) &&
                 seconds_ok(o.sample_s, 0.01, false) &&
                 seconds_ok(o.flush_s, 0.01, false) &&
                 seconds_ok(o.walk_interval_s, 0.01, true) &&
                 seconds_ok(o.recorder.quiet_interval_s, 0.1, true) &&
                 seconds_ok(o.recorder.model_error_interval_s, 0.1, true),
             what);
  FUZZ_CHECK(o.pid <= 4194304 && o.poll_ms >= 1 && o.poll_ms <= 1000 &&
                 o.top <= 100000 && o.metrics_top >= 1 &&
                 o.metrics_top <= 1000 && o.metrics_processes <= 1000,
             what);
  FUZZ_CHECK(std::isfinite(o.retention_days) && o.retention_days >= 0 &&
                 std::isfinite(o.retention_mib) && o.retention_mib >= 0,
             what);
  FUZZ_CHECK(o.metrics_group_by == "comm" || o.metrics_group_by == "cgroup",
             what);
  FUZZ_CHECK(o.recorder.cgroup.empty() || o.recorder.cgroup.front() == '/',
             what);
  // Never throws (std::stoul of a walk PID did), and every PID is one.
  const WalkPolicy walk = walk_policy(o);
  for (const uint32_t pid : walk.pids)
    FUZZ_CHECK(pid >= 1 && pid <= 4194304, fmt::format("{}: {}", pid, what));
  for (const std::string& w : o.walk) {
    const uint64_t written = std::strtoull(w.c_str(), nullptr, 10);
    FUZZ_CHECK(w == "all" || (written <= UINT32_MAX &&
                              walk.pids.contains(uint32_t(written))),
               fmt::format("{}: {}", shown(w), what));
  }
  FUZZ_CHECK(recorder_options(o).pid == o.pid, what);
}

// Each argument "--key=value" as a config entry: the same options, or
// both fail. Only where every argument is one, keys differ and the file
// reads back as exactly those entries.
void check_flags_as_config(const std::vector<std::string>& args,
                           const Result<DaemonOptions, OptionsError>& as_flags,
                           const std::string& what) {
  std::string text;
  std::vector<ConfigEntry> wanted;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (!arg.starts_with("--") || eq == std::string::npos) return;
    wanted.push_back({.key = arg.substr(2, eq - 2), .value = arg.substr(eq + 1)});
    text += fmt::format("{} = {}\n", wanted.back().key, wanted.back().value);
  }
  const auto parsed = parse_config(text);
  if (!parsed || parsed->size() != wanted.size()) return;
  for (size_t i = 0; i < wanted.size(); ++i)
    if ((*parsed)[i].key != wanted[i].key ||
        (*parsed)[i].value != wanted[i].value || wanted[i].key == "help" ||
        wanted[i].key == "version")
      return;
  const auto as_config = load(text, {});
  const std::string both = fmt::format(
      "{}; as a file {}: {}", what, shown(text),
      as_config ? "loads" : shown(as_config.error().message));
  FUZZ_CHECK(as_flags.has_value() == as_config.has_value(), both);
  if (!as_flags) return;
  FUZZ_CHECK(*as_flags == *as_config, both);
}

void check(std::string_view input) {
  const std::vector<std::string_view> parts =
      nul_separated(input, kMaxArgs + 1);
  const std::string_view config_text = parts.front();
  std::vector<std::string> args;
  for (size_t i = 1; i < parts.size(); ++i)
    if (!parts[i].starts_with("--config")) args.emplace_back(parts[i]);

  std::string what;
  for (const std::string& a : args) what += fmt::format(" '{}'", shown(a));
  what = fmt::format("args{} with config {}", what, shown(config_text));

  const auto loaded = load(config_text, args);
  if (!loaded) {
    const OptionsError& e = loaded.error();
    if (e.exit_code == 0) {  // --help or --version, printed
      FUZZ_CHECK(e.message.empty(), what);
      return;
    }
    FUZZ_CHECK(e.exit_code == 1 || e.exit_code == 2, what);
    FUZZ_CHECK(!e.message.empty() && e.message == printable(e.message),
               fmt::format("{}: {}", shown(e.message), what));
  } else {
    FUZZ_CHECK(loaded->config == config_path(), what);
    check_loaded(*loaded, what);
  }
  if (config_text.empty()) check_flags_as_config(args, loaded, what);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
