#include "sampler/sampler.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <filesystem>
#include <utility>

#include "os/clock.h"

namespace rssaudit {

std::string_view walk_decision_name(WalkDecision d) {
  switch (d) {
    case WalkDecision::kWalk:
      return "walk";
    case WalkDecision::kNotOptedIn:
      return "not opted in";
    case WalkDecision::kTooSmall:
      return "too small";
    case WalkDecision::kTooSoon:
      return "too soon";
    case WalkDecision::kTickSpent:
      return "this tick's walk time spent";
  }
  return "?";
}

WalkDecision decide_walk(const WalkPolicy& policy, uint32_t pid,
                         uint64_t rss_pages,
                         std::optional<uint64_t> last_walk_ns,
                         uint64_t now_ns) {
  if (!policy.all && !policy.pids.contains(pid)) {
    return WalkDecision::kNotOptedIn;
  }
  if (rss_pages < policy.min_rss_pages) return WalkDecision::kTooSmall;
  // A clock reading before the last walk is treated as no time elapsed.
  if (last_walk_ns && (now_ns < *last_walk_ns ||
                       now_ns - *last_walk_ns < policy.min_interval_ns)) {
    return WalkDecision::kTooSoon;
  }
  return WalkDecision::kWalk;
}

ProcessSampler::ProcessSampler(WalkPolicy policy, std::string proc_root,
                               PagemapWalker walker)
    : policy_(std::move(policy)),
      proc_root_(std::move(proc_root)),
      walker_(std::move(walker)),
      page_size_(static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))) {}

namespace {

std::string read_error(uint32_t pid, std::string_view file, int error) {
  return fmt::format("pid {}: {}: {}", pid, file, std::strerror(error));
}

}  // namespace

template <typename T, typename Parse>
bool ProcessSampler::read_parsed(const ProcDir& dir, ProcFile file,
                                 const char* name, Parse parse, T& out,
                                 SampleResult& result) {
  const size_t index = static_cast<size_t>(file);
  const Result<std::string_view, ReadError> text = reader_.read(dir, name);
  if (!text && text.error().vanished()) {
    finish(result, SampleOutcome::kVanished);
    return false;
  }
  if (!text) {
    ++stats_.read_failures[index];
    result.error = read_error(result.sample.id.pid, proc_file_name(file),
                              text.error().errnum);
    finish(result, SampleOutcome::kFailed);
    return false;
  }
  Result<T, ParseError> parsed = parse(*text);
  if (!parsed) {
    ++stats_.parse_failures[index];
    result.error =
        fmt::format("pid {}: {}", result.sample.id.pid, parsed.error().message);
    finish(result, SampleOutcome::kFailed);
    return false;
  }
  out = std::move(parsed).value();
  return true;
}

SampleResult ProcessSampler::sample(const SampleRequest& request) {
  ++stats_.samples;
  SampleResult result;
  Sample& s = result.sample;
  s.id.pid = request.pid;
  s.begin_ns = monotonic_ns();

  const ProcDir dir = ProcDir::open(proc_root_, request.pid);
  if (dir.status() == ReadStatus::kVanished) {
    finish(result, SampleOutcome::kVanished);
    return result;
  }
  if (dir.status() != ReadStatus::kOk) {
    // The directory is the way to every file; stat is the first one.
    ++stats_.read_failures[static_cast<size_t>(ProcFile::kStat)];
    result.error = read_error(request.pid, "/proc/PID", dir.error());
    finish(result, SampleOutcome::kFailed);
    return result;
  }

  if (!read_parsed(dir, ProcFile::kStat, "stat", parse_proc_stat, s.stat,
                   result)) {
    return result;
  }
  s.id.start_time = s.stat.start_time;
  // A zombie's mm is gone: its statm reads zeros and its walks ESRCH.
  if (s.stat.state == 'Z' || s.stat.state == 'X') {
    finish(result, SampleOutcome::kVanished);
    return result;
  }
  if (!read_parsed(dir, ProcFile::kStatm, "statm", parse_proc_statm, s.statm,
                   result) ||
      !read_parsed(dir, ProcFile::kStatus, "status", parse_proc_status,
                   s.status, result)) {
    return result;
  }
  if (request.stat_again) {
    if (!read_parsed(dir, ProcFile::kStat, "stat", parse_proc_stat,
                     s.stat_after.emplace(), result))
      return result;
    s.rss_reads = rss_reads_between(s.stat, *s.stat_after);
  }
  if (!read_cgroup(dir, result)) return result;
  if (request.walks && !take_walks(dir, request, result)) return result;

  s.end_ns = monotonic_ns();
  const bool replaced = request.expected && *request.expected != s.id;
  finish(result, replaced ? SampleOutcome::kReplaced : SampleOutcome::kOk);
  return result;
}

