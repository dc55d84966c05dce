#include "core/formats/record_format.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace rssaudit {
namespace {

using Bytes = std::vector<uint8_t>;

const RecordHeader kHeader{
    .nr_cpu_ids = 64,
    .online_cpus = 48,
    .percpu_batch = 96,
    .page_size = 4096,
    .start_realtime_ns = 1'767'225'600'123'456'789,
    .start_monotonic_ns = 98'765'432'100,
    .kernel_release = "6.18.44",
    .host_name = "build-host.example",
};

std::vector<rss_event> random_events(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<rss_event> events(n);
  for (rss_event& e : events) {
    // Every byte random, padding included: the format stores all 48 as-is.
    for (size_t at = 0; at < sizeof e; at += 8) {
      const uint64_t word = rng();
      std::memcpy(reinterpret_cast<uint8_t*>(&e) + at, &word, 8);
    }
  }
  return events;
}

Bytes encode(const std::vector<rss_event>& events, uint32_t block_records) {
  RecordWriter writer(kHeader, block_records);
  Bytes file;
  const auto take = [&] {
    const std::span<const uint8_t> bytes = writer.take();
    file.insert(file.end(), bytes.begin(), bytes.end());
  };
  for (const rss_event& e : events) {
    if (writer.append(e)) take();
  }
  writer.flush();
  take();
  return file;
}

struct Decoded {
  std::optional<RecordHeader> header;
  std::vector<rss_event> events;
  std::vector<RecordedName> names;
  std::optional<RecordError> error;
};

// Feeds `file` in pieces of `chunk` bytes (the last may be shorter), then
// ends the input.
Decoded decode(std::span<const uint8_t> file, size_t chunk) {
  Decoded out;
  RecordReader reader(
      [&](const RecordHeader& h) {
        EXPECT_FALSE(out.header) << "header delivered twice";
        out.header = h;
      },
      [&](const rss_event& e) {
        EXPECT_TRUE(out.header) << "event before the header";
        out.events.push_back(e);
      },
      [&](const RecordedName& n) { out.names.push_back(n); });
  for (size_t at = 0; at < file.size() && !out.error; at += chunk) {
    auto fed = reader.feed(file.subspan(at, std::min(chunk, file.size() - at)));
    if (!fed) out.error = fed.error();
  }
  if (!out.error) {
    if (auto end = reader.finish(); !end) out.error = end.error();
  }
  return out;
}

bool same_events(std::span<const rss_event> a, std::span<const rss_event> b) {
  // memcmp must not see the null data() of an empty vector.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

// The byte ranges of the header and of each block of a file written by
// encode(): where each unit ends, and how many events precede that end.
struct Unit {
  size_t begin;
  size_t end;
  size_t events_through;
};

std::vector<Unit> units(size_t header_bytes, size_t total_events,
                        uint32_t block_records) {
  std::vector<Unit> out{{0, header_bytes, 0}};
  for (size_t done = 0; done < total_events;) {
    const size_t count = std::min<size_t>(block_records, total_events - done);
    done += count;
    out.push_back({out.back().end, out.back().end + 16 + 48 * count, done});
  }
  return out;
}

const Unit& unit_at(const std::vector<Unit>& all, size_t byte) {
  return *std::find_if(all.begin(), all.end(),
                       [&](const Unit& u) { return byte < u.end; });
}

// The header length of files written with kHeader.
constexpr size_t kHeaderBytes = 56 + 7 + 18;

TEST(RecordFormat, RoundTripsManyEventsAcrossBlocksAndKeepsTheHeader) {
  const std::vector<rss_event> events = random_events(10'000, 1);
  RecordWriter writer(kHeader);  // 4096 per block: two full, one partial
  Bytes file;
  int sealed = 0;
  for (const rss_event& e : events) {
    if (!writer.append(e)) continue;
    ++sealed;
    const auto bytes = writer.take();
    file.insert(file.end(), bytes.begin(), bytes.end());
  }
  writer.flush();
  const auto bytes = writer.take();
  file.insert(file.end(), bytes.begin(), bytes.end());
  EXPECT_EQ(sealed, 2);
  EXPECT_EQ(file.size(), kHeaderBytes + 3 * 16 + 48 * events.size());

  // Whole, and in odd-sized pieces that split every kind of field.
  for (size_t chunk : {file.size(), size_t{1}, size_t{7}, size_t{4099}}) {
    const Decoded d = decode(file, chunk);
    EXPECT_FALSE(d.error) << d.error->message;
    EXPECT_EQ(d.header, kHeader);
    EXPECT_TRUE(same_events(d.events, events)) << "chunk " << chunk;
  }
}

TEST(RecordFormat, FileHeaderHasTheDocumentedLayout) {
  const Bytes file = encode({}, 3);
  ASSERT_EQ(file.size(), kHeaderBytes);
  const auto u32 = [&](size_t at) {
    return file[at] | file[at + 1] << 8 | file[at + 2] << 16 |
           uint32_t{file[at + 3]} << 24;
  };
  EXPECT_EQ(std::string(file.begin(), file.begin() + 8), "RSSAUDIT");
  EXPECT_EQ(u32(8), 2u);
  EXPECT_EQ(u32(12), kHeaderBytes);
  EXPECT_EQ(u32(16), 64u);
  EXPECT_EQ(u32(20), 48u);
  EXPECT_EQ(static_cast<int32_t>(u32(24)), 96);
  EXPECT_EQ(u32(28), 4096u);
  EXPECT_EQ(u32(32) | uint64_t{u32(36)} << 32, kHeader.start_realtime_ns);
  EXPECT_EQ(u32(40) | uint64_t{u32(44)} << 32, kHeader.start_monotonic_ns);
  EXPECT_EQ(file[48] | file[49] << 8, 7);
  EXPECT_EQ(std::string(file.begin() + 50, file.begin() + 57), "6.18.44");
  EXPECT_EQ(file[57] | file[58] << 8, 18);

  const Decoded d = decode(file, file.size());
  EXPECT_FALSE(d.error) << d.error->message;
  EXPECT_EQ(d.header, kHeader);
  EXPECT_TRUE(d.events.empty());
}

TEST(RecordFormat, FirstBlockFollowsTheHeaderWithItsCountLengthAndRecords) {
  const std::vector<rss_event> events = random_events(2, 2);
  const Bytes file = encode(events, 3);
  ASSERT_EQ(file.size(), kHeaderBytes + 16 + 96);
  const uint8_t* block = &file[kHeaderBytes];
  EXPECT_EQ(std::string(block, block + 4), "RBLK");
  EXPECT_EQ(block[4], 2);
  EXPECT_EQ(block[8], 96);
  EXPECT_EQ(std::memcmp(block + 16, events.data(), 96), 0);
}

// A 3-block file, cut after each of its bytes: the reader decodes exactly the
// blocks that are whole; a cut inside the header or a block is reported at
// that unit's first byte; a cut between units is a clean end.
TEST(RecordFormat, ACutAtAnyByteKeepsTheWholeBlocksAndNamesTheCutOne) {
  const std::vector<rss_event> events = random_events(8, 3);
  const Bytes file = encode(events, 3);  // blocks of 3, 3 and 2
  const std::vector<Unit> all = units(kHeaderBytes, events.size(), 3);
  ASSERT_EQ(all.size(), 4u);
  ASSERT_EQ(file.size(), all.back().end);

  for (size_t cut = 0; cut <= file.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const auto prefix = std::span(file).first(cut);
    // The unit the cut falls in, or the one it ends cleanly.
    const Unit& u = cut == 0 ? all[0] : unit_at(all, cut - 1);
    for (size_t chunk : {cut + 1, size_t{1}}) {
      const Decoded d = decode(prefix, chunk);
      EXPECT_EQ(d.header.has_value(), cut >= kHeaderBytes);
      if (cut == u.end) {
        EXPECT_FALSE(d.error) << d.error->message;
        EXPECT_TRUE(
            same_events(d.events, std::span(events).first(u.events_through)));
        continue;
      }
      ASSERT_TRUE(d.error);
      EXPECT_EQ(d.error->offset, u.begin);
      const std::string what =
          u.begin == 0 ? "truncated file header" : "truncated block";
      EXPECT_EQ(d.error->message.rfind(
                    what + " at byte " + std::to_string(u.begin) + ": ", 0),
                0u)
          << d.error->message;
      const size_t whole =
          u.begin == 0 ? 0 : unit_at(all, u.begin - 1).events_through;
      EXPECT_TRUE(same_events(d.events, std::span(events).first(whole)));
    }
  }
}

// CRC-32 catches every single-bit error, and the framing fields are checked
// against each other, so no flipped bit anywhere goes unnoticed.
TEST(RecordFormat, EveryFlippedBitIsCaughtAtTheStartOfItsUnit) {
  const std::vector<rss_event> events = random_events(8, 4);
  const Bytes file = encode(events, 3);
  const std::vector<Unit> all = units(kHeaderBytes, events.size(), 3);

  for (size_t bit = 0; bit < 8 * file.size(); ++bit) {
    SCOPED_TRACE("bit " + std::to_string(bit));
    Bytes bad = file;
    bad[bit / 8] ^= 1 << bit % 8;
    const Unit& u = unit_at(all, bit / 8);
    const Decoded d = decode(bad, bad.size());
    ASSERT_TRUE(d.error);
    EXPECT_EQ(d.error->offset, u.begin) << d.error->message;
    const size_t whole =
        u.begin == 0 ? 0 : unit_at(all, u.begin - 1).events_through;
    EXPECT_TRUE(same_events(d.events, std::span(events).first(whole)));
  }
}

TEST(RecordFormat, AFlippedPayloadBitNamesItsBlockAndStopsThere) {
  const std::vector<rss_event> events = random_events(8, 5);
  Bytes file = encode(events, 3);
  const size_t third = kHeaderBytes + 2 * (16 + 3 * 48);
  file[third + 16 + 50] ^= 0x10;

  Decoded d;
  RecordReader reader([](const RecordHeader&) {},
                      [&](const rss_event& e) { d.events.push_back(e); });
  auto fed = reader.feed(file);
  ASSERT_FALSE(fed.has_value());
  d.error = fed.error();
  EXPECT_EQ(d.error->offset, third);
  EXPECT_EQ(d.error->message, "corrupt block at byte " + std::to_string(third) +
                                  ": payload CRC mismatch");
  EXPECT_TRUE(same_events(d.events, std::span(events).first(6)));

  // The reader stays stopped: more input and the end both repeat the error.
  EXPECT_EQ(reader.feed(file).error().message, d.error->message);
  EXPECT_EQ(reader.finish().error().message, d.error->message);
  EXPECT_EQ(d.events.size(), 6u);
}

TEST(RecordFormat, ZerosAfterTheLastBlockAreReportedWhereTheyStart) {
  const std::vector<rss_event> events = random_events(5, 6);
  Bytes file = encode(events, 3);
  const size_t end = file.size();
  file.resize(end + 4096);  // what a crash can leave at the end of a file
  const Decoded d = decode(file, 1000);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->message, "corrupt block at byte " + std::to_string(end) +
                                  ": bad block magic");
  EXPECT_TRUE(same_events(d.events, events));
}

TEST(RecordFormat, SomethingElseIsNotARecording) {
  const std::string text = "PK\x03\x04 surely a zip file";
  const Decoded d = decode(
      std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()), 2);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->offset, 0u);
  EXPECT_EQ(d.error->message,
            "not an rssaudit recording at byte 0: bad magic (expected "
            "\"RSSAUDIT\")");
  EXPECT_FALSE(d.header);
}

