// The journal: records survive a reopen, a torn last record and a damaged middle one are dropped
// and counted, records and journals of other inputs are never accepted, an existing journal is
// never truncated unless asked, and one run at a time holds an output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "core/hash.hpp"
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

// The journal of one record with the byte at `offset` of its first kept configuration set to
// `value` and the record's checksum recomputed, as a hostile or buggy writer would.
void alter_first_candidate(const std::string& path, const std::string& fp, std::size_t offset,
                           const void* value, std::size_t size) {
  std::string data = bytes_of(path);
  const std::size_t record = 8 + 8 + fp.size() + 8;               // magic, length, fingerprint, hash
  const std::size_t payload = record + 4 + 8 + 8;                 // record magic, fingerprint hash, length
  const std::size_t first = payload + 8 + sizeof(SearchCounters) + 8 + 8;  // id, counters, tops, count
  data.replace(first + offset, size, static_cast<const char*>(value), size);
  std::uint64_t length = 0;
  std::memcpy(&length, data.data() + record + 12, sizeof length);
  const std::uint64_t sum = fnv1a(data.substr(record + 4, 8) +
                                  std::string(data, payload, static_cast<std::size_t>(length)));
  data.replace(payload + static_cast<std::size_t>(length), 8, reinterpret_cast<const char*>(&sum), 8);
  write_bytes(path, data);
}

TEST_F(JournalTest, RecordsWithAnInvalidFieldAreDroppedEvenWithAValidChecksum) {
  const unsigned char strategy = 3, flag = 2;
  const std::int64_t zero_dp = 0;
  const double nan = std::nan(""), negative = -1.0;
  const struct {
    const char* what;
    std::size_t offset;
    const void* value;
    std::size_t size;
  } cases[] = {
      {"strategy 3", offsetof(Candidate, layout.strategy), &strategy, 1},
      {"bool byte 2", offsetof(Candidate, layout.attention.flash), &flag, 1},
      {"dp 0", offsetof(Candidate, layout.dp), &zero_dp, sizeof zero_dp},
      {"NaN throughput", offsetof(Candidate, throughput), &nan, sizeof nan},
      {"negative step time", offsetof(Candidate, totals.t), &negative, sizeof negative},
  };
  for (const auto& c : cases) {
    fs::remove(path_);
    write_journal("run A", 1);
    alter_first_candidate(path_, "run A", c.offset, c.value, c.size);
    JournalScan scan;
    EXPECT_TRUE(resume("run A", &scan).empty()) << c.what;
    EXPECT_EQ(scan.damaged, 1u) << c.what;
  }
  // The same alteration to a value the search could have written is accepted: the checksum
  // was recomputed correctly, so the cases above were refused for their field alone.
  fs::remove(path_);
  write_journal("run A", 1);
  const double other = 123.5;
  alter_first_candidate(path_, "run A", offsetof(Candidate, throughput), &other, sizeof other);
  JournalScan scan;
  const auto done = resume("run A", &scan);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(scan.damaged, 0u);
}

// A journal of the former version (PSWEEPJ2: its records carried the runtime's mechanisms in each
// layout's execution) is refused whole, saying what to run, and left as it is.
TEST_F(JournalTest, AJournalOfTheFormerVersionIsRefused) {
  write_journal("run A", 1);
  std::string data = bytes_of(path_);
  ASSERT_EQ(data.substr(0, 8), "PSWEEPJ3");
  data[7] = '2';
  write_bytes(path_, data);
  std::string message;
  try {
    resume("run A");
  } catch (const InputError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("not a journal of this perfsweep version; remove it or run with --restart"), std::string::npos)
      << message;
  EXPECT_EQ(bytes_of(path_), data);
}

TEST_F(JournalTest, AnEmptyOrTruncatedJournalSaysSoAndWhatToRun) {
  for (const std::size_t size : {std::size_t{0}, std::size_t{5}, std::size_t{12}}) {
    write_journal("run A", 1);
    std::string data = bytes_of(path_);
    write_bytes(path_, data.substr(0, size));
    std::string message;
    try {
      resume("run A");
    } catch (const InputError& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(size == 0 ? "the journal is empty" : "the journal is truncated within its header"),
              std::string::npos)
        << size << ": " << message;
    EXPECT_NE(message.find("rerun with --restart"), std::string::npos) << message;
    fs::remove(path_);
  }
}

}  // namespace
}  // namespace perfsweep
