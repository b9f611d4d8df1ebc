// core/human.hpp: numbers read with SI suffixes, written for people, and the nearest of a list's
// names.
#include "core/human.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace perfsweep {
namespace {

TEST(Human, ReadsSuffixesAndScientificNotation) {
  EXPECT_EQ(parse_si_number("15T"), 15e12);
  EXPECT_EQ(parse_si_number("15e12"), 15e12);
  EXPECT_EQ(parse_si_number("2.5e12"), 2.5e12);
  EXPECT_EQ(parse_si_number("300B"), 300e9);
  EXPECT_EQ(parse_si_number("300G"), 300e9);
  EXPECT_EQ(parse_si_number("1.5M"), 1.5e6);
  EXPECT_EQ(parse_si_number("64k"), 64e3);
  EXPECT_EQ(parse_si_number("64K"), 64e3);
  EXPECT_EQ(parse_si_number("2P"), 2e15);
  EXPECT_EQ(parse_si_number("2500000"), 2.5e6);
  EXPECT_EQ(parse_si_number("0"), 0.0);
  EXPECT_EQ(parse_si_number(".5"), 0.5);
}

TEST(Human, RefusesWhatIsNotANumber) {
  for (const char* bad : {"", "T", "15X", "15 T", "-1", "+1", "1e400", "nan", "inf", "0x10", "15TT", "1,000", "e5"}) {
    EXPECT_FALSE(parse_si_number(bad).has_value()) << bad;
  }
}

TEST(Human, WritesNumbersForPeople) {
  EXPECT_EQ(human_number(6.393e6), "6.39M");
  EXPECT_EQ(human_number(1665.2), "1,665");
  EXPECT_EQ(human_number(218.34), "218.3");
  EXPECT_EQ(human_number(0.05123), "0.05123");
  EXPECT_EQ(human_number(15e12), "15T");
  EXPECT_EQ(human_number(1.2e9), "1.2B");
  EXPECT_EQ(human_number(12345), "12.3k");
  EXPECT_EQ(human_number(999400), "999k");
  EXPECT_EQ(human_number(999600), "1M");
  EXPECT_EQ(human_number(-2.5e6), "-2.5M");
  EXPECT_EQ(human_number(std::numeric_limits<double>::quiet_NaN()), "-");
  EXPECT_EQ(grouped_integer(9183444), "9,183,444");
  EXPECT_EQ(grouped_integer(-1000), "-1,000");
  EXPECT_EQ(grouped_integer(999), "999");
}

TEST(Human, FindsTheNearestName) {
  const std::vector<std::string> systems{"A100", "B200", "GB200-calibrated", "H100", "H100-calibrated", "H200"};
  EXPECT_EQ(nearest_name("H100-calbrated", systems), "H100-calibrated");
  EXPECT_EQ(nearest_name("h100", systems), "H100");
  EXPECT_EQ(nearest_name("GB200", systems), "GB200-calibrated");
  EXPECT_EQ(nearest_name("H300", systems), "H100");  // one edit; the first of equals
  EXPECT_EQ(nearest_name("TPUv5", systems), "");
  EXPECT_EQ(nearest_name("", systems), "");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

}  // namespace
}  // namespace perfsweep
