// A journal record forged under a recomputed checksum: each byte of a kept configuration (its
// throughput, memory, every layout field and every totals field, mem_limit and t_optimizer among
// them) changed in turn, and the counters and the list's order, is never resumed: the journal's
// decoding refuses it (a value the search cannot write) or costing it again does
// (drop_unreproduced), so --resume computes its target again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "core/hash.hpp"
#include "parallel/journal.hpp"
#include "parallel/resumable_sweep.hpp"
#include "search/search.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

class ForgedJournal : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("perfsweep_forged_journal_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "out.h5.journal").string();
    // Llama 3 8B under megatron with its optimizer on the host: every totals field in use (the
    // runtime's t_optimizer, t_framework and mem_limit, the offload's t_offload,
    // t_host_optimizer and host_mem).
    options_.model = "llama3_8b";
    options_.system = "H100";
    options_.nvs = "8";
    options_.n_gpus = "8,16";
    options_.global_batch = 64;
    options_.top_n = 3;
    options_.exec.runtime = "megatron";
    *options_.exec.list("--offload") = "optimizer";
    options_.output = (dir_ / "out.h5").string();
    plan_ = plan_sweep(options_);
    Searcher searcher(plan_.targets[0].problem);
    for (const std::int64_t n : plan_.n_gpus) result_.tops.push_back(searcher.run_all(n, result_.counters));
    ASSERT_FALSE(result_.tops[0].items().empty());
    genuine_ = journal_of(result_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The bytes of a journal holding one record, `r` for the first target.
  std::string journal_of(const TargetResult& r) {
    fs::remove(path_);
    {
      std::map<std::size_t, TargetResult> none;
      Journal j(path_, sweep_fingerprint(plan_, options_), JournalMode::kNew, plan_.n_gpus.size(),
                static_cast<std::size_t>(options_.top_n), none);
      j.append(0, r);
    }
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  // Where the record's payload starts (after the header: magic, fingerprint length, fingerprint,
  // its hash; then the record's magic, fingerprint hash and payload length) and its length.
  static std::size_t payload_at(const std::string& bytes) {
    std::uint64_t fingerprint_length = 0;
    std::memcpy(&fingerprint_length, bytes.data() + 8, 8);
    return 8 + 8 + fingerprint_length + 8 + 4 + 8 + 8;
  }
  static std::size_t payload_length(const std::string& bytes) {
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data() + payload_at(bytes) - 8, 8);
    return n;
  }
  // `bytes` with the record's checksum recomputed over its (altered) payload.
  static std::string resealed(std::string bytes) {
    const std::size_t at = payload_at(bytes), n = payload_length(bytes);
    const std::string sealed = bytes.substr(at - 16, 8) + bytes.substr(at, n);
    const std::uint64_t sum = fnv1a(sealed);
    std::memcpy(bytes.data() + at + n, &sum, 8);
    return bytes;
  }

  // How many records --resume would keep of `bytes`: decoded by the journal, then costed again.
  std::size_t resumed(const std::string& bytes) {
    {
      std::ofstream out(path_, std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    std::map<std::size_t, TargetResult> done;
    Journal j(path_, sweep_fingerprint(plan_, options_), JournalMode::kResume, plan_.n_gpus.size(),
              static_cast<std::size_t>(options_.top_n), done);
    drop_unreproduced(plan_, done);
    return done.size();
  }

  fs::path dir_;
  std::string path_;
  SweepOptions options_;
  SweepPlan plan_;
  TargetResult result_;
  std::string genuine_;
};

TEST_F(ForgedJournal, GenuineRecordIsResumed) {
  EXPECT_EQ(resumed(genuine_), 1u);
  // the fields a runtime and offloading add, which the reference's records leave 0
  for (const char* name : {"mem_limit", "t_optimizer", "t_offload", "t_host_optimizer", "host_mem"}) {
    for (const TotalsField& f : kAllTotalsFields) {
      if (name == std::string_view(f.name)) {
        EXPECT_GT(result_.tops[0].items().front().totals.*(f.member), 0.0) << name;
      }
    }
  }
}

TEST_F(ForgedJournal, EveryFieldOfAKeptConfigurationIsVerified) {
  // the first GPU count's first configuration: after the target id, the counters, the number of
  // GPU counts and the first list's length
  const std::size_t first = payload_at(genuine_) + 8 + sizeof(SearchCounters) + 8 + 8;
  Candidate original;
  std::memcpy(&original, genuine_.data() + first, sizeof original);
  __builtin_clear_padding(&original);
  std::size_t forged = 0;
  for (std::size_t offset = 0; offset < sizeof(Candidate); ++offset) {
    for (const unsigned flip : {0x01u, 0x80u}) {
      std::string bytes = genuine_;
      bytes[first + offset] = static_cast<char>(static_cast<unsigned char>(bytes[first + offset]) ^ flip);
      Candidate changed;
      std::memcpy(&changed, bytes.data() + first, sizeof changed);
      __builtin_clear_padding(&changed);
      if (std::memcmp(&changed, &original, sizeof changed) == 0) continue;  // a padding byte: no field
      ++forged;
      EXPECT_EQ(resumed(resealed(bytes)), 0u) << "byte " << offset << " of the Candidate xor " << flip
                                              << " was resumed";
    }
  }
  EXPECT_GT(forged, 2 * (sizeof(double) * (2 + kAllTotalsFields.size())));
}

TEST_F(ForgedJournal, NamedFieldsAreVerified) {
  // mem_limit (121.6 GB for an H100's 80) and t_optimizer were published from a forged record
  for (const TotalsField& f : kAllTotalsFields) {
    TargetResult r = result_;
    TopN top(static_cast<std::size_t>(options_.top_n));
    for (Candidate c : r.tops[0].items()) {
      double& v = c.totals.*(f.member);
      v = v > 0 ? v * 1.5 : 1e-3;
      top.push(c);
    }
    r.tops[0] = top;
    EXPECT_EQ(resumed(journal_of(r)), 0u) << f.name;
  }
}

TEST_F(ForgedJournal, CountersAndOrderAreVerified) {
  TargetResult r = result_;
  r.counters.candidates = -1;
  EXPECT_EQ(resumed(journal_of(r)), 0u) << "negative count";
  r = result_;
  r.counters.infeasible_memory = r.counters.candidates + 1;
  EXPECT_EQ(resumed(journal_of(r)), 0u) << "more infeasible than evaluated";
  r = result_;
  r.counters.infeasible_memory = r.counters.candidates;
  EXPECT_EQ(resumed(journal_of(r)), 0u) << "configurations kept where none was feasible";
  // one configuration kept twice (a list of three, its best pushed again)
  r = result_;
  ASSERT_EQ(r.tops[0].items().size(), 3u);
  r.tops[0].push(r.tops[0].items().front());
  ASSERT_EQ(r.tops[0].items()[0].throughput, r.tops[0].items()[1].throughput);
  EXPECT_EQ(resumed(journal_of(r)), 0u) << "a configuration kept twice";
}

}  // namespace
}  // namespace perfsweep
