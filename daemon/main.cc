// rssauditd: see daemon/daemon.h.
#include <string>
#include <vector>

#include "daemon/daemon.h"

int main(int argc, char** argv) {
  return rssaudit::run_daemon(std::vector<std::string>(argv + 1, argv + argc));
}