TEST(RecordFormat, ANewerFormatSaysSoBeforeCheckingAnythingElse) {
  Bytes file = encode(random_events(4, 7), 3);
  file[8] = 3;  // the CRC no longer matches either: the version comes first
  const Decoded d = decode(file, file.size());
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->message,
            "unsupported recording at byte 0: written by a newer rssaudit "
            "(format 3; this build reads format 2)");
  EXPECT_FALSE(d.header);
  EXPECT_TRUE(d.events.empty());
}

// Sets the u32 at `at` in the header of `file` and redoes the header's CRC:
// a file a hostile writer made, not a damaged one.
void forge(Bytes& file, size_t at, uint32_t value) {
  for (size_t i = 0; i < 4; ++i) file[at + i] = (value >> (8 * i)) & 0xff;
  const uint32_t sum = static_cast<uint32_t>(
      crc32(0, file.data(), static_cast<uInt>(kHeaderBytes - 4)));
  for (size_t i = 0; i < 4; ++i)
    file[kHeaderBytes - 4 + i] = (sum >> (8 * i)) & 0xff;
}

TEST(RecordFormat, AHeaderNoKernelCouldWriteIsRefusedBeforeAnyState) {
  const Bytes file = encode(random_events(2, 10), 3);
  const struct {
    size_t at;
    uint32_t value;
    const char* why;
  } forged[] = {
      {16, 0xffffffff, "nr_cpu_ids 4294967295 outside 1..8192"},
      {16, 0, "nr_cpu_ids 0 outside 1..8192"},
      {20, 65, "65 online CPUs of 64 possible"},
      {24, 0x80000000, "percpu batch -2147483648 outside 1..1048576"},
      {28, 4097, "page size 4097 is not a power of two in 4096..262144"},
      {28, 1u << 30, "page size 1073741824 is not a power of two in"},
  };
  for (const auto& f : forged) {
    Bytes bad = file;
    forge(bad, f.at, f.value);
    const Decoded d = decode(bad, bad.size());
    ASSERT_TRUE(d.error) << f.why;
    EXPECT_EQ(d.error->offset, 0u);
    EXPECT_NE(d.error->message.find(std::string("corrupt file header at byte "
                                                "0: ") +
                                    f.why),
              std::string::npos)
        << d.error->message;
    EXPECT_FALSE(d.header);
    EXPECT_TRUE(d.events.empty());
  }
  RecordHeader huge = kHeader;
  huge.nr_cpu_ids = 100'000;
  EXPECT_THROW(RecordWriter{huge}, std::invalid_argument);
}

