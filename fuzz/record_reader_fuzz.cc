// The recording decoder (core/formats/record_format.h, RecordReader): the
// same bytes fed whole or in pieces of any size decode the same;
// the error lies within the input; every event and name delivered comes
// from a CRC-valid block before it, and none of those is lost.
#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bpf/rss_event.h"
#include "core/formats/record_format.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

using Event = std::array<uint8_t, sizeof(rss_event)>;

struct Decoded {
  std::optional<RecordHeader> header;
  size_t headers = 0;
  std::vector<Event> events;
  std::vector<RecordedName> names;
  std::optional<RecordError> error;
};

bool same_error(const std::optional<RecordError>& a,
                const std::optional<RecordError>& b) {
  if (!a || !b) return !a && !b;
  return a->offset == b->offset && a->message == b->message;
}

std::string error_text(const std::optional<RecordError>& e) {
  return e ? fmt::format("error at {}: {}", e->offset, e->message)
           : std::string("no error");
}

// Feeds `in` in pieces of `next_piece()` bytes (at least 1), then finishes.
template <class Pieces>
Decoded decode(std::span<const uint8_t> in, Pieces next_piece) {
  Decoded d;
  RecordReader reader(
      [&](const RecordHeader& h) {
        d.header = h;
        ++d.headers;
      },
      [&](const rss_event& e) {
        Event bytes;
        std::memcpy(bytes.data(), &e, bytes.size());
        d.events.push_back(bytes);
      },
      [&](const RecordedName& n) { d.names.push_back(n); });
  size_t at = 0;
  while (at < in.size()) {
    const size_t n = std::min(next_piece(), in.size() - at);
    const size_t events = d.events.size(), names = d.names.size();
    const bool had_error = d.error.has_value();
    auto fed = reader.feed(in.subspan(at, n));
    at += n;
    if (fed) {
      FUZZ_CHECK(!had_error, error_text(d.error));
      continue;
    }
    if (had_error) {
      // From the first error on, the reader ignores input and returns it.
      FUZZ_CHECK(same_error(d.error, fed.error()),
                 error_text(d.error) + " then " + error_text(fed.error()));
      FUZZ_CHECK(d.events.size() == events && d.names.size() == names,
                 error_text(d.error));
    }
    d.error = std::move(fed).error();
  }
  auto end = reader.finish();
  if (d.error) {
    FUZZ_CHECK(!end && same_error(d.error, end.error()), error_text(d.error));
  } else if (!end) {
    d.error = std::move(end).error();
  }
  return d;
}

uint64_t get(std::span<const uint8_t> in, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint64_t{in[at + i]} << (8 * i);
  return v;
}

bool crc_matches(std::span<const uint8_t> bytes, uint64_t stored) {
  return crc32(0, bytes.data(), static_cast<uInt>(bytes.size())) == stored;
}

