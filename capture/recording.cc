#include "capture/recording.h"

#include <fmt/core.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "os/clock.h"
#include "os/path_files.h"

namespace rssaudit {
namespace {

std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error(
      fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

// A FILE over a checked descriptor (os/path_files.h): the error names the
// path and what it is.
FILE* checked_stream(Result<UniqueFd, Error> fd, const char* mode) {
  if (!fd) throw std::runtime_error(fd.error().message);
  FILE* f = fdopen(fd->get(), mode);
  if (!f) throw std::runtime_error(std::strerror(errno));
  fd->release();
  return f;
}

}  // namespace

RecordHeader host_record_header(uint32_t possible_cpus) {
  RecordHeader h;
  utsname u{};
  uname(&u);
  h.kernel_release = u.release;
  h.host_name = u.nodename;
  h.nr_cpu_ids = possible_cpus;
  h.online_cpus = std::thread::hardware_concurrency();
  h.percpu_batch = upstream_rss_batch(h.online_cpus);
  h.page_size = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  h.start_realtime_ns = uint64_t(realtime_ns());
  h.start_monotonic_ns = monotonic_ns();
  return h;
}

RecordingFile::RecordingFile(const std::string& path,
                             const RecordHeader& header)
    : path_(path),
      file_(checked_stream(open_output_file(path), "wb")),
      writer_(header) {}

RecordingFile::~RecordingFile() {
  if (file_) std::fclose(file_);
}

void RecordingFile::write_ready() {
  const auto bytes = writer_.take();
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    throw io_error("cannot write", path_);
}

void RecordingFile::close() {
  writer_.flush();
  write_ready();
  if (std::fflush(file_) != 0 || std::fclose(file_) != 0) {
    file_ = nullptr;
    throw io_error("cannot write", path_);
  }
  file_ = nullptr;
}

ReplayOutcome replay_file(
    const std::string& path,
    const std::function<ReconstructorSink&(const RecordHeader&)>& sink_for) {
  FILE* f = checked_stream(open_input_file(path), "rb");
  ReplayOutcome out;
  std::optional<DeltaReconstructor> reconstructor;
  ReconstructorSink* sink = nullptr;
  uint64_t latest_start = 0;
  RecordReader reader(
      [&](const RecordHeader& h) {
        out.header = h;
        sink = &sink_for(h);
        reconstructor.emplace(
            ReconstructorOptions{h.nr_cpu_ids, h.percpu_batch});
      },
      [&](const rss_event& e) {
        ++out.events;
        reconstructor->on_event(e, *sink);
        latest_start = std::max<uint64_t>(latest_start, e.start_ns);
      },
      [&](const RecordedName& name) { out.names.add(name); });
  std::vector<uint8_t> buf(1 << 20);
  size_t n;
  while (!out.error && (n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    if (auto fed = reader.feed({buf.data(), n}); !fed)
      out.error = std::move(fed).error();
    // As the live drain does after each poll: what started before the
    // latest record has arrived.
    if (reconstructor) reconstructor->advance(latest_start, *sink);
  }
  std::fclose(f);
  if (!out.error) {
    if (auto end = reader.finish(); !end) out.error = std::move(end).error();
  }
  if (reconstructor) {
    reconstructor->flush(*sink);
    out.stats = reconstructor->stats();
  }
  return out;
}

}  // namespace rssaudit