TEST(RecordFormat, AnEmptyFileIsATruncatedHeader) {
  const Decoded d = decode({}, 1);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->message,
            "truncated file header at byte 0: the file ends after 0 bytes");
}

TEST(RecordFormat, WriterRejectsWhatTheFormatCannotHold) {
  RecordHeader long_name = kHeader;
  long_name.host_name.assign(kMaxTextBytes + 1, 'h');
  EXPECT_THROW(RecordWriter{long_name}, std::invalid_argument);
  EXPECT_THROW(RecordWriter(kHeader, 0), std::invalid_argument);
  EXPECT_THROW(RecordWriter(kHeader, kMaxBlockRecords + 1),
               std::invalid_argument);

  long_name.host_name.resize(kMaxTextBytes);
  long_name.kernel_release.assign(kMaxTextBytes, 'k');
  const std::vector<rss_event> one = random_events(1, 8);
  RecordWriter writer(long_name, kMaxBlockRecords);
  const auto header = writer.take();
  Bytes file(header.begin(), header.end());
  writer.append(one[0]);
  writer.flush();
  const auto block = writer.take();
  file.insert(file.end(), block.begin(), block.end());
  const Decoded d = decode(file, file.size());
  EXPECT_FALSE(d.error) << d.error->message;
  EXPECT_EQ(d.header, long_name);
  EXPECT_TRUE(same_events(d.events, one));
}

