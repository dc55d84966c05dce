#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "workload.h"

namespace rssaudit::soak {

void set_comm(const char* name) {
  prctl(PR_SET_NAME, reinterpret_cast<unsigned long>(name), 0, 0, 0);
}

bool touch_pages(int pages, int flags, int fd, bool write) {
  const long page = sysconf(_SC_PAGESIZE);
  const size_t length = static_cast<size_t>(pages) * page;
  const int prot = write ? PROT_READ | PROT_WRITE : PROT_READ;
  void* map = mmap(nullptr, length, prot, flags, fd, 0);
  if (map == MAP_FAILED) return false;
  volatile char* bytes = static_cast<volatile char*>(map);
  for (int i = 0; i < pages; ++i) {
    if (write)
      bytes[i * page] = 1;
    else
      (void)bytes[i * page];
  }
  munmap(map, length);
  return true;
}

bool write_status(const std::string& path, const std::string& line) {
  const std::string partial = path + ".partial";
  FILE* f = std::fopen(partial.c_str(), "w");
  if (!f) return false;
  const bool written = std::fprintf(f, "%s\n", line.c_str()) > 0;
  return std::fclose(f) == 0 && written &&
         std::rename(partial.c_str(), path.c_str()) == 0;
}

bool write_pids(const std::string& status_path,
                const std::vector<pid_t>& pids) {
  const std::string path = status_path + ".pids";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  bool written = true;
  for (const pid_t pid : pids) written &= std::fprintf(f, "%d\n", pid) > 0;
  return std::fclose(f) == 0 && written;
}

}  // namespace rssaudit::soak
