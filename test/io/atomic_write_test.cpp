// Publishing: a failed write (here a full disk, as a file-size limit) leaves the earlier file
// as it was and no temporary; a good write replaces it; outputs must be regular files.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "core/files.hpp"
#include "io/h5.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Writes past `max_bytes` fail with EFBIG ("File too large") while in scope.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t max_bytes) {
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &previous_);
    const rlimit limit{max_bytes, previous_.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &previous_);
    std::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit previous_{};
  void (*previous_handler_)(int) = nullptr;
};

class AtomicWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("perfsweep_atomic_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "out.h5").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An HDF5 file holding `n` doubles.
  void write_h5(std::size_t n) {
    write_atomically(path_, [&](const std::string& tmp) {
      h5::Handle file = h5::create_file(tmp);
      h5::dataset(file.id(), "values", std::vector<double>(n, 1.0)).close("values");
      h5::write_file(file, tmp);
    });
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(AtomicWriteTest, FullDiskLeavesTheEarlierFile) {
  write_h5(10);
  const std::string earlier = bytes_of(path_);
  try {
    FileSizeLimit limit(64 * 1024);
    write_h5(100000);  // 800 kB
    FAIL() << "a write past the file-size limit succeeded";
  } catch (const IoError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("File too large"), std::string::npos) << m;
    EXPECT_NE(m.find(path_), std::string::npos) << m;
  }
  EXPECT_EQ(bytes_of(path_), earlier);
  EXPECT_FALSE(fs::exists(path_ + ".partial"));
  write_h5(1000);  // once the fault is cleared
  h5::Handle file = h5::open_file(path_);
  EXPECT_EQ(h5::read_doubles(file.id(), "values").size(), 1000u);
}

// An output needs the disk of its own bytes, not the in-memory driver's allocation unit: an 8 kB
// file is written under a 64 KiB file-size limit, and at its exact size.
TEST_F(AtomicWriteTest, SmallOutputsNeedOnlyTheirBytes) {
  {
    FileSizeLimit limit(64 * 1024);
    write_h5(1000);
  }
  const auto size = fs::file_size(path_);
  EXPECT_GT(size, 8000u);
  EXPECT_LT(size, 64u * 1024);
  h5::Handle file = h5::open_file(path_);
  EXPECT_EQ(h5::read_doubles(file.id(), "values").size(), 1000u);
}

TEST_F(AtomicWriteTest, FailedFillLeavesNoTemporary) {
  write_text_atomically(path_, "earlier");
  EXPECT_THROW(write_atomically(path_,
                                [](const std::string& tmp) {
                                  write_new_file(tmp, "half");
                                  throw IoError("interrupted");
                                }),
               IoError);
  EXPECT_EQ(bytes_of(path_), "earlier");
  EXPECT_FALSE(fs::exists(path_ + ".partial"));
}

TEST_F(AtomicWriteTest, StaleTemporaryIsReplaced) {
  { std::ofstream(path_ + ".partial") << "left by a killed run"; }
  write_text_atomically(path_, "new");
  EXPECT_EQ(bytes_of(path_), "new");
  EXPECT_FALSE(fs::exists(path_ + ".partial"));
}

TEST_F(AtomicWriteTest, OutputsMustBeRegularFiles) {
  fs::create_directories(path_);
  EXPECT_THROW(write_text_atomically(path_, "x"), InputError);
  fs::remove(path_);
  const fs::path victim = dir_ / "victim";
  { std::ofstream(victim) << "keep"; }
  fs::create_symlink(victim, path_ + ".partial");
  EXPECT_THROW(write_text_atomically(path_, "x"), InputError);
  EXPECT_EQ(bytes_of(victim), "keep");
  EXPECT_FALSE(fs::exists(path_));
}

}  // namespace
}  // namespace perfsweep
