// Record files on disk: writing the raw capture stream (`rssaudit record`)
// and auditing a recording offline (`rssaudit replay`). The byte format is
// core/formats/record_format.h; this file owns the I/O.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "audit/delta_reconstructor.h"
#include "audit/recorded_names.h"
#include "core/formats/record_format.h"
#include "core/schemes/topology.h"

namespace rssaudit {

// This host's header for a recording made with `possible_cpus` slots.
RecordHeader host_record_header(uint32_t possible_cpus);

class RecordingFile {
 public:
  // Throws std::runtime_error naming the path if it cannot be created.
  RecordingFile(const std::string& path, const RecordHeader& header);
  ~RecordingFile();
  void append(const rss_event& e) {
    ++events_;
    if (writer_.append(e)) write_ready();
  }
  void append_name(const RecordedName& name) {
    if (writer_.append_name(name)) write_ready();
  }
  // Seals the last block and writes it; throws naming the path on error.
  void close();
  uint64_t events() const { return events_; }

 private:
  void write_ready();

  std::string path_;
  FILE* file_;
  RecordWriter writer_;
  uint64_t events_ = 0;
};

struct ReplayOutcome {
  std::optional<RecordHeader> header;  // empty: the file has none
  uint64_t events = 0;
  ReconstructorStats stats;
  RecordedNames names;               // none in a format-1 file
  std::optional<RecordError> error;  // where the file stopped being valid
};

// The one replay of a recording (`rssaudit replay`, `whatif --recording`):
// feeds every valid record of the file at `path` through a reconstructor
// into the sink that `sink_for(header)` returns once the header is read
// (the sink must outlive the call), advancing after each block as the live
// drain does after each poll, and flushes what is held at the end. Throws
// naming the path if the file cannot be opened.
ReplayOutcome replay_file(
    const std::string& path,
    const std::function<ReconstructorSink&(const RecordHeader&)>& sink_for);

}  // namespace rssaudit
