// Publishing: a failed write (here a full disk, as a file-size limit) leaves the earlier file
// as it was and no temporary; a good write replaces it; outputs must be regular files.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

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

  // The temporaries of out.h5 in the folder, whoever's.
  std::vector<std::string> temporaries() const {
    std::vector<std::string> out;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().starts_with("out.h5.partial")) out.push_back(e.path().filename().string());
    }
    return out;
  }

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
  EXPECT_TRUE(temporaries().empty());
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
  EXPECT_TRUE(temporaries().empty());
}

// The writer that holds the output's lock (sweep) has the one temporary `<path>.partial`; a
// stale one, left by a killed run, is replaced.
TEST_F(AtomicWriteTest, StaleTemporaryIsReplaced) {
  { std::ofstream(path_ + ".partial") << "left by a killed run"; }
  write_atomically(path_, [](const std::string& tmp) { write_new_file(tmp, "new"); }, Temporary::kLockHeld);
  EXPECT_EQ(bytes_of(path_), "new");
  EXPECT_TRUE(temporaries().empty());
}

// Writers without a lock (report, configs -o) each have their own temporary: another's
// half-written file is neither removed nor renamed, and both publish a whole file. Here a second
// process writes the same output while the first is between writing its temporary and publishing
// it (with one temporary name, the second removed the first's, whose rename then failed).
TEST_F(AtomicWriteTest, ConcurrentWritersKeepTheirOwnTemporaries) {
  { std::ofstream(path_ + ".partial") << "a sweep's, half-written"; }
  write_atomically(path_, [&](const std::string& tmp) {
    write_new_file(tmp, "first");
    const pid_t child = ::fork();
    if (child == 0) {
      try {
        write_text_atomically(path_, "second");
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the second writer failed";
    EXPECT_EQ(bytes_of(path_), "second");
    EXPECT_EQ(bytes_of(tmp), "first") << "the second writer touched the first's temporary";
  });
  EXPECT_EQ(bytes_of(path_), "first");
  EXPECT_EQ(bytes_of(path_ + ".partial"), "a sweep's, half-written");
  EXPECT_EQ(temporaries(), std::vector<std::string>{"out.h5.partial"});
}

TEST_F(AtomicWriteTest, OutputsMustBeRegularFiles) {
  fs::create_directories(path_);
  EXPECT_THROW(write_text_atomically(path_, "x"), InputError);
  fs::remove(path_);
  const fs::path victim = dir_ / "victim";
  { std::ofstream(victim) << "keep"; }
  fs::create_symlink(victim, partial_path_for(path_, Temporary::kUnique));
  EXPECT_THROW(write_text_atomically(path_, "x"), InputError);
  EXPECT_EQ(bytes_of(victim), "keep");
  EXPECT_FALSE(fs::exists(path_));
}

}  // namespace
}  // namespace perfsweep
