// Every launch line (io/launch.hpp) checked against its framework's parser as read from the
// framework's source (test/data/launch/, made by scripts/extract_launch_parsers.py: Megatron-LM
// core_v0.15.3's arguments.py, NeMo's recipe override fields, torchtitan v0.2.2's JobConfig): for
// every shipped model (models/*.yaml), under the reference and every runtime (runtimes/*.yaml),
// each framework with a launch writer, and layouts with tensor, pipeline (even, uneven, interleaved,
// slotted), context (each exchange) and expert parallelism, each recomputation, ZeRO stage,
// precision and offload the runtime runs: every argument is one of the parser's, given once, its
// value of the argument's kind and among its choices, and no rule the framework checks between
// arguments (exclusions, requirements, arguments never to give, numbers that must divide) broken.
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "io/launch.hpp"
#include "model/axes.hpp"
#include "model/runtime.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(PERFSWEEP_TEST_DATA_DIR) / "launch";

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// The tab-separated rows of a data file, '#' lines left out.
std::vector<std::vector<std::string>> rows_of(const std::string& file) {
  std::ifstream in(kData / file);
  EXPECT_TRUE(in.good()) << (kData / file);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() != '#') rows.push_back(split(line, '\t'));
  }
  return rows;
}

// One argument of a parser: its kind, default and choices (the script's docstring).
struct Argument {
  std::string kind;
  std::string default_value;
  std::set<std::string> choices;
};
// A rule between arguments: excludes, requires, forbidden, multiple or atleast.
struct Rule {
  std::string kind, when, then, source;
};
struct Parser {
  std::map<std::string, Argument> arguments;
  std::vector<Rule> rules;
};

Parser load_parser(const std::string& framework) {
  Parser p;
  for (const auto& r : rows_of(framework + "_arguments.txt")) {
    EXPECT_EQ(r.size(), 4u) << r.front();
    if (r.size() != 4) continue;
    Argument a{r[1], r[2], {}};
    for (const std::string& c : split(r[3], ' ')) {
      if (!c.empty()) a.choices.insert(c);
    }
    p.arguments[r[0]] = a;
  }
  for (const auto& r : rows_of(framework + "_rules.txt")) {
    EXPECT_EQ(r.size(), 4u) << r.front();
    if (r.size() == 4) p.rules.push_back({r[0], r[1], r[2], r[3]});
  }
  return p;
}

bool is_int(std::string_view v) {
  long long x = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  return ec == std::errc() && ptr == v.data() + v.size();
}
bool is_float(const std::string& v) {
  if (v.empty()) return false;
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  return end == v.c_str() + v.size();
}

// Whether `value` is one of `kind` (kind without '?' or "list:"): as argparse's type, or as
// NeMo-Run reads a Python literal.
bool of_kind(const std::string& kind, const std::string& value) {
  if (kind == "int") return is_int(value);
  if (kind == "float") return is_float(value);
  if (kind == "bool") return value == "True" || value == "False";
  // a name: NeMo-Run would read True, False, None or a number as a Python literal instead
  if (kind == "str") return !value.empty() && value != "True" && value != "False" && value != "None" && !is_float(value);
  if (kind == "pattern") return is_int(value) || value.find('[') != std::string::npos;
  return false;  // truthy, int-tuple, other: no spelling a line should use
}

// What a line gives, by name.
struct Given {
  const Parser& parser;
  std::map<std::string, std::string> values;
  bool given(const std::string& name) const { return values.count(name) > 0; }
  // The value the framework runs with: the line's, else the parser's default; a switch given is
  // True.
  std::string value(const std::string& name) const {
    const auto it = values.find(name);
    const auto arg = parser.arguments.find(name);
    const bool is_switch = arg != parser.arguments.end() && arg->second.kind == "switch";
    if (it != values.end()) return is_switch ? "True" : it->second;
    return arg == parser.arguments.end() ? "" : arg->second.default_value;
  }
  // A term's value: another argument's when it names one, else the text.
  std::string operand(const std::string& text) const { return parser.arguments.count(text) ? value(text) : text; }
  double number(const std::string& product) const {
    double v = 1;
    for (const std::string& f : split(product, '*')) {
      const std::string x = operand(f);
      v *= is_float(x) ? std::strtod(x.c_str(), nullptr) : std::numeric_limits<double>::quiet_NaN();
    }
    return v;
  }

