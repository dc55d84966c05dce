// The maps a loaded BPF program uses, by name, for the bench tools that
// work on another process's capture (attach_toggle, inject_rate).
#pragma once

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>

namespace rssaudit::bench {

struct ProgramMap {
  int fd = -1;
  bpf_map_info info{};
};

// Name -> map (fd and kernel info) for the maps of program `prog_fd`;
// empty when they cannot be read. The fds stay open for the process.
inline std::map<std::string, ProgramMap> maps_of_program(int prog_fd) {
  std::map<std::string, ProgramMap> maps;
  uint32_t map_ids[16];
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return maps;
  const uint32_t n = std::min<uint32_t>(info.nr_map_ids, 16);
  info = bpf_prog_info{};
  info.nr_map_ids = n;
  info.map_ids = reinterpret_cast<uint64_t>(map_ids);
  len = sizeof(info);
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return maps;
  for (uint32_t i = 0; i < n; ++i) {
    ProgramMap m;
    m.fd = bpf_map_get_fd_by_id(map_ids[i]);
    uint32_t map_len = sizeof(m.info);
    if (m.fd < 0) continue;
    if (bpf_obj_get_info_by_fd(m.fd, &m.info, &map_len) != 0) {
      close(m.fd);
      continue;
    }
    maps[m.info.name] = m;
  }
  return maps;
}

}  // namespace rssaudit::bench
