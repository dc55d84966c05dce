#include "core/formats/record_format.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace rssaudit {
namespace {

// The record layout the header comment documents.
static_assert(sizeof(rss_event) == 48);
static_assert(offsetof(rss_event, mm) == 0);
static_assert(offsetof(rss_event, aux) == 8);
static_assert(offsetof(rss_event, start_ns) == 16);
static_assert(offsetof(rss_event, tid) == 24);
static_assert(offsetof(rss_event, tgid) == 28);
static_assert(offsetof(rss_event, slot) == 32);
static_assert(offsetof(rss_event, span_ns) == 36);
static_assert(offsetof(rss_event, cpu) == 40);
static_assert(offsetof(rss_event, faults) == 42);
static_assert(offsetof(rss_event, kind) == 44);
static_assert(offsetof(rss_event, member) == 45);
static_assert(offsetof(rss_event, flags) == 46);
static_assert(offsetof(rss_event, preempt) == 47);

constexpr std::string_view kFileMagic = "RSSAUDIT";
constexpr std::string_view kBlockMagic = "RBLK";
// magic, version and length: enough to tell what the rest will be.
constexpr size_t kHeaderPrefixBytes = 16;
constexpr size_t kMinHeaderBytes = 56;
constexpr size_t kMaxHeaderBytes = kMinHeaderBytes + 2 * kMaxTextBytes;
constexpr size_t kBlockHeaderBytes = 16;
constexpr size_t kEventBytes = sizeof(rss_event);

uint32_t crc(std::span<const uint8_t> bytes) {
  return static_cast<uint32_t>(
      crc32(0, bytes.data(), static_cast<uInt>(bytes.size())));
}

void put(std::vector<uint8_t>& out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out.push_back((value >> (8 * i)) & 0xff);
}

void put_text(std::vector<uint8_t>& out, std::string_view text,
              std::string_view name) {
  if (text.size() > kMaxTextBytes) {
    throw std::invalid_argument(
        fmt::format("record header: {} of {} bytes, more than {}", name,
                    text.size(), kMaxTextBytes));
  }
  put(out, text.size(), 2);
  out.insert(out.end(), text.begin(), text.end());
}

// Overwrites the u32 at `at`: a length or count is only known once what it
// counts has been written.
void put_at(std::vector<uint8_t>& out, size_t at, uint32_t value) {
  for (size_t i = 0; i < 4; ++i) out[at + i] = (value >> (8 * i)) & 0xff;
}

uint64_t get(std::span<const uint8_t> in, size_t at, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value |= uint64_t{in[at + i]} << (8 * i);
  return value;
}

bool starts_with(std::span<const uint8_t> in, std::string_view magic) {
  const size_t n = std::min(in.size(), magic.size());
  return std::memcmp(in.data(), magic.data(), n) == 0;
}

}  // namespace

RecordWriter::RecordWriter(const RecordHeader& header, uint32_t block_records)
    : block_records_(block_records) {
  if (block_records == 0 || block_records > kMaxBlockRecords) {
    throw std::invalid_argument(
        fmt::format("record blocks of {} events: must be 1..{}", block_records,
                    kMaxBlockRecords));
  }
  ready_.reserve(kMaxHeaderBytes);
  ready_.insert(ready_.end(), kFileMagic.begin(), kFileMagic.end());
  put(ready_, kRecordFormatVersion, 4);
  put(ready_, 0, 4);  // the length, once the strings are in
  put(ready_, header.nr_cpu_ids, 4);
  put(ready_, header.online_cpus, 4);
  put(ready_, static_cast<uint32_t>(header.percpu_batch), 4);
  put(ready_, header.page_size, 4);
  put(ready_, header.start_realtime_ns, 8);
  put(ready_, header.start_monotonic_ns, 8);
  put_text(ready_, header.kernel_release, "kernel release");
  put_text(ready_, header.host_name, "host name");
  put_at(ready_, 12, static_cast<uint32_t>(ready_.size() + 4));
  put(ready_, crc(ready_), 4);

  block_.reserve(kBlockHeaderBytes + size_t{block_records} * kEventBytes);
  block_.resize(kBlockHeaderBytes);
}

bool RecordWriter::append(const rss_event& event) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&event);
  block_.insert(block_.end(), bytes, bytes + kEventBytes);
  if (++block_count_ < block_records_) return false;
  seal();
  return true;
}

void RecordWriter::flush() {
  if (block_count_ > 0) seal();
}

void RecordWriter::seal() {
  const std::span<const uint8_t> payload =
      std::span(block_).subspan(kBlockHeaderBytes);
  std::memcpy(block_.data(), kBlockMagic.data(), 4);
  put_at(block_, 4, block_count_);
  put_at(block_, 8, static_cast<uint32_t>(payload.size()));
  put_at(block_, 12, crc(payload));
  ready_.insert(ready_.end(), block_.begin(), block_.end());
  block_.resize(kBlockHeaderBytes);
  block_count_ = 0;
}

std::span<const uint8_t> RecordWriter::take() {
  // Swapping keeps both buffers' capacity for the blocks to come.
  taken_.swap(ready_);
  ready_.clear();
  return taken_;
}

RecordReader::RecordReader(std::function<void(const RecordHeader&)> on_header,
                           std::function<void(const rss_event&)> on_event)
    : on_header_(std::move(on_header)), on_event_(std::move(on_event)) {}

Result<void, RecordError> RecordReader::outcome() const {
  if (error_) return unexpected(*error_);
  return {};
}

