// lib/io/sweep_file, svg_chart, html_report: a hand-made sweep file read back field by field, its
// errors naming the file and the field, HTML escaping and the page's determinism.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "io/h5.hpp"
#include "io/html_report.hpp"
#include "io/svg_chart.hpp"
#include "io/sweep_file.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("perfsweep_report_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The smallest sweep file: one system "<A>" at 8 and 16 GPUs, a top row each; `drop`: a
  // column left out.
  std::string write_sweep(const std::string& drop = "") {
    const std::string path = (dir_ / ("sweep" + drop + ".h5")).string();
    h5::Handle file = h5::create_file(path);
    h5::attr(file.id(), "schema", std::string_view("perfsweep/1"));
    h5::attr(file.id(), "strategy", std::string_view("1d"));
    h5::attr(file.id(), "model", std::string_view("tiny"));
    h5::attr(file.id(), "global_batch_size", std::int64_t{64});
    h5::attr(file.id(), "n_gpus_searched", std::vector<std::int64_t>{8, 16});
    h5::attr(file.id(), "command_line", std::string_view("sweep --model tiny"));
    {
      h5::Handle model = h5::create_group(file.id(), "model");
      h5::attr(model.id(), "seq_len", std::int64_t{1000});
      h5::Handle prov = h5::create_group(file.id(), "provenance");
      h5::text(prov.id(), "model.yaml", "name: tiny\n");
      h5::Handle g = h5::create_group(file.id(), "A-NVS4");
      h5::attr(g.id(), "name", std::string_view("<A>"));
      h5::attr(g.id(), "nvs", std::int64_t{4});
      h5::attr(g.id(), "hbm_capacity", 80.0);
      h5::attr(g.id(), "runtime", std::string_view("reference"));
      h5::attr(g.id(), "comm_model", std::string_view("analytical"));
      h5::Handle top = h5::create_group(g.id(), "top");
      h5::attr(top.id(), "config_keys", std::string_view("dp,tp"));
      h5::attr(top.id(), "placement_keys", std::string_view(""));
      h5::attr(top.id(), "execution_keys", std::string_view("recompute"));
      const std::vector<std::pair<std::string, std::vector<double>>> columns{
          {"n_gpus", {8, 16}}, {"rank", {0, 0}}, {"throughput", {2, 3.5}}, {"mem", {40, 30}},
          {"t", {32, 18.25}},  {"dp", {2, 4}},   {"tp", {4, 4}},          {"recompute", {2, 0}}};
      for (const auto& [name, values] : columns) {
        if (name != drop) h5::dataset(top.id(), name, values, "u");
      }
    }
    h5::write_file(file, path);
    return path;
  }
  fs::path dir_;
};

TEST_F(ReportTest, ReadsTheFileBack) {
  const SweepFile f = read_sweep_file(write_sweep());
  EXPECT_EQ(f.model, "tiny");
  EXPECT_EQ(f.strategy, "1d");
  EXPECT_EQ(f.global_batch, 64);
  ASSERT_EQ(f.targets.size(), 1u);
  const ResultTarget& t = f.targets.front();
  EXPECT_EQ(t.group, "/A-NVS4");
  EXPECT_EQ(t.name, "<A>");
  EXPECT_EQ(t.nvs, 4);
  EXPECT_EQ(t.hbm_capacity_gb, 80.0);
  EXPECT_EQ(t.rows, 2u);
  EXPECT_EQ(t.config_keys, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_TRUE(t.placement_keys.empty());
  ASSERT_NE(t.column("t"), nullptr);
  EXPECT_EQ(t.column("t")->values, (std::vector<double>{32, 18.25}));
  EXPECT_EQ(t.column("t")->units, "u");
  EXPECT_EQ(t.column("absent"), nullptr);
  // Attributes of every type as text, in name order.
  const auto searched = std::find_if(f.run.begin(), f.run.end(), [](const TextField& x) { return x.first == "n_gpus_searched"; });
  ASSERT_NE(searched, f.run.end());
  EXPECT_EQ(searched->second, "8, 16");
  EXPECT_TRUE(std::is_sorted(f.run.begin(), f.run.end()));
  ASSERT_EQ(f.provenance.size(), 1u);
  EXPECT_EQ(f.provenance.front(), (TextField{"model.yaml", "name: tiny\n"}));
}

TEST_F(ReportTest, ErrorsNameTheFileAndTheField) {
  const std::string path = write_sweep("mem");
  try {
    read_sweep_file(path);
    FAIL() << "a file without top/mem was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": /A-NVS4/top/mem: dataset missing");
  }
  const std::string dp = write_sweep("dp");  // named in config_keys
  EXPECT_THROW(read_sweep_file(dp), InputError);
  EXPECT_THROW(read_sweep_file((dir_ / "absent.h5").string()), InputError);
}

// A file of unknown origin is read first in a child process (the HDF5 library can crash on a
// damaged header): what the child reads the parent reads alike, and what it refuses the parent
// refuses with read_sweep_file's own message.
TEST_F(ReportTest, IsolatedReadIsTheSameRead) {
  const std::string good = write_sweep();
  const SweepFile a = read_sweep_file(good), b = read_sweep_file_isolated(good);
  EXPECT_EQ(html_report({a}), html_report({b}));
  const std::string path = write_sweep("mem");
  try {
    read_sweep_file_isolated(path);
    FAIL() << "a file without top/mem was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": /A-NVS4/top/mem: dataset missing");
  }
}

TEST_F(ReportTest, ExecutionCodesAsFlagsSpellThem) {
  EXPECT_EQ(execution_value_name("recompute", 2), "full");
  EXPECT_EQ(execution_value_name("sp", 0), "off");
  EXPECT_EQ(execution_value_name("schedule", 1), "zb-h1");
  EXPECT_EQ(execution_value_name("precision", 1), "fp8");
  EXPECT_EQ(execution_value_name("cp_comm", 1), "all-gather");
  EXPECT_EQ(execution_value_name("offload", 3), "activations");
  EXPECT_EQ(execution_value_name("layout", 1), "megatron");
  EXPECT_EQ(execution_value_name("recompute", 9), "9");
  EXPECT_EQ(execution_value_name("zero", 3), "3");
}

TEST(Svg, EscapesAndFormats) {
  EXPECT_EQ(svg::escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(svg::number(1234.5678), "1235");
  EXPECT_EQ(svg::number(std::nan("")), "-");
}

TEST_F(ReportTest, PageIsEscapedAndDeterministic) {
  const std::vector<SweepFile> files{read_sweep_file(write_sweep())};
  const std::string page = html_report(files);
  EXPECT_EQ(page, html_report(files));
  EXPECT_EQ(page.find("<A>"), std::string::npos);
  EXPECT_NE(page.find("&lt;A&gt;-NVS4"), std::string::npos);
  EXPECT_NE(page.find(">18.25</td>"), std::string::npos);  // the best time at 16 GPUs
  EXPECT_NE(page.find("recompute=full"), std::string::npos) << "8 GPUs' option, in the hover text";
  SweepFile other = files.front();
  other.model = "other";
  EXPECT_THROW(html_report({files.front(), other}), InputError);
}

}  // namespace
}  // namespace perfsweep
