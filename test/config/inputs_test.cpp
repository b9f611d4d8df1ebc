#include "config/inputs.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "model/comm_calibration.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = PERFSWEEP_SOURCE_DIR;
const fs::path kTestDataDir = PERFSWEEP_TEST_DATA_DIR;

// The message of the InputError `f` throws; fails the test when it throws nothing.
std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return {};
}

void expect_same_system(const System& a, const System& b) {
  EXPECT_EQ(a.name, b.name);
  for (const SystemKey& f : kSystemKeys) EXPECT_EQ(a.*(f.member), b.*(f.member)) << f.name;
  EXPECT_EQ(a.nvlink_size, b.nvlink_size);
  EXPECT_EQ(a.summa_nb, b.summa_nb);
  EXPECT_EQ(a.empirical, b.empirical);
  EXPECT_EQ(a.calibration_file, b.calibration_file);
  EXPECT_EQ(a.calibration == nullptr, b.calibration == nullptr);
  if (a.calibration && b.calibration) {
    EXPECT_EQ(a.calibration->file_text, b.calibration->file_text);
  }
}

void expect_same_model(const Transformer& a, const Transformer& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.l, b.l);
  EXPECT_EQ(a.e, b.e);
  EXPECT_EQ(a.h, b.h);
  EXPECT_EQ(a.depth, b.depth);
  EXPECT_EQ(a.f, b.f);
  EXPECT_EQ(a.dataset_samples, b.dataset_samples);
}

constexpr const char* kValidModel =
    "seq_len: 2048\n"
    "embed_dim: 12288\n"
    "num_heads: 96\n"
    "depth: 96\n";

constexpr const char* kValidSystem =
    "matrix_flops_fp16: 312\n"
    "vector_flops_fp16: 78\n"
    "hbm_bandwidth: 1555\n"
    "hbm_capacity: 80\n"
    "nvlink_bandwidth: 300\n"
    "nvlink_eff: 0.7\n"
    "nvlink_latency: 2.5e-06\n"
    "ib_bandwidth: 25\n"
    "ib_eff: 0.7\n"
    "ib_latency: 5e-06\n";

// Each test writes its inputs into a fresh temporary directory and runs with
// PERFSWEEP_DATA_DIR unset (restored afterwards), so the caller's environment does not leak in.
class InputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("perfsweep_inputs_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (const char* v = std::getenv("PERFSWEEP_DATA_DIR")) saved_data_dir_ = v;
    ::unsetenv("PERFSWEEP_DATA_DIR");
  }

  void TearDown() override {
    if (saved_data_dir_) {
      ::setenv("PERFSWEEP_DATA_DIR", saved_data_dir_->c_str(), 1);
    } else {
      ::unsetenv("PERFSWEEP_DATA_DIR");
    }
    fs::remove_all(dir_);
  }

  fs::path write(const std::string& relative, const std::string& text) const {
    const fs::path p = dir_ / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }

  fs::path model_with(const std::string& text) const { return write("models/x.yaml", text); }
  fs::path system_with(const std::string& text) const { return write("systems/s.yaml", text); }

  fs::path dir_;
  std::optional<std::string> saved_data_dir_;
};

TEST_F(InputsTest, ShippedSystemsHaveTheReferenceValues) {
  struct Expected {
    const char* name;
    double matrix, vector32, vector16, hbm_bw, hbm_cap, nvl_bw, nvl_eff, nvl_lat, ib_bw, ib_eff, ib_lat;
    std::int64_t nvs;
  };
  const Expected cases[] = {
      {"A100", 312, 19.5, 78, 1555, 80, 300, 0.7, 2.5e-06, 25, 0.7, 5e-06, 4},
      {"H200", 989.4, 66.9, 133.8, 4800, 141, 450, 0.7, 2.5e-06, 50, 0.7, 5e-06, 64},
      {"B200", 2500, 169, 339, 8000, 192, 900, 0.7, 2.5e-06, 100, 0.7, 5e-06, 4},
      {"B200-next", 3750, 253.5, 508.5, 16000, 384, 3600, 0.8, 5e-06, 200, 0.8, 1e-05, 64},
  };
  for (const Expected& x : cases) {
    SCOPED_TRACE(x.name);
    const System s = load_system(kSourceDir / "systems" / (std::string(x.name) + ".yaml"));
    EXPECT_EQ(s.name, x.name);
    EXPECT_EQ(s.matrix_flops_fp16, x.matrix);
    EXPECT_EQ(s.vector_flops_fp32, x.vector32);
    EXPECT_EQ(s.vector_flops_fp16, x.vector16);
    EXPECT_EQ(s.hbm_bandwidth, x.hbm_bw);
    EXPECT_EQ(s.hbm_capacity, x.hbm_cap);
    EXPECT_EQ(s.nvlink_bandwidth, x.nvl_bw);
    EXPECT_EQ(s.nvlink_eff, x.nvl_eff);
    EXPECT_EQ(s.nvlink_latency, x.nvl_lat);
    EXPECT_EQ(s.ib_bandwidth, x.ib_bw);
    EXPECT_EQ(s.ib_eff, x.ib_eff);
    EXPECT_EQ(s.ib_latency, x.ib_lat);
    EXPECT_EQ(s.nvlink_size, x.nvs);
    EXPECT_EQ(s.nic_factor, 1.0);
    EXPECT_FALSE(s.empirical);
    EXPECT_EQ(s.summa_nb, 4);
    EXPECT_EQ(s.element_size, 2e-09);
    EXPECT_EQ(s.mask_element_size, 1e-09);
    EXPECT_EQ(s.flops_units, 1e-12);
    expect_same_system(load_system_named(x.name), s);
  }
}