  bool term(const std::string& t) const {
    if (t == "-") return true;
    if (t.starts_with("!")) return !given(t.substr(1));
    if (const std::size_t at = t.find("!="); at != std::string::npos) {
      return value(t.substr(0, at)) != operand(t.substr(at + 2));
    }
    if (const std::size_t at = t.find('='); at != std::string::npos) {
      return value(t.substr(0, at)) == operand(t.substr(at + 1));
    }
    if (const std::size_t at = t.find('>'); at != std::string::npos) {
      return number(t.substr(0, at)) > number(t.substr(at + 1));
    }
    return given(t);
  }
  // Alternatives joined by '|', each of terms joined by '&'.
  bool holds(const std::string& expr) const {
    for (const std::string& alternative : split(expr, '|')) {
      bool all = true;
      for (const std::string& t : split(alternative, '&')) all = all && term(t);
      if (all) return true;
    }
    return false;
  }
};

// What the check of a line found, and how much it checked.
struct Findings {
  std::size_t lines = 0, arguments = 0, values = 0, choices = 0, rules = 0;
  std::set<std::string> names;                  // every argument some line gave
  std::map<std::string, std::size_t> problems;  // problem -> lines with it
  std::map<std::string, std::string> example;   // problem -> one line with it
};

void check_line(const Parser& p, const LaunchLine& line, const std::string& context, Findings& f) {
  ++f.lines;
  Given g{p, {}};
  std::set<std::string> problems;
  for (const LaunchArgument& a : line.arguments) {
    ++f.arguments;
    f.names.insert(a.name);
    if (!g.values.emplace(a.name, a.value).second) problems.insert(a.name + " given twice");
    const auto it = p.arguments.find(a.name);
    if (it == p.arguments.end()) {
      problems.insert(a.name + ": not an argument of the parser");
      continue;
    }
    const Argument& arg = it->second;
    if (arg.kind == "switch") {
      if (!a.value.empty()) problems.insert(a.name + " is a switch, given a value");
      continue;
    }
    ++f.values;
    std::string kind = arg.kind;
    const bool nullable = kind.ends_with("?");
    if (nullable) kind.pop_back();
    std::vector<std::string> items = {a.value};
    if (kind.starts_with("list:")) {
      kind = kind.substr(5);
      // argparse's nargs takes shell words; torchtitan's list[str] one comma-separated word
      items = split(a.value, line.framework == LaunchFramework::Torchtitan ? ',' : ' ');
    }
    for (const std::string& v : items) {
      if (nullable && v == "None") continue;
      if (!of_kind(kind, v)) problems.insert(a.name + " " + a.value + ": not of kind " + arg.kind);
      if (!arg.choices.empty()) {
        ++f.choices;
        if (!arg.choices.count(v)) problems.insert(a.name + " " + v + ": not among its choices");
      }
    }
  }
  for (const Rule& r : p.rules) {
    ++f.rules;
    bool broken = false;
    if (r.kind == "excludes") broken = g.holds(r.when) && g.holds(r.then);
    if (r.kind == "requires") broken = g.holds(r.when) && !g.holds(r.then);
    if (r.kind == "forbidden") broken = g.holds(r.when);
    if (r.kind == "multiple" && g.holds(r.when)) {
      const std::size_t at = r.then.find('%');
      const double x = g.number(r.then.substr(0, at)), y = g.number(r.then.substr(at + 1));
      broken = !(y > 0 && x / y == static_cast<double>(static_cast<long long>(x / y)));
    }
    if (r.kind == "atleast" && g.holds(r.when)) {
      const std::size_t at = r.then.find(">=");
      broken = !(g.number(r.then.substr(0, at)) >= g.number(r.then.substr(at + 2)));
    }
    if (broken) problems.insert(r.kind + " " + r.when + " " + r.then + " (" + r.source + ")");
  }
  for (const std::string& problem : problems) {
    if (f.problems[problem]++ == 0) f.example[problem] = context + "\n" + launch_text(line);
  }
}

