// Files opened at a path a user named: outputs never through a symbolic
// link, neither outputs nor inputs a FIFO or device, and no open blocks.
#include "os/path_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rssaudit {
namespace {

namespace fs = std::filesystem;

class PathFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = fs::temp_directory_path() / "rssaudit-paths-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const char* name) const { return dir_ / name; }
  static std::string text_of(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  fs::path dir_;
};

TEST_F(PathFiles, AnOutputIsCreatedOrEmptiedAndWritten) {
  const std::string out = file("out.txt");
  { std::ofstream(out) << "an older, longer report"; }
  Result<UniqueFd, Error> fd = open_output_file(out);
  ASSERT_TRUE(fd.has_value()) << fd.error().message;
  ASSERT_EQ(write(fd->get(), "new", 3), 3);
  EXPECT_EQ(text_of(out), "new");
  Result<UniqueFd, Error> fresh = open_output_file(file("fresh.txt"), 0600);
  ASSERT_TRUE(fresh.has_value()) << fresh.error().message;
  struct stat st {};
  ASSERT_EQ(stat(file("fresh.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u) << std::oct << st.st_mode;
}

// A link, dangling or not, is refused, naming the path; neither its target
// is created nor an existing one touched.
TEST_F(PathFiles, AnOutputIsNeverWrittenThroughASymbolicLink) {
  const std::string target = file("target"), kept = file("kept");
  { std::ofstream(kept) << "keep me"; }
  fs::create_symlink(target, file("dangling"));
  fs::create_symlink(kept, file("to-kept"));
  for (const char* link : {"dangling", "to-kept"}) {
    Result<UniqueFd, Error> fd = open_output_file(file(link));
    ASSERT_FALSE(fd.has_value()) << link;
    EXPECT_NE(fd.error().message.find(file(link) + ": cannot write: a "
                                                   "symbolic link"),
              std::string::npos)
        << fd.error().message;
  }
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(text_of(kept), "keep me");
}

// A FIFO without a reader, with one, a device, a directory: refused at
// once, each named for what it is.
TEST_F(PathFiles, AFifoADeviceOrADirectoryIsRefusedWithoutBlocking) {
  const std::string fifo = file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result<UniqueFd, Error> no_reader = open_output_file(fifo);
  ASSERT_FALSE(no_reader.has_value());
  EXPECT_NE(no_reader.error().message.find("a FIFO"), std::string::npos)
      << no_reader.error().message;
  Result<UniqueFd, Error> in = open_input_file(fifo);
  ASSERT_FALSE(in.has_value());
  EXPECT_EQ(in.error().message,
            fifo + ": cannot read: a FIFO, not a regular file");
  // With a reader holding it open, the writer's open succeeds: fstat
  // refuses it.
  const UniqueFd reader(::open(fifo.c_str(), O_RDONLY | O_NONBLOCK));
  ASSERT_TRUE(reader);
  Result<UniqueFd, Error> with_reader = open_output_file(fifo);
  ASSERT_FALSE(with_reader.has_value());
  EXPECT_EQ(with_reader.error().message,
            fifo + ": cannot write: a FIFO, not a regular file");
  Result<UniqueFd, Error> device = open_output_file("/dev/null");
  ASSERT_FALSE(device.has_value());
  EXPECT_EQ(device.error().message,
            "/dev/null: cannot write: a device, not a regular file");
  Result<UniqueFd, Error> directory = open_input_file(dir_);
  ASSERT_FALSE(directory.has_value());
  EXPECT_NE(directory.error().message.find("a directory"), std::string::npos);
}

// An input may be reached through a link (a reader creates nothing).
TEST_F(PathFiles, AnInputIsReadThroughALinkAndAMissingOneIsNamed) {
  { std::ofstream(file("data")) << "x"; }
  fs::create_symlink(file("data"), file("link"));
  EXPECT_TRUE(open_input_file(file("link")).has_value());
  Result<UniqueFd, Error> missing = open_input_file(file("missing"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message,
            file("missing") + ": cannot read: No such file or directory");
}

}  // namespace
}  // namespace rssaudit