// The layout of record_format.h, walked independently over the bytes before
// the error (or all of them): they must be a valid header and whole,
// CRC-valid blocks, holding exactly what the reader delivered.
void check_prefix(std::span<const uint8_t> in, const Decoded& d) {
  const uint64_t end = d.error ? d.error->offset : in.size();
  FUZZ_CHECK(end <= in.size(), error_text(d.error));
  FUZZ_CHECK(d.headers <= 1, fmt::format("{} headers", d.headers));
  if (!d.header) {
    FUZZ_CHECK(end == 0 && d.events.empty() && d.names.empty(),
               error_text(d.error));
    return;
  }
  FUZZ_CHECK(end >= 16, error_text(d.error));
  const uint64_t version = get(in, 8, 4), length = get(in, 12, 4);
  FUZZ_CHECK(std::memcmp(in.data(), "RSSAUDIT", 8) == 0 && version >= 1 &&
                 version <= kRecordFormatVersion && length <= end &&
                 length >= 4 &&
                 crc_matches(in.first(length - 4), get(in, length - 4, 4)),
             error_text(d.error));
  FUZZ_CHECK(d.header->kernel_release.size() <= kMaxTextBytes &&
                 d.header->host_name.size() <= kMaxTextBytes &&
                 length == 56 + d.header->kernel_release.size() +
                               d.header->host_name.size(),
             error_text(d.error));
  std::vector<Event> events;
  std::vector<RecordedName> names;
  uint64_t at = length;
  while (at < end) {
    FUZZ_CHECK(at + 16 <= end,
               fmt::format("block at {}: {}", at, error_text(d.error)));
    const uint64_t count = get(in, at + 4, 4), bytes = get(in, at + 8, 4);
    FUZZ_CHECK(at + 16 + bytes <= end && count <= kMaxBlockRecords,
               fmt::format("block at {}: {}", at, error_text(d.error)));
    const auto payload = in.subspan(at + 16, bytes);
    FUZZ_CHECK(crc_matches(payload, get(in, at + 12, 4)),
               fmt::format("block at {}: {}", at, error_text(d.error)));
    if (std::memcmp(&in[at], "RBLK", 4) == 0) {
      FUZZ_CHECK(bytes == count * sizeof(rss_event),
                 fmt::format("block at {}", at));
      for (size_t i = 0; i < bytes; i += sizeof(rss_event)) {
        Event e;
        std::memcpy(e.data(), &payload[i], e.size());
        events.push_back(e);
      }
    } else {
      FUZZ_CHECK(std::memcmp(&in[at], "RNAM", 4) == 0 && version >= 2 &&
                     count >= 1 && bytes == count * 32,
                 fmt::format("block at {}", at));
      for (size_t i = 0; i < bytes; i += 32) {
        const auto* comm = reinterpret_cast<const char*>(&payload[i + 16]);
        names.push_back(RecordedName{
            .mm = get(payload, i, 8),
            .tgid = static_cast<uint32_t>(get(payload, i + 8, 4)),
            .comm = std::string(comm, strnlen(comm, kRecordedCommBytes))});
      }
    }
    at += 16 + bytes;
  }
  FUZZ_CHECK(at == end,
             fmt::format("last block ends at {}: {}", at, error_text(d.error)));
  FUZZ_CHECK(events == d.events,
             fmt::format("{} events in valid blocks, {} delivered",
                         events.size(), d.events.size()));
  FUZZ_CHECK(names == d.names,
             fmt::format("{} names in valid blocks, {} delivered", names.size(),
                         d.names.size()));
}

void check_same(const Decoded& a, const Decoded& b, const char* how) {
  FUZZ_CHECK(a.header == b.header && a.headers == b.headers, how);
  FUZZ_CHECK(same_error(a.error, b.error),
             fmt::format("{}: {} vs {}", how, error_text(a.error),
                         error_text(b.error)));
  FUZZ_CHECK(a.events == b.events,
             fmt::format("{}: {} vs {} events", how, a.events.size(),
                         b.events.size()));
  FUZZ_CHECK(a.names == b.names, how);
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rssaudit::fuzz;
  const std::span<const uint8_t> in(data, size);
  const Decoded whole = decode(in, [&] { return size_t{size ? size : 1}; });
  check_prefix(in, whole);
  // Random pieces, the same for the same input: of 1 byte (every boundary)
  // while that is cheap, then of up to 16 bytes, and of up to 300.
  std::minstd_rand random(
      static_cast<uint32_t>(crc32(0, data, static_cast<uInt>(size)) | 1));
  const size_t small = size <= 4096 ? 1 : 16;
  const Decoded bytes =
      decode(in, [&] { return size_t{1 + random() % small}; });
  check_same(whole, bytes, "whole vs small pieces");
  const Decoded pieces = decode(in, [&] { return size_t{1 + random() % 300}; });
  check_same(whole, pieces, "whole vs random pieces");
  return 0;
}