TEST_F(InputsTest, ShippedModelsHaveTheReferenceValues) {
  const Transformer gpt3 = load_model_named("gpt3");
  EXPECT_EQ(gpt3.name, "gpt3");
  EXPECT_EQ(gpt3.l, 2048);
  EXPECT_EQ(gpt3.e, 12288);
  EXPECT_EQ(gpt3.h, 96);
  EXPECT_EQ(gpt3.depth, 96);
  EXPECT_EQ(gpt3.f, 4 * 12288);
  EXPECT_EQ(gpt3.dataset_samples, 300e9 / 2048);

  const Transformer big = load_model_named("gpt3_1T");
  EXPECT_EQ(big.name, "gpt3_1T");
  EXPECT_EQ(big.l, 2048);
  EXPECT_EQ(big.e, 25600);
  EXPECT_EQ(big.h, 160);
  EXPECT_EQ(big.depth, 128);
  EXPECT_EQ(big.f, 4 * 25600);
  EXPECT_EQ(big.dataset_samples, 488281250.0);

  const Transformer vit = load_model(kSourceDir / "models" / "vit_era5.yaml");
  EXPECT_EQ(vit.name, "vit_era5");
  EXPECT_EQ(vit.l, 64800);
  EXPECT_EQ(vit.e, 12288);
  EXPECT_EQ(vit.h, 64);
  EXPECT_EQ(vit.depth, 48);
  EXPECT_EQ(vit.f, 4 * 12288);
  EXPECT_EQ(vit.dataset_samples, 350000.0 * 80);
}

TEST_F(InputsTest, ReferenceJsonLoadsUnchangedAndMatchesTheYaml) {
  const fs::path json = kTestDataDir / "config-A100.json";
  const System from_json = load_system(json);
  EXPECT_EQ(from_json.name, "A100");
  expect_same_system(from_json, load_system(kSourceDir / "systems" / "A100.yaml"));
  EXPECT_EQ(resolve_input(json.string(), "systems"), json);
}

TEST_F(InputsTest, OptionalSystemKeysTakeTheirDefaults) {
  const System s = load_system(system_with(kValidSystem));
  EXPECT_EQ(s.name, "s");
  EXPECT_EQ(s.vector_flops_fp32, 0.0);
  EXPECT_EQ(s.nvlink_size, 1);
  EXPECT_EQ(s.summa_nb, 4);
  EXPECT_EQ(s.nic_factor, 1.0);
  EXPECT_FALSE(s.empirical);
  EXPECT_EQ(s.element_size, 2e-9);
  EXPECT_EQ(s.mask_element_size, 1e-9);
  EXPECT_EQ(s.flops_units, 1e-12);
  EXPECT_EQ(load_system(system_with(std::string(kValidSystem) + "name: custom\n")).name, "custom");
}

TEST_F(InputsTest, MalformedYamlReportsLineAndColumn) {
  const fs::path p = model_with("seq_len: 2048\nembed_dim: [1, 2\n");
  const std::string msg = input_error([&] { load_model(p); });
  EXPECT_NE(msg.find(p.string() + ": malformed YAML at line "), std::string::npos) << msg;
  EXPECT_NE(msg.find("column"), std::string::npos) << msg;
  EXPECT_NE(input_error([&] { load_system(system_with("- a\n- b\n")); }).find("expected a mapping"),
            std::string::npos);
}

