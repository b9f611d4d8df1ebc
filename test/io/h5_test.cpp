// lib/io/h5: what is written reads back exactly; every failure is a typed H5Error naming the
// object and the cause.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.hpp"
#include "io/h5.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

class H5Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("perfsweep_h5_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(H5Test, RoundTrip) {
  const std::string path = (dir_ / "round.h5").string();
  const std::vector<double> doubles = {1.5, -0.0, 1e-300, std::numeric_limits<double>::max(), 0.1 + 0.2};
  const std::vector<std::int64_t> ints = {0, 7, std::numeric_limits<std::int64_t>::max()};
  const std::string long_text(100000, 'y');  // beyond an attribute header's 64 KiB
  {
    h5::Handle file = h5::create_file(path);
    h5::Handle g = h5::create_group(file.id(), "group");
    h5::attr(g.id(), "name", std::string_view("A100-NVS4"));
    h5::attr(g.id(), "value", 2.5);
    h5::attr(g.id(), "count", std::int64_t{42});
    h5::text_attr(g.id(), "yaml", long_text);
    h5::dataset(g.id(), "doubles", doubles, "GB").close("doubles");
    h5::dataset(g.id(), "ints", ints).close("ints");
    h5::dataset(g.id(), "empty", std::vector<double>{}).close("empty");
    h5::text(g.id(), "model.yaml", "name: gpt3\nseq_len: 2048\n");
    g.close("group");
    h5::write_file(file, path);
  }
  h5::Handle file = h5::open_file(path);
  h5::Handle g = h5::open_group(file.id(), "group");
  EXPECT_TRUE(h5::exists(file.id(), "group"));
  EXPECT_FALSE(h5::exists(file.id(), "other"));
  EXPECT_EQ(h5::read_string_attr(g.id(), "name"), "A100-NVS4");
  const std::vector<double> d = h5::read_doubles(g.id(), "doubles");
  ASSERT_EQ(d.size(), doubles.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(std::signbit(d[i]), std::signbit(doubles[i]));
    EXPECT_EQ(d[i], doubles[i]);  // bit for bit, not within a tolerance
  }
  EXPECT_EQ(h5::read_ints(g.id(), "ints"), ints);
  EXPECT_TRUE(h5::read_doubles(g.id(), "empty").empty());
  EXPECT_EQ(h5::read_text(g.id(), "model.yaml"), "name: gpt3\nseq_len: 2048\n");
}

// A damaged header may claim any element count: the read is refused with an H5Error naming the
// dataset before anything is allocated (a dataset of 2^40 doubles, never written, in a file of a
// few kilobytes).
TEST_F(H5Test, ClaimsBeyondTheFileAreRefused) {
  const std::string path = (dir_ / "claims.h5").string();
  {
    h5::Handle file = h5::create_file(path);
    const hsize_t n = hsize_t{1} << 40;
    h5::Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    h5::Handle d(H5Dcreate2(file.id(), "huge", H5T_NATIVE_DOUBLE, space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
    ASSERT_GE(d.id(), 0);
    d.close("huge");
    h5::write_file(file, path);
  }
  h5::Handle file = h5::open_file(path);
  try {
    h5::read_doubles(file.id(), "huge");
    FAIL() << "read";
  } catch (const H5Error& e) {
    EXPECT_NE(std::string(e.what()).find("dataset huge claims 8.796e+12 bytes, more than a file of"), std::string::npos)
        << e.what();
  }
}

// A string attribute is one string: a variable-length one whose dataspace claims two (as a damaged
// header may) is refused before the read, which would write two pointers where one is kept.
TEST_F(H5Test, StringAttributeOfSeveralIsRefused) {
  const std::string path = (dir_ / "strings.h5").string();
  {
    h5::Handle file = h5::create_file(path);
    h5::Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    ASSERT_GE(H5Tset_size(type.id(), H5T_VARIABLE), 0);
    const hsize_t n = 2;
    h5::Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    h5::Handle a(H5Acreate2(file.id(), "two", type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    ASSERT_GE(a.id(), 0);
    const char* values[] = {"first", "second"};
    ASSERT_GE(H5Awrite(a.id(), type.id(), values), 0);
    a.close("two");
    h5::write_file(file, path);
  }
  h5::Handle file = h5::open_file(path);
  try {
    h5::read_string_attr(file.id(), "two");
    FAIL() << "read";
  } catch (const H5Error& e) {
    EXPECT_NE(std::string(e.what()).find("attribute two is not one string"), std::string::npos) << e.what();
  }
}

// A negative, infinite or NaN number is refused before it is written, naming its path in the file;
// NaN passes only where the caller says it marks "nothing fits".
TEST_F(H5Test, NonsensicalNumbersAreRefused) {
  h5::Handle file = h5::create_file((dir_ / "refused.h5").string());
  h5::Handle g = h5::create_group(file.id(), "A100-NVS4");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto message = [](auto&& write) {
    try {
      write();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  EXPECT_EQ(message([&] { h5::dataset(g.id(), "t", std::vector<double>{1.0, -2.0}, "s"); }),
            "refusing to publish /A100-NVS4/t[1] = -2: negative (an overflow, or an input that cancels what it should "
            "add to); nothing was written (check the inputs' values)");
  EXPECT_NE(message([&] { h5::dataset(g.id(), "mem", std::vector<double>{nan}); }).find("/A100-NVS4/mem = nan: not a number"),
            std::string::npos);
  EXPECT_NE(message([&] { h5::attr(g.id(), "hbm", std::numeric_limits<double>::infinity()); }).find("/A100-NVS4@hbm = inf: infinite"),
            std::string::npos);
  EXPECT_NE(message([&] { h5::dataset(g.id(), "count", std::vector<std::int64_t>{-1}); }).find("/A100-NVS4/count = -1: negative"),
            std::string::npos);
  EXPECT_FALSE(h5::exists(g.id(), "t"));
  EXPECT_EQ(message([&] { h5::check_values(g.id(), "best", {nan, 1.0}, NanMeans::NothingFits); }), "not refused");
  EXPECT_NE(message([&] { h5::check_values(g.id(), "best", {nan, -1.0}, NanMeans::NothingFits); }).find("best[1] = -1"),
            std::string::npos);
}

TEST_F(H5Test, FailuresAreTypedAndNamed) {
  const std::string path = (dir_ / "f.h5").string();
  {
    h5::Handle file = h5::create_file(path);
    h5::Handle g = h5::create_group(file.id(), "g");
    try {
      h5::create_group(file.id(), "g");
      FAIL() << "a duplicate group was created";
    } catch (const H5Error& e) {
      EXPECT_NE(std::string(e.what()).find("create group g"), std::string::npos) << e.what();
    }
    EXPECT_THROW(h5::read_doubles(g.id(), "missing"), H5Error);
    EXPECT_THROW(h5::read_string_attr(g.id(), "missing"), H5Error);
    g.close("g");
    h5::write_file(file, path);
  }
  {
    h5::Handle again = h5::create_file(path);
    EXPECT_THROW(h5::write_file(again, path), IoError);  // never truncates an existing file
  }
  EXPECT_THROW(h5::open_file((dir_ / "absent.h5").string()), H5Error);
  try {
    const std::string missing = (dir_ / "no" / "such" / "dir.h5").string();
    h5::Handle file = h5::create_file(missing);
    h5::write_file(file, missing);
    FAIL() << "created a file in a missing directory";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("dir.h5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace perfsweep