// Every model and runtime shipped, and the reference runtime.
std::vector<std::string> names_in(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(PERFSWEEP_SOURCE_DIR) / folder)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The shapes a model's layouts take: tensor parallelism that divides its heads and key/value
// heads (Megatron-Core core_v0.15.3's TransformerConfig needs both), and the pipeline splits.
struct Shape {
  std::int64_t tp, pp, dp, cp, interleave, first, last;
};
std::vector<Shape> shapes_of(const Transformer& m) {
  std::int64_t tp = 1;
  while (tp < 8 && m.h % (2 * tp) == 0 && m.kv() % (2 * tp) == 0) tp *= 2;
  const std::int64_t small = std::min<std::int64_t>(tp, 2);
  std::vector<Shape> out = {
      {tp, 1, 8, 1, 1, 0, 0},      // tensor parallelism within a node, data parallelism over 8
      {1, 1, 16, 1, 1, 0, 0},      // data parallelism only
      {small, 4, 4, 1, 1, 0, 0},   // pipeline, even where 4 divides the depth
      {small, 4, 4, 1, 2, 0, 0},   // interleaved
      {tp, 2, 4, 2, 1, 0, 0},      // context parallelism
  };
  // uneven stages as the search balances them (a block's time, the ends a block's half), and
  // the slotted partition an interleaved pipeline takes where the depth does not divide
  const StageBlocks uneven = balanced_stages(m.depth, 3, m.is_moe() ? m.moe.every : 1, 1, 0, 0.5, 0.5);
  if (uneven.first > 0) out.push_back({small, 3, 4, 1, 1, uneven.first, uneven.last});
  for (std::int64_t pp : {3, 5, 6, 7, 16}) {
    const StageBlocks slotted = slotted_stages(m.depth, pp, 2);
    if (slotted.first > 0) {
      out.push_back({small, pp, 2, 1, 2, slotted.first, slotted.last});
      break;
    }
  }
  return out;
}

// Every line of every model, runtime, framework, shape and option the runtime runs.
struct Sweep {
  Findings megatron, nemo, torchtitan;
  std::size_t layouts = 0, refused = 0;
};

Sweep sweep_lines() {
  const System sys = load_system_named("H100");
  const std::map<LaunchFramework, Parser> parsers = {{LaunchFramework::Megatron, load_parser("megatron")},
                                                     {LaunchFramework::Nemo, load_parser("nemo")},
                                                     {LaunchFramework::Torchtitan, load_parser("torchtitan")}};
  std::vector<Runtime> runtimes = {Runtime{}};
  for (const std::string& name : names_in("runtimes")) runtimes.push_back(load_runtime_named(name));
  // what no shipped runtime does but a runtime file may: FP8 weight gathers (delayed and current
  // scaling), unfused attention
  for (const char* name : {"megatron", "nemo"}) {
    Runtime gather = load_runtime_named(name);
    gather.name += " with fp8_weight_gather";
    gather.mechanisms.fp8.weight_gather = true;
    runtimes.push_back(gather);
  }
  Runtime unfused = load_runtime_named("megatron");
  unfused.name += " with flash_attention false";
  unfused.flash_attention = false;
  runtimes.push_back(unfused);
  Sweep s;
  for (const std::string& model_name : names_in("models")) {
    const Transformer m = load_model_named(model_name);
    for (const Runtime& rt : runtimes) {
      for (const Shape& shape : shapes_of(m)) {
        for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
          for (std::int64_t zero = 0; zero <= 3; ++zero) {
            if (!rt.runs(Strategy::OneD) || !rt.runs_zero(zero)) continue;
            for (Precision precision : {Precision::Bf16, Precision::Fp8}) {
              if (precision == Precision::Fp8 && rt.mechanisms.fp8.recipe == Fp8Recipe::None) continue;
              for (int k = 0; k < 4; ++k) {
                const Offload offload = static_cast<Offload>(k);
                if (!rt.runs_offload(offload)) continue;
                for (int comm = 0; comm < (shape.cp > 1 ? 3 : 1); ++comm) {
                 for (bool sp : {true, false}) {
                  if (!sp && shape.tp == 1) continue;
                  if (shape.cp > 1 && (m.vocab_size == 0 || !rt.runs_cp(static_cast<CpComm>(comm)))) continue;
                  Layout c;
                  c.tensor.tp1 = shape.tp;
                  c.tensor.cp = shape.cp;
                  c.pp = shape.pp;
                  c.dp = shape.dp;
                  c.mbs = 1;
                  Execution& x = c.exec;
                  x.recompute = r;
                  x.zero = zero;
                  x.precision = precision;
                  x.offload = offload;
                  x.cp_comm = static_cast<CpComm>(comm);
                  x.fp8_params = runtime_defaults(rt).fp8_params;
                  x.tp_comm_overlap = runtime_defaults(rt).tp_comm_overlap;
                  x.interleave = shape.interleave;
                  x.first_stage_blocks = shape.first;
                  x.last_stage_blocks = shape.last;
                  x.rank_order = rt.rank_order;
                  x.sequence_parallel = sp;
                  if (m.is_moe()) x.ep = std::min<std::int64_t>(2, c.dp);
                  set_placement(c, placed_axes(c.strategy), rank_order_shares(c, sys.nvlink_size));
                  Layout applied = c;
                  applied.attention = runtime_attention(rt, applied.attention);
                  const std::int64_t global_batch = c.dp * 16;
                  try {
                    validate_layout(sys, m, applied, global_batch, rt.mechanisms);
                    validate_runtime_layout(rt, applied);
                  } catch (const ConfigError&) {
                    ++s.refused;
                    continue;
                  }
                  ++s.layouts;
                  const std::string context = model_name + " under " + rt.name + ": " + execution_text(c.exec) +
                                              " tp=" + std::to_string(c.tensor.tp1) + " pp=" + std::to_string(c.pp) +
                                              " dp=" + std::to_string(c.dp) + " cp=" + std::to_string(c.tensor.cp);
                  for (const auto& [f, parser] : parsers) {
                    Findings& found = f == LaunchFramework::Megatron ? s.megatron
                                      : f == LaunchFramework::Nemo   ? s.nemo
                                                                     : s.torchtitan;
                    check_line(parser, launch_line(f, {m, c, rt, global_batch, sys.nvlink_size}), context, found);
                  }
                 }
                }
              }
            }
          }
        }
      }
    }
  }
  return s;
}

