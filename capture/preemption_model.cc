#include "capture/preemption_model.h"

#include <sys/utsname.h>
#include <zlib.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace rssaudit {
namespace {

bool is_mode(std::string_view m) {
  return m == "none" || m == "voluntary" || m == "full" || m == "lazy";
}

bool config_has(std::string_view config, std::string_view option) {
  const std::string line = std::string(option) + "=y";
  for (size_t at = config.find(line); at != std::string_view::npos;
       at = config.find(line, at + 1)) {
    const bool starts = at == 0 || config[at - 1] == '\n';
    const size_t end = at + line.size();
    if (starts && (end == config.size() || config[end] == '\n')) return true;
  }
  return false;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

std::string read_gzip(const char* path) {
  gzFile f = gzopen(path, "rb");
  if (!f) return {};
  std::string text;
  std::vector<char> buf(1 << 16);
  for (int n;
       (n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0;)
    text.append(buf.data(), static_cast<size_t>(n));
  gzclose(f);
  return text;
}

}  // namespace

std::string mode_from_debugfs(std::string_view line) {
  const size_t open = line.find('('), close = line.find(')');
  if (open == std::string_view::npos || close == std::string_view::npos ||
      close < open)
    return {};
  const std::string_view mode = line.substr(open + 1, close - open - 1);
  return is_mode(mode) ? std::string(mode) : std::string();
}

std::string mode_from_config(std::string_view config,
                             std::string_view cmdline) {
  if (config_has(config, "CONFIG_PREEMPT_RT")) return "full";
  if (config_has(config, "CONFIG_PREEMPT_DYNAMIC")) {
    std::istringstream words{std::string(cmdline)};
    std::string chosen;
    for (std::string w; words >> w;)
      if (w.rfind("preempt=", 0) == 0) chosen = w.substr(8);
    if (is_mode(chosen)) return chosen;
  }
  if (config_has(config, "CONFIG_PREEMPT_NONE")) return "none";
  if (config_has(config, "CONFIG_PREEMPT_VOLUNTARY")) return "voluntary";
  if (config_has(config, "CONFIG_PREEMPT_LAZY")) return "lazy";
  if (config_has(config, "CONFIG_PREEMPT")) return "full";
  return {};
}

PreemptionModel read_preemption_model() {
  const char* debugfs = "/sys/kernel/debug/sched/preempt";
  if (std::string mode = mode_from_debugfs(read_text(debugfs)); !mode.empty())
    return {mode, debugfs};
  std::string source = "/proc/config.gz";
  std::string config = read_gzip(source.c_str());
  if (config.empty()) {
    utsname u{};
    if (uname(&u) == 0) {
      source = std::string("/boot/config-") + u.release;
      config = read_text(source);
    }
  }
  std::string mode = mode_from_config(config, read_text("/proc/cmdline"));
  if (mode.empty()) return {};
  return {mode, source + " and /proc/cmdline"};
}

}  // namespace rssaudit
