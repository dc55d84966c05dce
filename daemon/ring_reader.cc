#include "daemon/ring_reader.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rssaudit {

std::unique_ptr<RingReader> RingReader::map(int map_fd, size_t data_bytes,
                                            std::string& error) {
  std::unique_ptr<RingReader> r(new RingReader);
  r->page_size_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  r->consumer_page_ = mmap(nullptr, r->page_size_, PROT_READ | PROT_WRITE,
                           MAP_SHARED, map_fd, 0);
  if (r->consumer_page_ == MAP_FAILED) {
    r->consumer_page_ = nullptr;
    error = fmt::format("mmap of the ring buffer's consumer page: {}",
                        std::strerror(errno));
    return nullptr;
  }
  // The producer page, then the data pages twice (the kernel maps them so).
  r->producer_bytes_ = r->page_size_ + 2 * data_bytes;
  r->producer_pages_ = mmap(nullptr, r->producer_bytes_, PROT_READ, MAP_SHARED,
                            map_fd, static_cast<off_t>(r->page_size_));
  if (r->producer_pages_ == MAP_FAILED) {
    r->producer_pages_ = nullptr;
    error = fmt::format("mmap of the ring buffer's data pages: {}",
                        std::strerror(errno));
    return nullptr;
  }
  r->consumer_pos_ = static_cast<uint64_t*>(r->consumer_page_);
  r->producer_pos_ = static_cast<const uint64_t*>(r->producer_pages_);
  r->data_ = static_cast<const uint8_t*>(r->producer_pages_) + r->page_size_;
  r->mask_ = data_bytes - 1;
  return r;
}

RingReader::~RingReader() {
  if (producer_pages_) munmap(producer_pages_, producer_bytes_);
  if (consumer_page_) munmap(consumer_page_, page_size_);
}

}  // namespace rssaudit
