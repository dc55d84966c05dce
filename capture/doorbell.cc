#include "capture/doorbell.h"

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace rssaudit {
namespace {

int count_ring(void* ctx, void*, size_t) {
  ++*static_cast<uint64_t*>(ctx);
  return 0;
}

}  // namespace

Result<std::unique_ptr<Doorbell>> Doorbell::open(int map_fd) {
  std::unique_ptr<Doorbell> d(new Doorbell);
  d->rb_ = ring_buffer__new(map_fd, count_ring, &d->answered_, nullptr);
  if (!d->rb_)
    return unexpected(Error{
        fmt::format("the doorbell ring buffer: {}", std::strerror(errno))});
  return d;
}

Doorbell::~Doorbell() {
  if (rb_) ring_buffer__free(rb_);
}

int Doorbell::fd() const { return ring_buffer__epoll_fd(rb_); }

uint64_t Doorbell::answer() {
  std::lock_guard lock(answering_);
  answered_ = 0;
  ring_buffer__consume(rb_);
  rings_.store(rings_.load(std::memory_order_relaxed) + answered_,
               std::memory_order_relaxed);
  return answered_;
}

}  // namespace rssaudit
