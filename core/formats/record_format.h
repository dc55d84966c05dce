// The file format of `rssaudit record` / `rssaudit replay`, format 2.
//
// A recording is the raw event stream of the BPF programs, framed in blocks
// so that a file cut short by a crash or a full disk still replays up to its
// last complete block, and a flipped bit is caught instead of replayed.
// All integers are little-endian; offsets and sizes are in bytes.
//
// File header (H bytes):
//    0   8  magic "RSSAUDIT"
//    8   4  u32 format version, 2 (readers refuse greater versions; format
//           1 is format 2 without name blocks)
//   12   4  u32 H, the header length including the CRC below
//   16   4  u32 nr_cpu_ids of the recording host
//   20   4  u32 online CPUs
//   24   4  s32 percpu counter batch
//   28   4  u32 page size
//   32   8  u64 start time, ns since the epoch (CLOCK_REALTIME)
//   40   8  u64 the same instant on CLOCK_MONOTONIC, the clock of
//           rss_event.start_ns: wall time = start_ns - this + start time
//   48   2  u16 K, length of the kernel release
//   50   K  kernel release (`uname -r`), no NUL
// 50+K   2  u16 N, length of the host name
// 52+K   N  host name, no NUL
// 52+K+N 4  u32 CRC-32 (zlib) of bytes [0, H - 4)
//           so H = 56 + K + N; K and N are at most kMaxTextBytes.
//
// Then zero or more blocks, each:
//    0   4  magic "RBLK"
//    4   4  u32 C, record count, 0..kMaxBlockRecords
//    8   4  u32 payload length, C * 48
//   12   4  u32 CRC-32 (zlib) of the payload
//   16  48C C records of struct rss_event (bpf/rss_event.h) in the order the
//           capture delivered them: mm u64 @0, aux s64 @8, start_ns u64 @16,
//           tid u32 @24, tgid u32 @28, slot s32 @32, span_ns u32 @36,
//           cpu u16 @40, faults u16 @42, kind u8 @44, member u8 @45,
//           flags u8 @46, preempt u8 @47. Flag bits added later keep
//           the format's number when a file without them means the same thing:
//           old files hold RSS_EVF_AFTER_LOSS = 0, and their recorders had
//           no way to mark a loss in the stream; preempt 0 (unknown) where
//           it was padding. Likewise span_ns: newer
//           recorders leave it 0 on an update whose slot is non-zero,
//           and start_ns 0 (untimed) on such an update whose `count` is
//           the one its CPU's previous record of the mm showed.
//
// Format 2 adds name blocks, anywhere after the header, each:
//    0   4  magic "RNAM"
//    4   4  u32 C, name count, 1..kMaxBlockRecords
//    8   4  u32 payload length, C * 32
//   12   4  u32 CRC-32 (zlib) of the payload
//   16  32C C names: mm u64 @0 (the mm's kernel address), tgid u32 @8, u32 0
//           @12, comm @16 (16 bytes, NUL-padded; 15 at most are the name).
//           Each names one mm the recorder saw: the process `tgid` that first
//           updated it as its owner (or exec'd into it) was called `comm`.
//           An address reused by a later mm is named again, in file order.
//
// There is no trailer: a file that ends exactly after its header or after a
// block is complete. A file cut inside the header or a block is reported as
// truncated, and everything before that block has been replayed.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/rss_event.h"
#include "core/result.h"

namespace rssaudit {

// The payload is rss_event as the host laid it out; only little-endian hosts
// produce (and can read) the little-endian layout the format promises.
static_assert(std::endian::native == std::endian::little,
              "the record format stores rss_event in host order");

inline constexpr uint32_t kRecordFormatVersion = 2;
inline constexpr size_t kMaxTextBytes = 256;  // uname fields are <= 64
inline constexpr uint32_t kMaxBlockRecords = 1 << 16;
inline constexpr uint32_t kDefaultBlockRecords = 4096;  // 192 KiB blocks
// What a header may claim, so that a hostile file cannot make replay size
// its state by billions of CPUs: the kernel's largest NR_CPUS (x86 MAXSMP),
// a batch of max(32, 2 * CPUs) with room to spare, and the page sizes of
// the architectures Linux supports.
inline constexpr uint32_t kMaxRecordedCpus = 8192;
inline constexpr int32_t kMaxRecordedBatch = 1 << 20;
inline constexpr uint32_t kMinPageSize = 4096;
inline constexpr uint32_t kMaxPageSize = 1 << 18;

// The facts about the recording host that replay needs to rebuild the
// counting schemes and to place events in wall time.
struct RecordHeader {
  uint32_t nr_cpu_ids = 0;
  uint32_t online_cpus = 0;
  int32_t percpu_batch = 0;
  uint32_t page_size = 0;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  std::string kernel_release;
  std::string host_name;

