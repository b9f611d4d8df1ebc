#include "model/plan.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace perfsweep {

const StrategyPlan& plan_of(Strategy strategy) {
  // each strategy's preset of axes (model/axes.hpp)
  static constexpr StrategyPlan kPlans[] = {
      {Strategy::OneD, "1d", axis_mask("tp cp dp pp ep etp vp mbs"), grid_axes("tp1 tp2 cp"), grid_axes("cp dp")},
      {Strategy::TwoD, "2d", axis_mask("tp1 tp2 dp pp vp mbs nb"), grid_axes("tp2 cp"), grid_axes("cp dp")},
      {Strategy::TwoDSeqp, "2d-seqp", axis_mask("tp1 tp2 dp pp ep etp vp mbs"), grid_axes("tp1 tp2 cp"),
       grid_axes("tp2 cp dp")},
  };
  return kPlans[static_cast<std::size_t>(strategy)];
}

std::string key_flag(std::string_view key) {
  std::string flag = "--" + std::string(key);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string axis_strategies(std::size_t axis) {
  std::string out;
  std::size_t n = 0;
  for (const Strategy s : {Strategy::OneD, Strategy::TwoD, Strategy::TwoDSeqp}) {
    if (!has_axis(plan_of(s), axis)) continue;
    out += std::string(n++ == 0 ? "" : " or ") + plan_of(s).name;
  }
  return n == 3 ? "every strategy" : out;
}

const PlacedAxes& placed_axes(Strategy strategy) {
  static const std::array<PlacedAxes, 3> kPlaced = [] {
    std::array<PlacedAxes, 3> out{};
    for (std::size_t s = 0; s < out.size(); ++s) {
      const StrategyPlan& plan = plan_of(static_cast<Strategy>(s));
      for (std::size_t i = 0; i < kAxisCount; ++i) {
        if (kAxes[i].placed() && has_axis(plan, i)) out[s].axis[out[s].count++] = static_cast<std::uint8_t>(i);
      }
    }
    return out;
  }();
  return kPlaced[static_cast<std::size_t>(strategy)];
}

std::int64_t leading_blocks_on_stage(const StageBlocks& b, std::int64_t pp, std::int64_t interleave,
                                     std::int64_t leading, std::int64_t stage) {
  using I = std::int64_t;
  auto overlap = [&](I start, I count) { return std::clamp<I>(leading - start, 0, count); };
  if (pp < 2) return overlap(0, b.first);
  const InterleavedChunks chunks = interleave > 1 ? interleaved_chunks(b, pp, interleave) : InterleavedChunks{};
  if (!chunks.valid && (b.chunk == 0 || interleave < 2)) {
    const I start = stage == 0 ? 0 : b.first + (stage - 1) * b.middle;
    return overlap(start, stage == 0 ? b.first : stage == pp - 1 ? b.last : b.middle);
  }
  I start = 0, held = 0;
  for (I v = 0; v < interleave && start < leading; ++v) {
    for (I k = 0; k < pp && start < leading; ++k) {
      const I size = chunk_blocks(b, chunks, pp, interleave, k, v);
      if (k == stage) held += overlap(start, size);
      start += size;
    }
  }
  return held;
}

StageBlocks nanotron_stage_blocks(const Transformer& m, std::int64_t pp) {
  StageBlocks b;
  if (pp < 2) {
    b.first = b.middle = b.last = m.depth;
    return b;
  }
  const double e = static_cast<double>(m.e), f = static_cast<double>(m.f);
  const double block = 4 * e * e + 3 * f * e;
  const double total = block * static_cast<double>(m.depth) + static_cast<double>(m.vocab_size) * e;
  const auto record = [&](std::int64_t stage, std::int64_t blocks) {
    if (stage == 0) {
      b.first = blocks;
    } else if (stage == pp - 1) {
      b.last = blocks;
    } else if (blocks > b.middle) {
      b.middle = blocks;
      b.middle_index = stage;
    }
  };
  std::int64_t stage = 0, blocks = 0;
  double cumulative = 0;
  for (std::int64_t i = 0; i < m.depth; ++i) {
    ++blocks;
    cumulative += block;
    if (cumulative > total * static_cast<double>(stage + 1) / static_cast<double>(pp) && stage + 1 < pp) {
      record(stage, blocks);
      ++stage;
      blocks = 0;
    }
  }
  record(stage, blocks);
  for (std::int64_t k = stage + 1; k < pp; ++k) record(k, 0);  // stages the blocks did not reach
  if (pp == 2) b.middle = b.first;                                // no middle stage
  return b;
}

namespace {
const ExecutionOption& option(std::string_view key) { return *find_execution_option(key); }
}  // namespace

const char* recompute_name(Recompute r) { return option("recompute").names[static_cast<std::size_t>(r)]; }
const char* param_layout_name(ParamLayout p) { return option("layout").names[static_cast<std::size_t>(p)]; }

Recompute parse_recompute(const std::string& text, const std::string& flag) {
  return static_cast<Recompute>(parse_option_value(option("recompute"), text, flag));
}

std::string config_key_names(Strategy strategy, KeyKind kind) {
  std::string out;
  const StrategyPlan& plan = plan_of(strategy);
  for (const ConfigKey& k : kConfigKeys) {
    if (k.kind != kind || !k.applies(plan)) continue;
    if (!out.empty()) out += ',';
    out += k.name;
  }
  return out;
}

std::vector<std::pair<const char*, std::string>> execution_values(const Execution& x) {
  std::vector<std::pair<const char*, std::string>> out;
  for (const ExecutionOption& o : kExecutionOptions) out.emplace_back(o.key, option_value_name(o, o.get(x)));
  return out;
}

std::string execution_text(const Execution& x) { return execution_text(x, {}); }

std::string execution_text(const Execution& x, std::string_view param_layout) {
  std::string out;
  for (const ExecutionOption& o : kExecutionOptions) {
    if (!option_shown(o, x)) continue;
    if (!out.empty()) out += ' ';
    out += o.key;
    out += '=';
    if (!param_layout.empty() && std::string_view(o.key) == "layout") {
      out += param_layout;
    } else {
      out += option_value_name(o, o.get(x));
    }
  }
  return out;
}

}  // namespace perfsweep
