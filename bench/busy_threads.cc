// A busy process for the drift benchmarks and tests: THREADS threads each
// map PAGES fresh pages, touch every one and unmap them, until killed. Its
// RSS counters fold every few faults and at each unmap, so /proc's stat
// and status, read one after the other, often see two moments.
// Usage: busy_threads [THREADS [PAGES]]
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>

namespace {

size_t pages = 256;

void* churn(void*) {
  constexpr size_t kPage = 4096;
  for (;;) {
    auto* p = static_cast<volatile char*>(
        mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) _exit(3);
    madvise(const_cast<char*>(p), pages * kPage, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < pages; ++i) p[i * kPage] = 1;
    munmap(const_cast<char*>(p), pages * kPage);
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 16;
  if (argc > 2) pages = static_cast<size_t>(std::atoi(argv[2]));
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    if (pthread_create(&t, nullptr, churn, nullptr) != 0) return 3;
  }
  for (;;) pause();
}