Result<void, RecordError> RecordReader::feed(std::span<const uint8_t> bytes) {
  if (error_) return outcome();
  pending_.insert(pending_.end(), bytes.begin(), bytes.end());
  size_t done = 0;
  for (;;) {
    const std::span<const uint8_t> rest = std::span(pending_).subspan(done);
    const size_t used = have_header_ ? parse_block(rest) : parse_header(rest);
    if (used == 0) break;
    done += used;
    offset_ += used;
  }
  pending_.erase(pending_.begin(), pending_.begin() + done);
  return outcome();
}

Result<void, RecordError> RecordReader::finish() {
  if (error_ || (have_header_ && pending_.empty())) return outcome();
  const std::span<const uint8_t> rest = pending_;
  const size_t prefix = have_header_ ? kBlockHeaderBytes : kHeaderPrefixBytes;
  const std::string what =
      have_header_ ? "truncated block" : "truncated file header";
  if (rest.size() < prefix) {
    fail(what, fmt::format("the file ends after {} bytes", rest.size()));
  } else {
    // parse_*() checked the lengths, so this is the unit's whole size.
    const uint64_t size =
        have_header_ ? kBlockHeaderBytes + get(rest, 8, 4) : get(rest, 12, 4);
    fail(what,
         fmt::format("the file ends after {} of {} bytes", rest.size(), size));
  }
  return outcome();
}

size_t RecordReader::fail(std::string_view what, std::string_view why) {
  error_ = RecordError{
      .offset = offset_,
      .message = fmt::format("{} at byte {}: {}", what, offset_, why)};
  return 0;
}

size_t RecordReader::parse_header(std::span<const uint8_t> in) {
  constexpr std::string_view kWhat = "corrupt file header";
  // Judge the magic on what is there, so a short non-recording says so.
  if (!starts_with(in, kFileMagic)) {
    return fail("not an rssaudit recording",
                fmt::format("bad magic (expected \"{}\")", kFileMagic));
  }
  if (in.size() < kHeaderPrefixBytes) return 0;
  // The version before anything else: a newer format may change the rest.
  const uint64_t version = get(in, 8, 4);
  if (version > kRecordFormatVersion) {
    return fail("unsupported recording",
                fmt::format("written by a newer rssaudit (format {}; this "
                            "build reads format {})",
                            version, kRecordFormatVersion));
  }
  if (version == 0) return fail(kWhat, "format version 0");
  const uint64_t length = get(in, 12, 4);
  if (length < kMinHeaderBytes || length > kMaxHeaderBytes) {
    return fail(kWhat, fmt::format("header length {} outside {}..{}", length,
                                   kMinHeaderBytes, kMaxHeaderBytes));
  }
  if (in.size() < length) return 0;
  const std::span<const uint8_t> header = in.first(length);
  if (crc(header.first(length - 4)) != get(header, length - 4, 4)) {
    return fail(kWhat, "header CRC mismatch");
  }

  RecordHeader h{
      .nr_cpu_ids = static_cast<uint32_t>(get(header, 16, 4)),
      .online_cpus = static_cast<uint32_t>(get(header, 20, 4)),
      .percpu_batch = static_cast<int32_t>(get(header, 24, 4)),
      .page_size = static_cast<uint32_t>(get(header, 28, 4)),
      .start_realtime_ns = get(header, 32, 8),
      .start_monotonic_ns = get(header, 40, 8),
      .kernel_release = {},  // read below
      .host_name = {},
  };
  // A matching CRC only proves the bytes are what the writer wrote; the
  // string lengths must still tile the header exactly.
  size_t at = 48;
  for (std::string* text : {&h.kernel_release, &h.host_name}) {
    const size_t size = get(header, at, 2);
    if (at + 2 + size + 4 > length) {
      return fail(kWhat, fmt::format("text at byte {} overruns the header",
                                     offset_ + at));
    }
    text->assign(reinterpret_cast<const char*>(&header[at + 2]), size);
    at += 2 + size;
  }
  if (at + 4 != length) {
    return fail(kWhat, fmt::format("{} unexplained bytes", length - at - 4));
  }
  have_header_ = true;
  on_header_(h);
  return length;
}

size_t RecordReader::parse_block(std::span<const uint8_t> in) {
  constexpr std::string_view kWhat = "corrupt block";
  if (!starts_with(in, kBlockMagic)) return fail(kWhat, "bad block magic");
  if (in.size() < kBlockHeaderBytes) return 0;
  const uint64_t count = get(in, 4, 4);
  const uint64_t payload_size = get(in, 8, 4);
  if (count > kMaxBlockRecords) {
    return fail(kWhat, fmt::format("record count {} exceeds {}", count,
                                   kMaxBlockRecords));
  }
  if (payload_size != count * kEventBytes) {
    return fail(kWhat,
                fmt::format("payload length {} is not {} records of {} bytes",
                            payload_size, count, kEventBytes));
  }
  if (in.size() < kBlockHeaderBytes + payload_size) return 0;
  const std::span<const uint8_t> payload =
      in.subspan(kBlockHeaderBytes, payload_size);
  if (crc(payload) != get(in, 12, 4)) {
    return fail(kWhat, "payload CRC mismatch");
  }
  for (size_t at = 0; at < payload.size(); at += kEventBytes) {
    rss_event event;  // copied out: the payload need not be 8-byte aligned
    std::memcpy(&event, &payload[at], kEventBytes);
    on_event_(event);
  }
  return kBlockHeaderBytes + payload_size;
}

}  // namespace rssaudit