  bool operator==(const RecordHeader&) const = default;
};

// Who an mm belonged to, as a name block holds it (format 2).
struct RecordedName {
  uint64_t mm = 0;
  uint32_t tgid = 0;
  std::string comm;  // raw bytes, at most kRecordedCommBytes

  bool operator==(const RecordedName&) const = default;
};
inline constexpr size_t kRecordedCommBytes = 15;  // TASK_COMM_LEN - 1

// Turns events into the bytes of a recording. Does no I/O: the caller writes
// what take() returns. Buffers are reused, so appending does not allocate
// once the first blocks have been written.
class RecordWriter {
 public:
  // Throws std::invalid_argument if a header string is longer than
  // kMaxTextBytes, a figure is outside the bounds above, or block_records
  // is not in [1, kMaxBlockRecords].
  explicit RecordWriter(const RecordHeader& header,
                        uint32_t block_records = kDefaultBlockRecords);

  // Adds an event to the open block and seals the block once it holds
  // block_records events. Returns true when a block was sealed: call take().
  bool append(const rss_event& event);

  // Adds a name; names are sealed into a name block with the next event
  // block, or when kMaxBlockRecords wait (then true: call take()). A comm
  // longer than kRecordedCommBytes is cut there, as the kernel cuts it.
  bool append_name(const RecordedName& name);

  // Seals the open blocks, if they hold anything, so that take() returns them.
  // Call before closing the file; calling it more often bounds what a crash
  // can lose, at the cost of smaller blocks.
  void flush();

  // The finished bytes not taken yet: the file header on the first call, then
  // every sealed block, in file order. Valid until the next call to a
  // non-const method.
  std::span<const uint8_t> take();

 private:
  void seal();
  void seal_names();

  uint32_t block_records_;
  uint32_t name_count_ = 0;
  std::vector<uint8_t> names_;  // the open name block, its header blank
  uint32_t block_count_ = 0;
  std::vector<uint8_t> block_;  // the open block, its header left blank
  std::vector<uint8_t> ready_;  // sealed bytes not yet taken
  std::vector<uint8_t> taken_;  // what the last take() returned
};

struct RecordError {
  // Where the bad (or cut) file header or block starts in the file.
  uint64_t offset = 0;
  // "corrupt block at byte 123456: payload CRC mismatch"
  std::string message;
};

// Decodes a recording from bytes fed in pieces of any size. Events are
// delivered a whole block at a time, only once the block's CRC matches, so
// nothing from a damaged block is ever replayed and nothing before it is lost.
class RecordReader {
 public:
  // `on_name`, if given, receives the names in file order (format 2).
  RecordReader(std::function<void(const RecordHeader&)> on_header,
               std::function<void(const rss_event&)> on_event,
               std::function<void(const RecordedName&)> on_name = {});

  // Decodes every complete header and block in the bytes fed so far. Returns
  // the first error; from then on the reader ignores input and returns it.
  Result<void, RecordError> feed(std::span<const uint8_t> bytes);

  // The input ended: an error if it ended inside the header or a block.
  Result<void, RecordError> finish();

 private:
  // The first error, if any.
  Result<void, RecordError> outcome() const;
  // Each decodes one unit at the front of `bytes` and returns its length,
  // or returns 0 when it needs more bytes or has set error_.
  size_t parse_header(std::span<const uint8_t> bytes);
  size_t parse_block(std::span<const uint8_t> bytes);
  size_t parse_names(std::span<const uint8_t> bytes);
  // What a kind of block holds: units of `unit_bytes`, at least min_count.
  struct Framing {
    std::string_view what;  // "corrupt block"
    std::string_view unit;  // "record"
    size_t unit_bytes;
    uint64_t min_count;
  };
  // The checked payload of the block at the front of `bytes`; empty when
  // more bytes are needed or an error was set.
  std::optional<std::span<const uint8_t>> payload_of(
      std::span<const uint8_t> bytes, const Framing& framing);
  size_t fail(std::string_view what, std::string_view why);

  std::function<void(const RecordHeader&)> on_header_;
  std::function<void(const rss_event&)> on_event_;
  std::function<void(const RecordedName&)> on_name_;
  uint32_t version_ = 0;  // of the file, once its header is read
  bool have_header_ = false;
  uint64_t offset_ = 0;           // file offset of pending_[0]
  std::vector<uint8_t> pending_;  // the start of a unit not yet complete
  std::optional<RecordError> error_;
};

}  // namespace rssaudit
