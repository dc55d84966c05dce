#include "store/shm_fault_guard.h"

#include <errno.h>  // program_invocation_short_name
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <ctime>
#include <mutex>

namespace rssaudit {
namespace {

// The handler reads these with nothing but syscalls: fixed slots, each
// published by its flag after its path is written.
constexpr size_t kSlots = 16;
constexpr size_t kPathBytes = 1024;
struct Slot {
  std::atomic<bool> used{false};
  char shm_path[kPathBytes];
};
std::array<Slot, kSlots> slots;
std::mutex slots_mutex;  // between guards; the handler takes no lock

// The address of the last SIGBUS no frozen -shm explained: let through
// once (chattr may have been undone between the fault and the check), then
// the same fault again is fatal.
std::atomic<void*> unexplained{nullptr};

bool frozen(const char* path) {
  struct statx s;
  if (::statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &s) != 0)
    return false;
  return s.stx_attributes & s.stx_attributes_mask &
         (STATX_ATTR_IMMUTABLE | STATX_ATTR_APPEND);
}

// The frozen guarded -shm, or nullptr.
const char* any_frozen() {
  for (Slot& slot : slots)
    if (slot.used.load(std::memory_order_acquire) && frozen(slot.shm_path))
      return slot.shm_path;
  return nullptr;
}

void say(const char* a, const char* b = "", const char* c = "") {
  for (const char* s : {a, b, c})
    if (::write(STDERR_FILENO, s, std::strlen(s)) < 0) return;
}

// Fatal from here: the fault repeats on return and, with the default
// action back, ends the process as a SIGBUS.
void give_up() { ::signal(SIGBUS, SIG_DFL); }

void on_sigbus(int, siginfo_t* info, void*) {
  const char* path = any_frozen();
  if (!path) {
    if (unexplained.exchange(info->si_addr) == info->si_addr) {
      say(program_invocation_short_name,
          ": SIGBUS outside a frozen database -shm\n");
      give_up();
    }
    return;  // tried once more
  }
  unexplained.store(nullptr);
  const timespec ms{0, 1'000'000};
  for (int waited = 0; waited < kShmThawWaitMs; ++waited) {
    ::nanosleep(&ms, nullptr);
    if (!frozen(path)) return;  // thawed: the write is tried again
  }
  say(program_invocation_short_name, ": ", path);
  say(" stayed immutable or append-only (chattr) during a write to its "
      "shared map; SQLite cannot go on: stopping (SIGBUS)\n");
  give_up();
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action{};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, nullptr);
  });
}

}  // namespace

ShmFaultGuard::ShmFaultGuard(const std::string& db_path) {
  const std::string shm = db_path + "-shm";
  if (shm.size() >= kPathBytes) return;
  std::lock_guard lock(slots_mutex);
  for (size_t i = 0; i < kSlots; ++i) {
    if (slots[i].used.load(std::memory_order_relaxed)) continue;
    std::memcpy(slots[i].shm_path, shm.c_str(), shm.size() + 1);
    slots[i].used.store(true, std::memory_order_release);
    slot_ = static_cast<int>(i);
    install_once();
    return;
  }
}

ShmFaultGuard::~ShmFaultGuard() {
  if (slot_ < 0) return;
  std::lock_guard lock(slots_mutex);
  slots[slot_].used.store(false, std::memory_order_release);
}

}  // namespace rssaudit
