// RecordWriter then RecordReader (core/formats/record_format.h): any
// plausible header, events and names written, in blocks of any size, read
// back identical (a comm cut at 15 bytes or its first NUL), with no error.
#include <fmt/format.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bpf/rss_event.h"
#include "core/formats/record_format.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

using Event = std::array<uint8_t, sizeof(rss_event)>;
constexpr size_t kMaxEvents = 4096;

// A header a kernel could have written: the writer refuses others.
RecordHeader make_header(FuzzedDataProvider& in) {
  RecordHeader h;
  h.nr_cpu_ids = in.ConsumeIntegralInRange<uint32_t>(1, kMaxRecordedCpus);
  h.online_cpus = in.ConsumeIntegralInRange<uint32_t>(0, h.nr_cpu_ids);
  h.percpu_batch = in.ConsumeIntegralInRange<int32_t>(1, kMaxRecordedBatch);
  h.page_size = kMinPageSize << in.ConsumeIntegralInRange<int>(
                    0, std::countr_zero(kMaxPageSize / kMinPageSize));
  h.start_realtime_ns = in.ConsumeIntegral<uint64_t>();
  h.start_monotonic_ns = in.ConsumeIntegral<uint64_t>();
  h.kernel_release = in.ConsumeRandomLengthString(kMaxTextBytes);
  h.host_name = in.ConsumeRandomLengthString(kMaxTextBytes);
  return h;
}

// What a reader returns for `name`: the comm as a 16-byte NUL-padded field.
RecordedName as_read(RecordedName name) {
  name.comm.resize(std::min(name.comm.size(), kRecordedCommBytes));
  name.comm.resize(strnlen(name.comm.c_str(), name.comm.size()));
  return name;
}

void check(FuzzedDataProvider& in) {
  const RecordHeader header = make_header(in);
  const uint32_t block_records =
      in.ConsumeBool() ? kDefaultBlockRecords
                       : in.ConsumeIntegralInRange<uint32_t>(1, 64);
  std::optional<RecordWriter> writer;
  try {
    writer.emplace(header, block_records);
  } catch (const std::invalid_argument& e) {
    FUZZ_CHECK(false, std::string("a plausible header refused: ") + e.what());
  }
  std::vector<uint8_t> file;
  const auto take = [&] {
    const auto bytes = writer->take();
    file.insert(file.end(), bytes.begin(), bytes.end());
  };
  std::vector<Event> events;
  std::vector<RecordedName> names;
  uint64_t open = 0;  // events in the open block
  while (in.remaining_bytes() > 0 && events.size() < kMaxEvents) {
    switch (in.ConsumeIntegralInRange(0, 9)) {
      case 7:
      case 8: {
        RecordedName name;
        name.mm = in.ConsumeIntegral<uint64_t>();
        name.tgid = in.ConsumeIntegral<uint32_t>();
        name.comm = in.ConsumeRandomLengthString(24);
        if (writer->append_name(name)) take();
        names.push_back(as_read(name));
        break;
      }
      case 9:
        writer->flush();
        open = 0;
        take();
        break;
      default: {
        Event bytes{};
        const std::vector<uint8_t> given = in.ConsumeBytes<uint8_t>(48);
        std::copy(given.begin(), given.end(), bytes.begin());
        rss_event e;
        std::memcpy(&e, bytes.data(), sizeof e);
        const bool sealed = writer->append(e);
        // A block is sealed exactly when it holds block_records events.
        FUZZ_CHECK(sealed == (++open == block_records),
                   fmt::format("{} of {} events", open, block_records));
        if (sealed) {
          open = 0;
          take();
        }
        events.push_back(bytes);
      }
    }
  }
  writer->flush();
  take();

  std::optional<RecordHeader> read_header;
  std::vector<Event> read_events;
  std::vector<RecordedName> read_names;
  RecordReader reader([&](const RecordHeader& h) { read_header = h; },
                      [&](const rss_event& e) {
                        Event bytes;
                        std::memcpy(bytes.data(), &e, bytes.size());
                        read_events.push_back(bytes);
                      },
                      [&](const RecordedName& n) { read_names.push_back(n); });
  auto fed = reader.feed(file);
  if (fed) fed = reader.finish();
  FUZZ_CHECK(fed, fmt::format("{} bytes written: error at {}: {}", file.size(),
                              fed.error().offset, fed.error().message));
  FUZZ_CHECK(read_header == header, "the header read back differs");
  FUZZ_CHECK(read_events == events,
             fmt::format("{} events written, {} read", events.size(),
                         read_events.size()));
  FUZZ_CHECK(read_names == names, fmt::format("{} names written, {} read",
                                              names.size(), read_names.size()));
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  rssaudit::fuzz::check(in);
  return 0;
}