IdentityResult ProcessSampler::identify(uint32_t pid) {
  IdentityResult out;
  const ProcDir dir = ProcDir::open(proc_root_, pid);
  if (dir.status() != ReadStatus::kOk) return out;
  const Result<std::string_view, ReadError> stat = reader_.read(dir, "stat");
  if (!stat) return out;
  auto parsed = parse_proc_stat(*stat);
  if (!parsed) return out;
  out.stat = std::move(parsed).value();
  const char state = out.stat->state;
  using State = IdentityResult::State;
  out.state = state == 'Z' || state == 'X'             ? State::kZombie
              : out.stat->flags & ProcStat::kPfExiting ? State::kExiting
                                                       : State::kAlive;
  const Result<std::string_view, ReadError> cgroup =
      reader_.read(dir, "cgroup");
  if (cgroup) {
    if (auto c = parse_proc_cgroup(*cgroup); c)
      out.cgroup = std::move(c).value();
  }
  return out;
}

std::vector<uint32_t> ProcessSampler::pids() const {
  std::vector<uint32_t> out;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(proc_root_, ec)) {
    const std::string name = entry.path().filename();
    uint32_t pid = 0;
    const auto [end, err] =
        std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err == std::errc() && end == name.data() + name.size() && pid)
      out.push_back(pid);
  }
  return out;
}

bool ProcessSampler::read_cgroup(const ProcDir& dir, SampleResult& result) {
  Sample& s = result.sample;
  const size_t index = static_cast<size_t>(ProcFile::kCgroup);
  const Result<std::string_view, ReadError> text = reader_.read(dir, "cgroup");
  if (!text && text.error().vanished()) {
    finish(result, SampleOutcome::kVanished);
    return false;
  }
  std::string why;
  if (!text) {
    ++stats_.read_failures[index];
    why = read_error(s.id.pid, proc_file_name(ProcFile::kCgroup),
                     text.error().errnum);
  } else if (auto parsed = parse_proc_cgroup(*text); !parsed) {
    ++stats_.parse_failures[index];
    why = fmt::format("pid {}: {}", s.id.pid, parsed.error().message);
  } else {
    s.cgroup = std::move(parsed).value();
  }
  if (!why.empty()) {
    if (!result.error.empty()) result.error += "; ";
    result.error += why;
  }
  return true;
}

bool ProcessSampler::take_walks(const ProcDir& dir,
                                const SampleRequest& request,
                                SampleResult& result) {
  Sample& s = result.sample;
  const uint64_t rss = s.status.vm_rss_pages(page_size_).value_or(0);
  s.walk_decision =
      decide_walk(policy_, request.pid, rss, request.last_walk_ns, s.begin_ns);
  if (*s.walk_decision == WalkDecision::kWalk && s.begin_ns > walks_until_ns_)
    s.walk_decision = WalkDecision::kTickSpent;
  if (*s.walk_decision != WalkDecision::kWalk) return true;

  // A failed walk is counted and explained; the cheap sources still stand.
  const auto failed = [&](std::string why) {
    if (!result.error.empty()) result.error += "; ";
    result.error += why;
  };

  const Result<std::string_view, ReadError> rollup =
      reader_.read(dir, "smaps_rollup");
  if (!rollup && rollup.error().vanished()) {
    finish(result, SampleOutcome::kVanished);
    return false;
  }
  const size_t rollup_index = static_cast<size_t>(ProcFile::kSmapsRollup);
  if (!rollup) {
    ++stats_.read_failures[rollup_index];
    failed(read_error(request.pid, proc_file_name(ProcFile::kSmapsRollup),
                      rollup.error().errnum));
  } else if (auto parsed = parse_proc_smaps_rollup(*rollup); !parsed) {
    ++stats_.parse_failures[rollup_index];
    failed(fmt::format("pid {}: {}", request.pid, parsed.error().message));
  } else {
    s.smaps_rollup = std::move(parsed).value();
    ++stats_.smaps_rollup_walks;
  }

  Result<PagemapWalk, WalkError> walk = walker_.walk(dir, reader_);
  if (!walk && walk.error().read.vanished()) {
    finish(result, SampleOutcome::kVanished);
    return false;
  }
  if (!walk) {
    const size_t maps_index = static_cast<size_t>(ProcFile::kMaps);
    switch (walk.error().step) {
      case WalkError::Step::kReadMaps:
        ++stats_.read_failures[maps_index];
        break;
      case WalkError::Step::kParseMaps:
        ++stats_.parse_failures[maps_index];
        break;
      case WalkError::Step::kPagemap:
        ++stats_.pagemap_read_failures;
        break;
    }
    failed(fmt::format("pid {}: {}", request.pid, walk.error().message));
  } else {
    s.pagemap = std::move(walk).value();
    ++stats_.pagemap_walks;
  }
  return true;
}

void ProcessSampler::finish(SampleResult& result, SampleOutcome outcome) {
  result.outcome = outcome;
  if (outcome == SampleOutcome::kVanished) ++stats_.vanished;
  if (outcome == SampleOutcome::kReplaced) ++stats_.replaced;
}

}  // namespace rssaudit
