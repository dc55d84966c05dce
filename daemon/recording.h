// Record files on disk: writing the raw capture stream (`rssaudit record`)
// and auditing a recording offline (`rssaudit replay`). The byte format is
// core/record_format.h; this file owns the I/O.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "core/record_format.h"
#include "daemon/audit_pipeline.h"

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
  RecordHeader header;
  Topology topology;
  uint64_t events = 0;
  ReconstructorStats stats;
  std::optional<RecordError> error;  // where the file stopped being valid
};

// Feeds every valid event of the file at `path` through a reconstructor into
// `pipeline` (built by the caller from `make_topology(header)` once the
// header is read). Throws naming the path if the file cannot be opened.
ReplayOutcome replay_file(const std::string& path,
                          std::optional<AuditPipeline>& pipeline);

// The model topology a recording was made on.
Topology topology_of(const RecordHeader& h);

}  // namespace rssaudit