TEST_F(InputsTest, UnknownDuplicateAndMissingKeys) {
  const fs::path typo = model_with("seq_len: 2048\nembed_dimm: 12288\nnum_heads: 96\ndepth: 96\n");
  EXPECT_EQ(input_error([&] { load_model(typo); }), typo.string() + ": unknown key 'embed_dimm'");

  const fs::path missing = model_with("seq_len: 2048\nembed_dim: 12288\ndepth: 96\n");
  EXPECT_EQ(input_error([&] { load_model(missing); }), missing.string() + ": missing key 'num_heads'");

  const fs::path dup = model_with(std::string(kValidModel) + "depth: 12\n");
  EXPECT_EQ(input_error([&] { load_model(dup); }), dup.string() + ": duplicate key 'depth' (line 5)");

  const fs::path calibration = system_with(std::string(kValidSystem) + "calibration_file: cal.yaml\n");
  EXPECT_EQ(input_error([&] { load_system(calibration); }), calibration.string() + ": unknown key 'calibration_file'");

  const fs::path no_ib = system_with("matrix_flops_fp16: 312\n");
  EXPECT_NE(input_error([&] { load_system(no_ib); }).find(": missing key '"), std::string::npos);
}

TEST_F(InputsTest, SystemValuesOutOfRange) {
  const std::string base = kValidSystem;
  const auto replaced = [&](const std::string& key, const std::string& value) {
    const auto at = base.find(key + ":");
    const auto end = base.find('\n', at);
    return system_with(base.substr(0, at) + key + ": " + value + base.substr(end));
  };
  const fs::path neg = replaced("hbm_bandwidth", "-5");
  EXPECT_EQ(input_error([&] { load_system(neg); }), neg.string() + ": hbm_bandwidth must be in [0.001, 1e+09] GB/s, got -5");
  const fs::path zero = replaced("matrix_flops_fp16", "0");
  EXPECT_EQ(input_error([&] { load_system(zero); }), zero.string() + ": matrix_flops_fp16 must be in [0.001, 1e+07] TFLOP/s, got 0");
  const fs::path eff = replaced("ib_eff", "1.5");
  EXPECT_EQ(input_error([&] { load_system(eff); }), eff.string() + ": ib_eff must be in [1e-06, 1], got 1.5");
  // A denormal fraction would divide a bandwidth down to nothing: bounded away from zero.
  const fs::path denormal = replaced("nvlink_eff", "5e-324");
  EXPECT_EQ(input_error([&] { load_system(denormal); }), denormal.string() + ": nvlink_eff must be in [1e-06, 1], got 5e-324");
  const fs::path lat = replaced("ib_latency", "-1e-6");
  EXPECT_EQ(input_error([&] { load_system(lat); }), lat.string() + ": ib_latency must be in [0, 1] s, got -1e-6");
  // Tiny bandwidths would turn times into inf/NaN: the registry's physical range refuses them.
  const fs::path tiny = replaced("hbm_bandwidth", "1e-308");
  EXPECT_EQ(input_error([&] { load_system(tiny); }), tiny.string() + ": hbm_bandwidth must be in [0.001, 1e+09] GB/s, got 1e-308");
  EXPECT_EQ(load_system(replaced("nvlink_latency", "0")).nvlink_latency, 0.0);
  EXPECT_EQ(load_system(replaced("nvlink_eff", "1")).nvlink_eff, 1.0);

  const fs::path word = replaced("hbm_bandwidth", "fast");
  EXPECT_EQ(input_error([&] { load_system(word); }),
            word.string() + ": hbm_bandwidth must be a finite number, got fast");
  for (const char* bad : {"\"1555\"", "[1555]", "", ".inf", "nan", "+-5"}) {
    const fs::path p = replaced("hbm_bandwidth", bad);
    EXPECT_NE(input_error([&] { load_system(p); }).find("hbm_bandwidth must be a finite number"), std::string::npos)
        << bad;
  }
  EXPECT_EQ(load_system(replaced("hbm_bandwidth", "+1.5e3")).hbm_bandwidth, 1500.0);
  // A value with a unit: converted to the key's (GB/s, GB); any other unit names the file, the key
  // and the value.
  const fs::path unit = replaced("hbm_bandwidth", "1555x");
  EXPECT_EQ(input_error([&] { load_system(unit); }),
            unit.string() + ": hbm_bandwidth: unknown unit 'x' in '1555x' (known: GB/s, Gb/s, TB/s, Tb/s, MB/s, "
                            "Mb/s, GiB/s; a bare number is GB/s)");
  EXPECT_EQ(load_system(replaced("hbm_bandwidth", "1.5 TB/s")).hbm_bandwidth, 1500.0);
  EXPECT_EQ(load_system(replaced("hbm_bandwidth", "400 Gb/s")).hbm_bandwidth, 400.0 / 8);
  EXPECT_EQ(load_system(replaced("hbm_bandwidth", "2 GiB/s")).hbm_bandwidth, 2 * 1.073741824);
  // 80 GiB = 80 x 2^30 bytes; a capacity with a unit is exact (a bare one is not)
  const System gib = load_system(replaced("hbm_capacity", "80 GiB"));
  EXPECT_EQ(gib.hbm_capacity, 80 * 1.073741824);
  EXPECT_TRUE(gib.hbm_capacity_exact);
  EXPECT_FALSE(load_system(replaced("hbm_capacity", "80")).hbm_capacity_exact);
  const fs::path bits = replaced("hbm_capacity", "640 Gb");
  EXPECT_NE(input_error([&] { load_system(bits); }).find("hbm_capacity: unknown unit 'Gb' in '640 Gb'"),
            std::string::npos);

  const fs::path nic = system_with(base + "nic_factor: 0\n");
  EXPECT_EQ(input_error([&] { load_system(nic); }), nic.string() + ": nic_factor must be in [0.001, 1000] NICs per GPU, got 0");
  EXPECT_EQ(load_system(system_with(base + "nic_factor: 0.5\n")).nic_factor, 0.5);

  // Keys whose 0 means "none" (no host link, no FP8 tensor cores) take 0 or at least the floor: a
  // host_bandwidth of 1e-300 GB/s made a 5e301 s step.
  for (const char* key : {"host_bandwidth", "host_memory", "host_cpu_bandwidth", "matrix_flops_fp8"}) {
    const fs::path denormal_host = system_with(base + key + ": 1e-300\n");
    EXPECT_NE(input_error([&] { load_system(denormal_host); }).find(std::string(key) + " must be in 0 or [0.001, "),
              std::string::npos)
        << key;
    EXPECT_EQ(load_system(system_with(base + key + ": 0\n")).*(find_system_key(key)->member), 0.0) << key;
    EXPECT_EQ(load_system(system_with(base + key + ": 0.001\n")).*(find_system_key(key)->member), 0.001) << key;
  }
  // a system's name becomes an HDF5 group (A100-NVS8): no '/', refused before any search
  const fs::path slash = system_with(base + "name: a/b\n");
  EXPECT_NE(input_error([&] { load_system(slash); }).find(": name must be a name of 1 to 256 bytes"), std::string::npos);
}