// Names, one after every second event: each name block follows the event
// block it was added during (or the flush).
struct Named {
  Bytes file;
  std::vector<rss_event> events;
  std::vector<RecordedName> names;
};

Named encode_named(size_t n, uint32_t block_records) {
  Named out{{}, random_events(n, 9), {}};
  RecordWriter writer(kHeader, block_records);
  const auto take = [&] {
    const std::span<const uint8_t> bytes = writer.take();
    out.file.insert(out.file.end(), bytes.begin(), bytes.end());
  };
  for (size_t i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      out.names.push_back({.mm = 0xffff888000000000 + i,
                           .tgid = uint32_t(1000 + i),
                           .comm = i % 4 ? "kworker/0:1H" : "\n\xff odd"});
      EXPECT_FALSE(writer.append_name(out.names.back()));
    }
    if (writer.append(out.events[i])) take();
  }
  writer.flush();
  take();
  return out;
}

TEST(RecordFormat, NamesRoundTripBetweenTheBlocks) {
  const Named named = encode_named(7, 3);
  // Header, then (events, names) for blocks of 3, 3 and 1 event: 2, 1 and
  // 1 names.
  EXPECT_EQ(named.file.size(),
            kHeaderBytes + 3 * 16 + 48 * 7 + 3 * 16 + 32 * named.names.size());
  const size_t names_at = kHeaderBytes + 16 + 3 * 48;
  EXPECT_EQ(std::string(&named.file[names_at], &named.file[names_at + 4]),
            "RNAM");
  EXPECT_EQ(named.file[names_at + 4], 2);
  for (size_t chunk : {named.file.size(), size_t{1}, size_t{5}}) {
    const Decoded d = decode(named.file, chunk);
    EXPECT_FALSE(d.error) << d.error->message;
    EXPECT_TRUE(same_events(d.events, named.events));
    EXPECT_EQ(d.names, named.names) << "chunk " << chunk;
  }
}