const Sweep& swept() {
  static const Sweep s = sweep_lines();
  return s;
}

// The lines are clean, and the sweep reached the arguments of every feature (`reached`).
void expect_clean(const Findings& f, const char* framework, std::size_t min_lines,
                  const std::vector<std::string>& reached) {
  std::cout << framework << ": " << f.lines << " lines, " << f.arguments << " arguments (" << f.names.size()
            << " distinct), " << f.values << " values (" << f.choices << " against choices), " << f.rules
            << " rule checks, " << f.problems.size() << " distinct problems\n";
  EXPECT_GT(f.lines, min_lines);
  for (const std::string& name : reached) EXPECT_TRUE(f.names.count(name)) << framework << ": no line gave " << name;
  for (const auto& [problem, count] : f.problems) {
    ADD_FAILURE() << framework << ": " << problem << " in " << count << " lines, e.g.\n" << f.example.at(problem);
  }
}

TEST(LaunchCheck, ShippedModelsAndRuntimes) {
  const Sweep& s = swept();
  std::cout << s.layouts << " layouts (" << s.refused << " combinations refused by validate_layout)\n";
  expect_clean(s.megatron, "megatron", 1000,
               {"--num-virtual-stages-per-pipeline-rank", "--decoder-first-pipeline-num-layers",
                "--account-for-loss-in-pipeline-split", "--context-parallel-size", "--cp-comm-type",
                "--expert-model-parallel-size", "--use-tp-pp-dp-mapping", "--recompute-method", "--use-megatron-fsdp",
                "--ckpt-format", "--optimizer-cpu-offload", "--use-precision-aware-optimizer", "--grad-reduce-in-bf16",
                "--accumulate-allreduce-grads-in-fp32", "--fp8-recipe", "--fp8-param-gather", "--tp-comm-overlap",
                "--rotary-base", "--use-rope-scaling", "--norm-epsilon", "--make-vocab-size-divisible-by",
                "--moe-token-dispatcher-type"});
  expect_clean(s.nemo, "nemo", 1000,
               {"trainer.strategy.num_layers_in_first_pipeline_stage",
                "trainer.strategy.account_for_loss_in_pipeline_split", "model.config.cp_comm_type",
                "trainer.strategy.use_tp_pp_dp_mapping", "trainer.strategy.fsdp", "trainer.strategy.save_ckpt_format",
                "optim.config.use_precision_aware_optimizer", "model.config.cpu_offloading", "trainer.plugins.fp8",
                "trainer.plugins.fp8_param_gather", "model.config.rotary_base", "model.config.layernorm_epsilon",
                "model.config.make_vocab_size_divisible_by"});
  expect_clean(s.torchtitan, "torchtitan", 1000,
               {"--parallelism.context_parallel_degree", "--parallelism.expert_parallel_degree",
                "--parallelism.pipeline_parallel_layers_per_stage", "--parallelism.data_parallel_replicate_degree",
                "--parallelism.fsdp_reshard_after_forward", "--training.enable_cpu_offload", "--model.converters",
                "--quantize.linear.float8.enable_fsdp_float8_all_gather", "--parallelism.enable_async_tensor_parallel"});
}