TEST_F(InputsTest, SystemIntegersMustBePositiveIntegers) {
  for (const char* key : {"nvlink_size", "summa_nb"}) {
    for (const char* bad : {"2.5", "abc", "-1", "0", "\"4\"", "4e0"}) {
      const fs::path p = system_with(std::string(kValidSystem) + key + ": " + bad + "\n");
      const std::string msg = input_error([&] { load_system(p); });
      EXPECT_EQ(msg, p.string() + ": " + key + " must be a positive integer, got " + bad) << key << "=" << bad;
    }
  }
  EXPECT_EQ(load_system(system_with(std::string(kValidSystem) + "nvlink_size: 72\n")).nvlink_size, 72);
}

TEST_F(InputsTest, EmpiricalModeIsRejected) {
  const fs::path p = system_with(std::string(kValidSystem) + "empirical: true\n");
  const std::string msg = input_error([&] { load_system(p); });
  EXPECT_NE(msg.find(p.string() + ": empirical=true is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("calibration"), std::string::npos) << msg;
  const fs::path word = system_with(std::string(kValidSystem) + "empirical: maybe\n");
  EXPECT_EQ(input_error([&] { load_system(word); }), word.string() + ": empirical must be true or false, got maybe");
}

TEST_F(InputsTest, CalibrationIsLoadedRelativeToTheSystemFile) {
  const std::string calibration = read_text(kSourceDir / "systems" / "calibrations" / "perlmutter_a100.yaml");
  write("systems/cal/perlmutter.yaml", calibration);
  const fs::path p = system_with(std::string(kValidSystem) + "calibration: cal/perlmutter.yaml\n");
  const System s = load_system(p);
  ASSERT_NE(s.calibration, nullptr);
  EXPECT_EQ(s.calibration_file, "cal/perlmutter.yaml");
  EXPECT_EQ(s.calibration->file, (dir_ / "systems" / "cal" / "perlmutter.yaml").string());
  EXPECT_EQ(s.calibration->file_text, calibration);
  EXPECT_EQ(s.calibration->placements.size(), 9u);  // 3 collectives x 1, 2, 4 GPUs per node

  // Absolute paths are taken as they are; without the key there is no calibration.
  const fs::path absolute = dir_ / "systems" / "cal" / "perlmutter.yaml";
  EXPECT_EQ(load_system(system_with(std::string(kValidSystem) + "calibration: " + absolute.string() + "\n"))
                .calibration->file,
            absolute.string());
  EXPECT_EQ(load_system(system_with(kValidSystem)).calibration, nullptr);

  // The shipped example: A100 plus the Perlmutter calibration.
  const System calibrated = load_system_named("A100-calibrated");
  ASSERT_NE(calibrated.calibration, nullptr);
  EXPECT_EQ(calibrated.calibration_file, "calibrations/perlmutter_a100.yaml");
  EXPECT_EQ(calibrated.calibration->file_text, calibration);
  const System a100 = load_system_named("A100");
  for (const SystemKey& f : kSystemKeys) EXPECT_EQ(calibrated.*(f.member), a100.*(f.member)) << f.name;
  EXPECT_EQ(calibrated.nvlink_size, a100.nvlink_size);
}

TEST_F(InputsTest, CalibrationErrorsNameSystemFileKeyAndValue) {
  const fs::path missing = system_with(std::string(kValidSystem) + "calibration: cal/absent.yaml\n");
  const std::string msg = input_error([&] { load_system(missing); });
  EXPECT_EQ(msg.rfind(missing.string() + ": calibration 'cal/absent.yaml': ", 0), 0u) << msg;
  EXPECT_NE(msg.find((dir_ / "systems" / "cal" / "absent.yaml").string() + ": no such file"), std::string::npos) << msg;

  for (const auto& [value, shown] : {std::pair{"[a.yaml, b.yaml]", "a list"}, {"{file: a.yaml}", "a mapping"},
                                     {"", "nothing"}, {"\"\"", "\"\""}}) {
    const fs::path p = system_with(std::string(kValidSystem) + "calibration: " + value + "\n");
    EXPECT_EQ(input_error([&] { load_system(p); }),
              p.string() + ": calibration must be the path of a calibration file (written by `comm fit`), got " + shown)
        << value;
  }

  // A file that is not a calibration: the calibration loader's message, behind the system's.
  write("systems/not_a_calibration.yaml", "format: something-else\nversion: 1\n");
  const fs::path wrong = system_with(std::string(kValidSystem) + "calibration: not_a_calibration.yaml\n");
  const std::string wrong_msg = input_error([&] { load_system(wrong); });
  EXPECT_EQ(wrong_msg.rfind(wrong.string() + ": calibration 'not_a_calibration.yaml': ", 0), 0u) << wrong_msg;
  EXPECT_NE(wrong_msg.find("not_a_calibration.yaml: "), std::string::npos) << wrong_msg;
  write("systems/broken.yaml", "format: [unclosed\n");
  const fs::path broken = system_with(std::string(kValidSystem) + "calibration: broken.yaml\n");
  EXPECT_NE(input_error([&] { load_system(broken); }).find("broken.yaml: malformed YAML"), std::string::npos);
}

TEST_F(InputsTest, ModelIntegersMustBePositiveIntegers) {
  for (const char* bad : {"2048.5", "long", "0", "-2048", "\"2048\""}) {
    const fs::path p = model_with(std::string("seq_len: ") + bad + "\nembed_dim: 12288\nnum_heads: 96\ndepth: 96\n");
    EXPECT_EQ(input_error([&] { load_model(p); }), p.string() + ": seq_len must be a positive integer, got " + bad);
  }
  const fs::path f = model_with(std::string(kValidModel) + "ffn_dim: 1.5\n");
  EXPECT_EQ(input_error([&] { load_model(f); }), f.string() + ": ffn_dim must be a positive integer, got 1.5");
  const fs::path samples = model_with(std::string(kValidModel) + "dataset_samples: -1\n");
  EXPECT_EQ(input_error([&] { load_model(samples); }), samples.string() + ": dataset_samples must be > 0, got -1");
}

TEST_F(InputsTest, HeadsMustDivideEmbedding) {
  const fs::path p = model_with("seq_len: 2048\nembed_dim: 12288\nnum_heads: 7\ndepth: 96\n");
  EXPECT_EQ(input_error([&] { load_model(p); }), p.string() + ": num_heads=7 does not divide embed_dim=12288");
}

// The attention options' bad values, each named with its file and field.
TEST_F(InputsTest, AttentionOptionErrors) {
  const std::string base = "seq_len: 4096\nembed_dim: 1024\nnum_heads: 16\ndepth: 4\ncausal: true\n";
  const struct {
    const char* extra;
    const char* message;
  } cases[] = {
      {"head_dim: 0\n", ": head_dim must be a positive integer, got 0"},
      {"sliding_window: -4\n", ": sliding_window must be a positive integer, got -4"},
      {"global_every: 2\n", ": global_every=2 needs a sliding_window"},
      {"out_bias: true\n", ": out_bias: true goes with qkv_bias: true"},
      {"mla: {kv_lora_rank: 512}\n", ": missing key 'mla.v_head_dim'"},
      {"mla: {kv_lora_rank: 512, v_head_dim: 128, rank: 2}\n", ": unknown key 'mla.rank'"},
      {"mla: {kv_lora_rank: 512, v_head_dim: 128, qk_rope_head_dim: 64}\nnum_kv_heads: 4\n",
       ": mla sets the attention's shapes itself"},
  };
  for (const auto& c : cases) {
    const fs::path p = model_with(base + c.extra);
    EXPECT_EQ(input_error([&] { load_model(p); }).find(p.string() + c.message), 0u) << c.extra;
  }
  // A num_heads not dividing embed_dim is fine with head_dim given.
  EXPECT_EQ(load_model(model_with("seq_len: 8\nembed_dim: 3584\nnum_heads: 7\nhead_dim: 256\ndepth: 1\n")).head_dim(), 256);
}

TEST_F(InputsTest, FfnDimDefaultsToFourTimesEmbedding) {
  const Transformer t = load_model(model_with(kValidModel));
  EXPECT_EQ(t.name, "x");
  EXPECT_EQ(t.f, 4 * 12288);
  EXPECT_EQ(t.dataset_samples, 0.0);
  EXPECT_EQ(load_model(model_with(std::string(kValidModel) + "ffn_dim: 1000\n")).f, 1000);
}

TEST_F(InputsTest, ModelsTooLargeForInt64AreRejected) {
  // 2^20 * h * l^2 with h = 1, l = 2^22 is 2^64.
  const fs::path attention = model_with("seq_len: 4194304\nembed_dim: 64\nnum_heads: 1\ndepth: 1\n");
  EXPECT_NE(input_error([&] { load_model(attention); }).find("too large for exact integer arithmetic"),
            std::string::npos);
  // Each key within its declared range (model/transformer.hpp kModelKeyLimits).
  const fs::path linear = model_with("seq_len: 1\nembed_dim: 64\nnum_heads: 1\ndepth: 1\nffn_dim: 17592186044416\n");
  EXPECT_NE(input_error([&] { load_model(linear); }).find("ffn_dim must be in [1, 4194304], got 17592186044416"),
            std::string::npos);
  EXPECT_NE(input_error([&] { load_model(model_with("seq_len: 8\nembed_dim: 1000000000\nnum_heads: 1\ndepth: 1\n")); })
                .find("embed_dim must be in [1, 1048576], got 1000000000"),
            std::string::npos);
  EXPECT_NE(input_error([&] { load_model(model_with("seq_len: 8\nembed_dim: 64\nnum_heads: 1\n"
                                                    "depth: 9223372036854775807\n")); })
                .find("depth must be in [1, 65536], got 9223372036854775807"),
            std::string::npos);
  // 2^20 * depth * 3 e f (experts + 1) with every key in range: 2^16 blocks of 2^16 experts of
  // 2^20 x 2^22 overflow, so the product is refused.
  const fs::path experts = model_with("seq_len: 8\nembed_dim: 1048576\nnum_heads: 1\ndepth: 65536\n"
                                      "ffn_dim: 4194304\nmoe: {experts: 65536, top_k: 1}\n");
  EXPECT_NE(input_error([&] { load_model(experts); }).find("too large for exact integer arithmetic"), std::string::npos);
  // Expert groups must split the experts and leave the top_k room in the groups drawn.
  const std::pair<const char*, const char*> groups[] = {
      {"groups: 3, group_top_k: 1", "moe.groups must divide moe.experts=8 into 2 or more groups, got 3"},
      {"groups: 4, group_top_k: 4", "moe.group_top_k must be in [1, 3], got 4"},
      {"groups: 4, group_top_k: 1", "moe.group_top_k=1 groups of 2 experts hold fewer than moe.top_k=3"}};
  for (const auto& [keys, message] : groups) {
    const fs::path grouped = model_with(std::string("seq_len: 8\nembed_dim: 64\nnum_heads: 1\ndepth: 1\n"
                                                    "moe: {experts: 8, top_k: 3, ") + keys + "}\n");
    EXPECT_NE(input_error([&] { load_model(grouped); }).find(message), std::string::npos) << keys;
  }
  // A capacity factor beyond the experts, or a denormal one, is refused.
  for (const char* cf : {"1073741825", "4.9e-324"}) {
    const fs::path moe = model_with(std::string("seq_len: 8\nembed_dim: 64\nnum_heads: 1\ndepth: 1\n"
                                                "moe: {experts: 8, top_k: 2, capacity_factor: ") + cf + "}\n");
    EXPECT_NE(input_error([&] { load_model(moe); }).find("moe.capacity_factor must be in [0.001, 8]"), std::string::npos)
        << cf;
  }
  // Just below both bounds.
  EXPECT_NO_THROW(load_model(model_with("seq_len: 2097152\nembed_dim: 64\nnum_heads: 1\ndepth: 1\n")));
}

TEST_F(InputsTest, NameResolution) {
  const std::string msg = input_error([] { resolve_input("gpt5", "models"); });
  // one edit from gpt3 (a third of the name's length allows two): named as the likely meaning
  EXPECT_EQ(msg.rfind("unknown model 'gpt5'; did you mean 'gpt3'?; available: ", 0), 0u) << msg;
  for (const char* name : {"gpt3", "gpt3_1T", "vit_era5"}) EXPECT_NE(msg.find(name), std::string::npos) << msg;
  // one edit from A100 and from H100: the first listed
  EXPECT_NE(input_error([] { resolve_input("Z100", "systems"); })
                .find("unknown system 'Z100'; did you mean 'A100'?; available: A100, A100-calibrated, B200"),
            std::string::npos);
  // a prefix of one name: that name; nothing near: no guess
  EXPECT_NE(input_error([] { resolve_input("H100-calib", "systems"); }).find("did you mean 'H100-calibrated'?"),
            std::string::npos);
  EXPECT_EQ(input_error([] { resolve_input("qwerty_zz", "models"); }).find("did you mean"), std::string::npos);

  EXPECT_EQ(input_error([] { resolve_input("no/such/gpt3", "models"); }), "no/such/gpt3: no such file");
  EXPECT_EQ(input_error([] { resolve_input("gpt3.yaml", "models"); }), "gpt3.yaml: no such file");

  // $PERFSWEEP_DATA_DIR comes first, and offers YAML and the reference's JSON names.
  write("models/gpt3.yaml", "seq_len: 16\nembed_dim: 8\nnum_heads: 2\ndepth: 1\n");
  write("models/tiny.yml", "seq_len: 4\nembed_dim: 8\nnum_heads: 2\ndepth: 1\n");
  write("systems/config-Q100.json", read_text(kTestDataDir / "config-A100.json"));
  ::setenv("PERFSWEEP_DATA_DIR", dir_.c_str(), 1);
  EXPECT_EQ(load_model_named("gpt3").l, 16);
  EXPECT_EQ(load_model_named("tiny").l, 4);
  EXPECT_EQ(load_system_named("Q100").name, "Q100");
  EXPECT_EQ(load_system_named("A100").matrix_flops_fp16, 312.0);
  EXPECT_NE(input_error([] { resolve_input("gpt5", "models"); }).find("tiny"), std::string::npos);
  // An explicit path wins over names.
  EXPECT_EQ(load_model_named((dir_ / "models" / "tiny.yml").string()).l, 4);
}

TEST_F(InputsTest, CanonicalYamlRoundTrips) {
  for (const char* name : {"A100", "H200", "B200", "B200-next"}) {
    const System s = load_system_named(name);
    const std::string text = system_to_yaml(s);
    expect_same_system(load_system(write(std::string("rt/") + name + ".yaml", text)), s);
  }
  System odd = load_system(kTestDataDir / "config-A100.json");
  odd.name = "yes: \"quoted\" \\ name";
  odd.nvlink_eff = 0.1 + 0.2;
  odd.ib_latency = 0;
  odd.vector_flops_fp32 = 0;
  odd.nvlink_size = 72;
  odd.summa_nb = 3;
  odd.nic_factor = 1.0 / 3;
  expect_same_system(load_system(write("rt/other.yaml", system_to_yaml(odd))), odd);

  // The calibration key round-trips as written, relative to the file it is in.
  const System calibrated = load_system(kSourceDir / "systems" / "A100-calibrated.yaml");
  const std::string text = system_to_yaml(calibrated);
  EXPECT_NE(text.find("calibration: \"calibrations/perlmutter_a100.yaml\""), std::string::npos) << text;
  write("rt/calibrations/perlmutter_a100.yaml",
        read_text(kSourceDir / "systems" / "calibrations" / "perlmutter_a100.yaml"));
  expect_same_system(load_system(write("rt/A100-calibrated.yaml", text)), calibrated);

  for (const char* name : {"gpt3", "gpt3_1T", "vit_era5"}) {
    const Transformer m = load_model_named(name);
    expect_same_model(load_model(write(std::string("rt/") + name + ".yaml", model_to_yaml(m))), m);
  }
  Transformer t = load_model(model_with(kValidModel));
  t.name = "123";
  t.f = 1000;
  expect_same_model(load_model(write("rt/m.yaml", model_to_yaml(t))), t);
}

TEST_F(InputsTest, ReadText) {
  const std::string text = "# comment\nseq_len: 1\n";
  EXPECT_EQ(read_text(write("t.yaml", text)), text);
  EXPECT_NE(input_error([&] { read_text(dir_ / "absent.yaml"); }).find("no such file"), std::string::npos);
}

// A system file with the given network_tiers block (YAML flow list) after the valid keys.
std::string with_tiers(const std::string& tiers) { return std::string(kValidSystem) + "network_tiers: " + tiers + "\n"; }

TEST_F(InputsTest, NetworkTiersLoadAndRoundTrip) {
  const System s = load_system(kSourceDir / "systems" / "H100-llama3-cluster.yaml");
  ASSERT_NE(s.network_tiers, nullptr);
  ASSERT_EQ(s.network_tiers->size(), 3u);
  const std::vector<NetworkTier>& t = *s.network_tiers;
  EXPECT_EQ(t[0].name, "rack");
  EXPECT_EQ(t[0].domains, 2);
  EXPECT_EQ(t[1].name, "pod");
  EXPECT_EQ(t[1].domains, 384);  // 3,072 GPUs of 8 per server
  EXPECT_EQ(t[2].domains, 0);
  EXPECT_EQ(t[2].oversubscription, 7.0);
  EXPECT_EQ(t[0].oversubscription, 1.0);
  EXPECT_EQ(s.ib_bandwidth, 50.0);  // 400 Gb/s
  // a tier without latency takes ib_latency
  const System d = load_system(system_with(with_tiers("[{name: a, domains: 4}, {name: b, oversubscription: 2}]")));
  EXPECT_EQ((*d.network_tiers)[0].latency, 5e-6);
  EXPECT_EQ((*d.network_tiers)[1].latency, 5e-6);
  // written as YAML and read back (beside a copy of the calibration it names): the same tiers
  const fs::path again = write("systems/again.yaml", system_to_yaml(s));
  fs::create_directories(dir_ / "systems" / "calibrations");
  fs::copy_file(kSourceDir / "systems" / "calibrations" / "h100_kernels.yaml",
                dir_ / "systems" / "calibrations" / "h100_kernels.yaml");
  const System r = load_system(again);
  ASSERT_NE(r.network_tiers, nullptr);
  ASSERT_EQ(r.network_tiers->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*r.network_tiers)[i].name, t[i].name);
    EXPECT_EQ((*r.network_tiers)[i].domains, t[i].domains);
    EXPECT_EQ((*r.network_tiers)[i].latency, t[i].latency);
    EXPECT_EQ((*r.network_tiers)[i].oversubscription, t[i].oversubscription);
  }
}