TEST(RecordFormat, ANameIsCutWhereTheKernelCutsIt) {
  RecordWriter writer(kHeader, 3);
  writer.append_name({.mm = 1, .tgid = 2, .comm = "a-name-longer-than-15"});
  writer.flush();
  const auto bytes = writer.take();
  const Decoded d = decode(Bytes(bytes.begin(), bytes.end()), 64);
  EXPECT_FALSE(d.error) << d.error->message;
  ASSERT_EQ(d.names.size(), 1u);
  EXPECT_EQ(d.names[0].comm, "a-name-longer-t");
}

TEST(RecordFormat, ADamagedOrCutNameBlockIsNamedAndWhatPrecedesItKept) {
  const Named named = encode_named(7, 3);
  const size_t names_at = kHeaderBytes + 16 + 3 * 48;
  const size_t names_end = names_at + 16 + 2 * 32;
  for (size_t byte = names_at; byte < names_end; ++byte) {
    SCOPED_TRACE("byte " + std::to_string(byte));
    Bytes bad = named.file;
    bad[byte] ^= 0x04;
    const Decoded d = decode(bad, bad.size());
    ASSERT_TRUE(d.error);
    EXPECT_EQ(d.error->offset, names_at) << d.error->message;
    EXPECT_TRUE(same_events(d.events, std::span(named.events).first(3)));
    EXPECT_TRUE(d.names.empty());

    if (byte == names_at) continue;  // a cut there is a clean end
    const Decoded cut = decode(std::span(named.file).first(byte), 3);
    ASSERT_TRUE(cut.error);
    if (byte - names_at >= 4) {  // "RN" alone might have begun an "RBLK"
      EXPECT_EQ(
          cut.error->message.rfind(
              "truncated name block at byte " + std::to_string(names_at), 0),
          0u)
          << cut.error->message;
    }
    EXPECT_EQ(cut.events.size(), 3u);
  }
}

TEST(RecordFormat, AFormat1FileReadsAndCannotHoldNames) {
  Named named = encode_named(4, 3);
  // The same header as format 1 wrote it (the CRC redone for the version).
  forge(named.file, 8, 1);
  const Decoded d = decode(named.file, named.file.size());
  ASSERT_TRUE(d.error);
  const size_t names_at = kHeaderBytes + 16 + 3 * 48;
  EXPECT_EQ(d.error->message, "corrupt block at byte " +
                                  std::to_string(names_at) +
                                  ": bad block magic");
  EXPECT_TRUE(same_events(d.events, std::span(named.events).first(3)));
}

}  // namespace
}  // namespace rssaudit
