#include "core/formats/record_format.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
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
constexpr std::string_view kNamesMagic = "RNAM";
// magic, version and length: enough to tell what the rest will be.
constexpr size_t kHeaderPrefixBytes = 16;
constexpr size_t kMinHeaderBytes = 56;
constexpr size_t kMaxHeaderBytes = kMinHeaderBytes + 2 * kMaxTextBytes;
constexpr size_t kBlockHeaderBytes = 16;
constexpr size_t kEventBytes = sizeof(rss_event);
constexpr size_t kNameBytes = 32;
constexpr size_t kCommField = 16;

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

// Fills the block header at the front of `block`, whose payload follows it.
void frame(std::vector<uint8_t>& block, std::string_view magic,
           uint32_t count) {
  const std::span<const uint8_t> payload =
      std::span(block).subspan(kBlockHeaderBytes);
  std::memcpy(block.data(), magic.data(), 4);
  put_at(block, 4, count);
  put_at(block, 8, static_cast<uint32_t>(payload.size()));
  put_at(block, 12, crc(payload));
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

// Why no kernel wrote `h`'s figures, or empty.
std::string implausible(const RecordHeader& h) {
  if (h.nr_cpu_ids < 1 || h.nr_cpu_ids > kMaxRecordedCpus)
    return fmt::format("nr_cpu_ids {} outside 1..{}", h.nr_cpu_ids,
                       kMaxRecordedCpus);
  if (h.online_cpus > h.nr_cpu_ids)
    return fmt::format("{} online CPUs of {} possible", h.online_cpus,
                       h.nr_cpu_ids);
  if (h.percpu_batch < 1 || h.percpu_batch > kMaxRecordedBatch)
    return fmt::format("percpu batch {} outside 1..{}", h.percpu_batch,
                       kMaxRecordedBatch);
  if (!std::has_single_bit(h.page_size) || h.page_size < kMinPageSize ||
      h.page_size > kMaxPageSize)
    return fmt::format("page size {} is not a power of two in {}..{}",
                       h.page_size, kMinPageSize, kMaxPageSize);
  return {};
}

}  // namespace

RecordWriter::RecordWriter(const RecordHeader& header, uint32_t block_records)
    : block_records_(block_records) {
  if (block_records == 0 || block_records > kMaxBlockRecords) {
    throw std::invalid_argument(
        fmt::format("record blocks of {} events: must be 1..{}", block_records,
                    kMaxBlockRecords));
  }
  if (const std::string why = implausible(header); !why.empty())
    throw std::invalid_argument("record header: " + why);
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
  names_.resize(kBlockHeaderBytes);
}

bool RecordWriter::append_name(const RecordedName& name) {
  put(names_, name.mm, 8);
  put(names_, name.tgid, 4);
  put(names_, 0, 4);
  const size_t length = std::min(name.comm.size(), kRecordedCommBytes);
  names_.insert(names_.end(), name.comm.begin(), name.comm.begin() + length);
  names_.insert(names_.end(), kCommField - length, 0);
  if (++name_count_ < kMaxBlockRecords) return false;
  seal_names();
  return true;
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
  seal_names();
}

void RecordWriter::seal() {
  frame(block_, kBlockMagic, block_count_);
  ready_.insert(ready_.end(), block_.begin(), block_.end());
  block_.resize(kBlockHeaderBytes);
  block_count_ = 0;
  // The names of mms first seen in this block (or before) follow it.
  seal_names();
}

void RecordWriter::seal_names() {
  if (name_count_ == 0) return;
  frame(names_, kNamesMagic, name_count_);
  ready_.insert(ready_.end(), names_.begin(), names_.end());
  names_.resize(kBlockHeaderBytes);
  name_count_ = 0;
}

std::span<const uint8_t> RecordWriter::take() {
  // Swapping keeps both buffers' capacity for the blocks to come.
  taken_.swap(ready_);
  ready_.clear();
  return taken_;
}

RecordReader::RecordReader(std::function<void(const RecordHeader&)> on_header,
                           std::function<void(const rss_event&)> on_event,
                           std::function<void(const RecordedName&)> on_name)
    : on_header_(std::move(on_header)),
      on_event_(std::move(on_event)),
      on_name_(std::move(on_name)) {}

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
  const std::string what = !have_header_ ? "truncated file header"
                           : version_ >= 2 &&
                                   rest.size() >= kNamesMagic.size() &&
                                   starts_with(rest, kNamesMagic)
                               ? "truncated name block"
                               : "truncated block";
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
  // A CRC proves no bit flipped, not that a writer was honest: what replay
  // sizes its state by must be what a kernel can have.
  if (const std::string why = implausible(h); !why.empty())
    return fail(kWhat, why);
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
  version_ = static_cast<uint32_t>(version);
  have_header_ = true;
  on_header_(h);
  return length;
}

size_t RecordReader::parse_block(std::span<const uint8_t> in) {
  if (version_ >= 2 && starts_with(in, kNamesMagic)) {
    // Judged once the magic is whole: a cut "RN" could still be "RBLK".
    if (in.size() >= kNamesMagic.size()) return parse_names(in);
    return 0;
  }
  if (!starts_with(in, kBlockMagic))
    return fail("corrupt block", "bad block magic");
  const auto payload =
      payload_of(in, {"corrupt block", "record", kEventBytes, 0});
  if (!payload) return 0;
  for (size_t at = 0; at < payload->size(); at += kEventBytes) {
    rss_event event;  // copied out: the payload need not be 8-byte aligned
    std::memcpy(&event, &(*payload)[at], kEventBytes);
    on_event_(event);
  }
  return kBlockHeaderBytes + payload->size();
}

size_t RecordReader::parse_names(std::span<const uint8_t> in) {
  const auto payload =
      payload_of(in, {"corrupt name block", "name", kNameBytes, 1});
  if (!payload) return 0;
  for (size_t at = 0; at < payload->size(); at += kNameBytes) {
    const auto* comm = reinterpret_cast<const char*>(&(*payload)[at + 16]);
    RecordedName name{
        .mm = get(*payload, at, 8),
        .tgid = static_cast<uint32_t>(get(*payload, at + 8, 4)),
        .comm = std::string(comm, strnlen(comm, kRecordedCommBytes))};
    if (on_name_) on_name_(name);
  }
  return kBlockHeaderBytes + payload->size();
}

std::optional<std::span<const uint8_t>> RecordReader::payload_of(
    std::span<const uint8_t> in, const Framing& f) {
  if (in.size() < kBlockHeaderBytes) return std::nullopt;
  const uint64_t count = get(in, 4, 4);
  const uint64_t payload_size = get(in, 8, 4);
  if (count < f.min_count || count > kMaxBlockRecords) {
    fail(f.what, fmt::format("{} count {} outside {}..{}", f.unit, count,
                             f.min_count, kMaxBlockRecords));
    return std::nullopt;
  }
  if (payload_size != count * f.unit_bytes) {
    fail(f.what, fmt::format("payload length {} is not {} {}s of {} bytes",
                             payload_size, count, f.unit, f.unit_bytes));
    return std::nullopt;
  }
  if (in.size() < kBlockHeaderBytes + payload_size) return std::nullopt;
  const std::span<const uint8_t> payload =
      in.subspan(kBlockHeaderBytes, payload_size);
  if (crc(payload) != get(in, 12, 4)) {
    fail(f.what, "payload CRC mismatch");
    return std::nullopt;
  }
  return payload;
}

}  // namespace rssaudit