// The checker itself: a line with an unknown argument, a value of the wrong kind or outside the
// choices, a switch given a value, an argument twice and each kind of rule broken, each found.
TEST(LaunchCheck, CheckerFindsEachKindOfProblem) {
  const Parser p = load_parser("megatron");
  LaunchLine line;
  line.framework = LaunchFramework::Megatron;
  line.arguments = {{"--no-such-flag", ""},
                    {"--tensor-model-parallel-size", "two"},
                    {"--normalization", "BatchNorm"},
                    {"--bf16", "yes"},
                    {"--fp16", ""},
                    {"--micro-batch-size", "1"},
                    {"--micro-batch-size", "2"},
                    {"--tp-comm-overlap", ""},
                    {"--batch-size", "4"},
                    {"--num-attention-heads", "12"},
                    {"--seq-length", "4096"},
                    {"--max-position-embeddings", "2048"}};
  Findings f;
  check_line(p, line, "test", f);
  std::set<std::string> found;
  for (const auto& [problem, count] : f.problems) found.insert(problem.substr(0, problem.find(" (")));
  for (const char* expected : {"--no-such-flag: not an argument of the parser",
                               "--tensor-model-parallel-size two: not of kind int",
                               "--normalization BatchNorm: not among its choices", "--bf16 is a switch, given a value",
                               "--micro-batch-size given twice", "excludes --fp16 --bf16",
                               "requires --tp-comm-overlap --sequence-parallel&--tensor-model-parallel-size>1",
                               "forbidden --batch-size -", "atleast - --max-position-embeddings>=--seq-length"}) {
    EXPECT_TRUE(found.count(expected)) << expected;
  }
  // heads 12 over the (unparsable, so not a number) tensor size: the multiple rule fails too
  EXPECT_TRUE(found.count("multiple - --num-attention-heads%--tensor-model-parallel-size"));
}

// torchtitan's flavors (torchtitan_flavors.txt, read from its source) have the shapes of the
// models the line names them for, and the numerics the writer compares with (kTorchtitanLlama3 in
// io/launch.cpp); where the model's differ, the line says so.
TEST(LaunchCheck, TorchtitanFlavorsAreTheModels) {
  std::map<std::string, std::vector<std::string>> flavors;
  for (const auto& r : rows_of("torchtitan_flavors.txt")) flavors[r[0] + " " + r[1]] = r;
  std::size_t checked = 0;
  for (const std::string& name : names_in("models")) {
    const Transformer m = load_model_named(name);
    Layout c;
    const LaunchLine line = launch_line(LaunchFramework::Torchtitan, {m, c, Runtime{}, 16, 8});
    std::string model_name, flavor;
    for (const LaunchArgument& a : line.arguments) {
      if (a.name == "--model.name") model_name = a.value;
      if (a.name == "--model.flavor") flavor = a.value;
    }
    if (flavor.empty()) continue;
    ++checked;
    const auto it = flavors.find(model_name + " " + flavor);
    ASSERT_NE(it, flavors.end()) << name << ": " << model_name << " " << flavor;
    const std::vector<std::string>& f = it->second;
    ASSERT_EQ(f.size(), 11u) << name;
    EXPECT_EQ(f[2], std::to_string(m.depth)) << name;
    EXPECT_EQ(f[3], std::to_string(m.e)) << name;
    EXPECT_EQ(f[4], std::to_string(m.h)) << name;
    EXPECT_EQ(f[5], std::to_string(m.kv())) << name;
    EXPECT_EQ(f[6], std::to_string(m.f)) << name;
    EXPECT_EQ(f[7], std::to_string(m.vocab_size)) << name;
    EXPECT_EQ(std::strtod(f[8].c_str(), nullptr), 500000) << name;  // the writer's kTorchtitanLlama3
    EXPECT_EQ(std::strtod(f[9].c_str(), nullptr), 1e-5) << name;
    EXPECT_EQ(std::strtod(f[10].c_str(), nullptr), 8) << name;
    const bool same = m.rope_theta == 500000 && m.norm_epsilon == 1e-5 && m.rope_scaling_factor == 8;
    EXPECT_EQ(launch_text(line).find("flavor fixes") == std::string::npos, same) << launch_text(line);
  }
  EXPECT_EQ(checked, 3u);  // llama3_8b, llama3_70b, llama3_405b
}

}  // namespace
}  // namespace perfsweep
