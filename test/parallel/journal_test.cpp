// The journal: records survive a reopen, a torn last record and a damaged middle one are dropped
// and counted, records and journals of other inputs are never accepted, an existing journal is
// never truncated unless asked, and one run at a time holds an output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "parallel/journal.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kCounts = 2;  // GPU counts per record
constexpr std::size_t kTop = 3;

TargetResult result(double seed) {
  TargetResult r;
  for (std::size_t i = 0; i < kCounts; ++i) {
    TopN top(kTop);
    for (int k = 0; k < 2; ++k) {
      Candidate c;
      c.throughput = seed + static_cast<double>(i) + 0.25 * k;
      c.mem = 10 * seed;
      c.layout.dp = k + 1;
      top.push(c);
    }
    r.tops.push_back(top);
  }
  r.counters.candidates = static_cast<std::int64_t>(seed);
  return r;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("perfsweep_journal_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "out.h5.journal").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A journal of `n` records (targets 0..n-1) for fingerprint `fp`.
  void write_journal(const std::string& fp, std::size_t n) {
    std::map<std::size_t, TargetResult> done;
    Journal j(path_, fp, JournalMode::kNew, kCounts, kTop, done);
    for (std::size_t t = 0; t < n; ++t) j.append(t, result(static_cast<double>(t + 1)));
  }

  std::map<std::size_t, TargetResult> resume(const std::string& fp, JournalScan* scan = nullptr) {
    std::map<std::size_t, TargetResult> done;
    Journal j(path_, fp, JournalMode::kResume, kCounts, kTop, done);
    if (scan) *scan = j.scan();
    return done;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(JournalTest, RecordsSurviveAReopen) {
  write_journal("run A", 3);
  JournalScan scan;
  const auto done = resume("run A", &scan);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(scan.kept, 3u);
  EXPECT_EQ(scan.dropped_bytes, 0u);
  const TargetResult expected = result(2);
  const TargetResult& got = done.at(1);
  ASSERT_EQ(got.tops.size(), kCounts);
  EXPECT_EQ(got.counters.candidates, 2);
  for (std::size_t i = 0; i < kCounts; ++i) {
    ASSERT_EQ(got.tops[i].items().size(), expected.tops[i].items().size());
    for (std::size_t k = 0; k < got.tops[i].items().size(); ++k) {
      EXPECT_EQ(got.tops[i].items()[k].throughput, expected.tops[i].items()[k].throughput);
      EXPECT_EQ(got.tops[i].items()[k].layout.dp, expected.tops[i].items()[k].layout.dp);
    }
  }
}

TEST_F(JournalTest, TornLastRecordIsDroppedAndOverwritten) {
  write_journal("run A", 3);
  const std::string full = bytes_of(path_);
  write_bytes(path_, full.substr(0, full.size() - 5));  // a kill in the middle of the last write
  {
    std::map<std::size_t, TargetResult> done;
    Journal j(path_, "run A", JournalMode::kResume, kCounts, kTop, done);
    EXPECT_EQ(done.size(), 2u);
    EXPECT_EQ(j.scan().damaged, 0u);
    EXPECT_GT(j.scan().dropped_bytes, 0u);
    j.append(2, result(3));
  }
  JournalScan scan;
  EXPECT_EQ(resume("run A", &scan).size(), 3u);
  EXPECT_EQ(scan.dropped_bytes, 0u);
}

TEST_F(JournalTest, DamagedMiddleRecordIsReportedAndLaterOnesKept) {
  write_journal("run A", 3);
  std::string bytes = bytes_of(path_);
  // A byte inside the second of three records (records start with the magic "PSCR").
  const std::size_t first = bytes.find("PSCR");
  const std::size_t second = bytes.find("PSCR", first + 1);
  ASSERT_NE(second, std::string::npos);
  bytes[second + 40] = static_cast<char>(bytes[second + 40] ^ 0x5a);
  write_bytes(path_, bytes);
  JournalScan scan;
  const auto done = resume("run A", &scan);
  EXPECT_EQ(scan.kept, 2u);
  EXPECT_EQ(scan.damaged, 1u);
  EXPECT_EQ(done.count(0), 1u);
  EXPECT_EQ(done.count(1), 0u);
  EXPECT_EQ(done.count(2), 1u);
  // The journal was rewritten without the damage.
  JournalScan again;
  EXPECT_EQ(resume("run A", &again).size(), 2u);
  EXPECT_EQ(again.damaged, 0u);
  EXPECT_EQ(again.dropped_bytes, 0u);
}

TEST_F(JournalTest, OtherFingerprintIsRefusedAndLeftAlone) {
  write_journal("run A", 2);
  const std::string before = bytes_of(path_);
  std::map<std::size_t, TargetResult> done;
  try {
    Journal j(path_, "run B", JournalMode::kResume, kCounts, kTop, done);
    FAIL() << "a journal of other inputs was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("other inputs"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(done.empty());
  EXPECT_EQ(bytes_of(path_), before);
}

TEST_F(JournalTest, RecordsOfAnotherFingerprintAreNeverAccepted) {
  // Run A's records behind run B's header, as two runs interleaving in one file would leave them.
  write_journal("run A", 2);
  const std::string a = bytes_of(path_);
  fs::remove(path_);
  write_journal("run B", 0);
  const std::string b_header = bytes_of(path_);
  write_bytes(path_, b_header + a.substr(a.find("PSCR")));
  JournalScan scan;
  EXPECT_TRUE(resume("run B", &scan).empty());
  EXPECT_EQ(scan.foreign, 2u);
  EXPECT_EQ(scan.kept, 0u);
}

TEST_F(JournalTest, ExistingJournalWithoutResumeIsRefusedNotTruncated) {
  write_journal("run A", 2);
  const std::string before = bytes_of(path_);
  std::map<std::size_t, TargetResult> done;
  try {
    Journal j(path_, "run A", JournalMode::kNew, kCounts, kTop, done);
    FAIL() << "an existing journal was reused without --resume";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--resume"), std::string::npos) << m;
    EXPECT_NE(m.find("--restart"), std::string::npos) << m;
  }
  EXPECT_EQ(bytes_of(path_), before);
}

TEST_F(JournalTest, RestartDiscards) {
  write_journal("run A", 2);
  {
    std::map<std::size_t, TargetResult> done;
    Journal j(path_, "run B", JournalMode::kRestart, kCounts, kTop, done);
    EXPECT_TRUE(done.empty());
    EXPECT_TRUE(j.scan().existed);
  }
  EXPECT_TRUE(resume("run B").empty());
}

TEST_F(JournalTest, SymlinkAndFifoAreRefused) {
  const fs::path victim = dir_ / "victim";
  write_bytes(victim, "keep");
  fs::create_symlink(victim, path_);
  std::map<std::size_t, TargetResult> done;
  for (JournalMode mode : {JournalMode::kNew, JournalMode::kResume, JournalMode::kRestart}) {
    EXPECT_THROW(Journal(path_, "run A", mode, kCounts, kTop, done), InputError);
  }
  EXPECT_EQ(bytes_of(victim), "keep");
  fs::remove(path_);
  ASSERT_EQ(::mkfifo(path_.c_str(), 0644), 0);
  EXPECT_THROW(Journal(path_, "run A", JournalMode::kResume, kCounts, kTop, done), InputError);
}

TEST_F(JournalTest, OneRunPerOutput) {
  const std::string lock_path = path_ + ".lock";
  RunLock first(lock_path);
  try {
    RunLock second(lock_path);
    FAIL() << "a second lock on the same output was granted";
  } catch (const LockedError& e) {
    EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(::getpid())), std::string::npos) << e.what();
  }
  first.remove();
  EXPECT_FALSE(fs::exists(lock_path));
  RunLock third(lock_path);  // free again
}

}  // namespace
}  // namespace perfsweep