TEST_F(InputsTest, NetworkTierErrorsNameFileTierAndValue) {
  const struct {
    const char* tiers;
    const char* message;
  } cases[] = {
      {"[]", ": network_tiers: expected a list of tiers"},
      {"5", ": network_tiers: expected a list of tiers"},
      {"[3]", ": network_tiers: tier 1: expected a mapping, got 3"},
      {"[{domains: 2}, {name: b}]", ": network_tiers[1]: missing key 'name'"},
      {"[{name: a, domain: 2}, {name: b}]", ": network_tiers[1]: unknown key 'domain'"},
      {"[{name: a}, {name: b}]", ": network_tiers[a]: missing key 'domains'"},
      {"[{name: a, domains: 2}, {name: b, domains: 8}]",
       ": network_tiers[b].domains: the outermost tier joins every NVLink domain and gives no domains, got 8"},
      {"[{name: a, domains: 4}, {name: b, domains: 6}, {name: c}]",
       ": network_tiers[b].domains: must be a multiple of the tier below's 4 domains and larger, got 6"},
      {"[{name: a, domains: 1}, {name: c}]",
       ": network_tiers[a].domains: must be a multiple of the tier below's 1 domains and larger, got 1"},
      {"[{name: a, domains: -2}, {name: c}]", ": network_tiers[a].domains must be a positive integer, got -2"},
      {"[{name: a, domains: 2, oversubscription: 0.5}, {name: c}]",
       ": network_tiers[a].oversubscription: must be in [1, 1000], got 0.5"},
      {"[{name: a, domains: 2, latency: -1}, {name: c}]", ": network_tiers[a].latency: must be in [0, 1] s, got -1"},
      {"[{name: a, domains: 2, latency: soon}, {name: c}]",
       ": network_tiers[a].latency must be a finite number, got soon"},
      {"[{name: a, domains: 2, domains: 4}, {name: c}]", ": network_tiers[0]: duplicate key 'domains' (line"},
      {"[{name: a, domains: \"2\"}, {name: c}]", ": network_tiers[a].domains must be a positive integer, got \"2\""},
      {"[{name: \"a\\tb\", domains: 2}, {name: c}]", ": network_tiers[1].name must be a name of 1 to 256 bytes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.tiers);
    const fs::path p = system_with(with_tiers(c.tiers));
    const std::string got = input_error([&] { load_system(p); });
    EXPECT_EQ(got.rfind(p.string() + c.message, 0), 0u) << got;
  }
}

}  // namespace
}  // namespace perfsweep
