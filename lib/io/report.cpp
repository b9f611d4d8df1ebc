#include "io/report.hpp"

#include "core/csv.hpp"
#include "core/hash.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"
#include "core/human.hpp"
#include "io/json_writer.hpp"
#include "model/comm_calibration.hpp"
#include "model/kernel_calibration.hpp"

namespace perfsweep {

std::string_view strategy_name(Strategy s) { return plan_of(s).name; }

Strategy parse_strategy(const std::string& s) {
  for (Strategy k : {Strategy::OneD, Strategy::TwoD, Strategy::TwoDSeqp}) {
    if (s == plan_of(k).name) return k;
  }
  if (s == "2d-seq") return Strategy::TwoDSeqp;  // the reference's spelling
  throw InputError("--strat must be 1d, 2d, 2d-seqp (or, for configs and sweep, a list of them or all), got '" + s + "'");
}

std::vector<Strategy> parse_strategies(const std::string& text) {
  if (text == "all") return {Strategy::OneD, Strategy::TwoD, Strategy::TwoDSeqp};
  std::vector<Strategy> out;
  for (const std::string& item : split_flag_list(text, "--strat")) {
    if (item == "all") throw InputError("--strat all stands alone, got '" + text + "'");
    const Strategy s = parse_strategy(item);
    if (std::find(out.begin(), out.end(), s) != out.end()) {
      throw InputError("--strat lists " + std::string(strategy_name(s)) + " twice, got '" + text + "'");
    }
    out.push_back(s);
  }
  return out;
}

std::vector<AttentionMode> parse_attentions(const std::string& modes, bool recompute, Strategy strategy) {
  const std::vector<std::string> items = split_flag_list(modes, "--attention");
  std::vector<AttentionMode> out;
  for (const std::string& mode : items) {
    // in a list, --attention-recompute is the unfused mode's (flash recomputes inside its kernel)
    out.push_back(parse_attention(mode, recompute && (items.size() == 1 || mode != "flash"), strategy));
  }
  return out;
}

AttentionMode parse_attention(const std::string& mode, bool recompute, Strategy strategy) {
  if (mode != "flash" && mode != "unfused") throw InputError("--attention must be flash or unfused, got '" + mode + "'");
  AttentionMode a;
  a.flash = mode == "flash";
  if (recompute) {
    if (a.flash) {
      throw InputError("--attention-recompute goes with --attention unfused (flash attention recomputes inside its "
                       "kernel)");
    }
    if (strategy != Strategy::OneD) {
      throw InputError("--attention-recompute is modeled for --strat 1d only (the reference's sa_1d), got --strat " +
                       std::string(strategy_name(strategy)));
    }
    a.recompute = true;
  }
  return a;
}

std::string_view attention_name(const AttentionMode& a) {
  if (a.flash) return "flash";
  return a.recompute ? "unfused with recompute" : "unfused";
}

std::vector<std::pair<const char*, std::int64_t>> config_keys(const Layout& c, bool all) {
  std::vector<std::pair<const char*, std::int64_t>> out;
  for_each_config_key(c, KeyKind::Degree, [&](const char* name, std::int64_t v) { out.emplace_back(name, v); }, !all);
  return out;
}

std::vector<std::pair<const char*, std::int64_t>> nv_keys(const Layout& c, bool all) {
  std::vector<std::pair<const char*, std::int64_t>> out;
  for_each_config_key(c, KeyKind::Placement, [&](const char* name, std::int64_t v) { out.emplace_back(name, v); }, !all);
  return out;
}

CommUse comm_use(const LayerResult& row, bool pipeline_row, const Layout& layout) {
  CommUse u;
  // A pipeline row times its transfers only between stages (pp > 1).
  if (pipeline_row && layout.pp <= 1) return u;
  for (const CommSet* set : {&row.cost.comm_fwd, &row.cost.comm_bwd}) {
    for (std::uint8_t i = 0; i < set->count; ++i) {
      const Collective& c = set->items[i];
      if (c.type != CommType::None && c.group > 1 && c.volume_gb > 0) ++u.collectives;
    }
  }
  u.calibrated = row.calibrated_fwd + row.calibrated_bwd;
  return u;
}

std::string_view comm_use_name(const CommUse& u) {
  if (u.collectives == 0) return "none";
  if (u.calibrated == 0) return "analytical";
  return u.calibrated >= u.collectives ? "calibrated" : "mixed";
}

namespace {

// Whether the stages hold different numbers of blocks: the layout gives a stage's blocks
// (Execution::first_stage_blocks, last_stage_blocks), or the runtime partitions them itself.
bool partitioned(const Evaluation& ev, const Layout& c) { return stages_partitioned(c, ev.stage_partition); }
// Whether reports show the execution: options beyond the reference's, or a runtime that
// partitions the stages itself.
bool shows_execution(const Evaluation& ev, const Layout& c) {
  return !(c.exec == Execution{}) || ev.stage_partition != StagePartition::Even;
}

// Every row of an evaluation (mlp and sa layers, then dp and pp) with its module name.
template <typename F>
void for_each_row(const Evaluation& ev, F&& f) {
  for (const auto& [name, mod] : {std::pair{"mlp", &ev.mlp}, {"sa", &ev.sa}, {"embed", &ev.first_stage},
                                  {"head", &ev.last_stage}}) {
    for (int i = 0; i < mod->count; ++i) f(name, mod->layers[static_cast<std::size_t>(i)]);
  }
  f("dp", ev.dp_row);
  f("pp", ev.pp_row);
}

CommUse row_use(const char* module, const LayerResult& r, const Layout& layout) {
  return comm_use(r, std::string_view(module) == "pp", layout);
}

CommUse total_use(const Evaluation& ev, const Layout& layout) {
  CommUse total;
  for_each_row(ev, [&](const char* module, const LayerResult& r) {
    const CommUse u = row_use(module, r, layout);
    total.collectives += u.collectives;
    total.calibrated += u.calibrated;
  });
  return total;
}

void comm_json(JsonWriter& w, const char* key, const char* type_key, const CommSet& set) {
  if (set.is_list) {
    w.key(key).begin_array();
    for (std::uint8_t i = 0; i < set.count; ++i) w.value(set.items[i].volume_gb);
    w.end_array();
    w.key(type_key).begin_array();
    for (std::uint8_t i = 0; i < set.count; ++i) w.value(comm_type_name(set.items[i].type));
    w.end_array();
  } else {
    w.key(key).value(set.items[0].volume_gb);
    w.key(type_key).value(comm_type_name(set.items[0].type));
  }
}

// Scalar per-layer fields after the communication columns, in the reference's order.
struct PassField {
  const char* name;
  double PassTime::*member;
};
constexpr PassField kPassFields[] = {{"", &PassTime::t},
                                     {"_comm", &PassTime::comm},
                                     {"_comp", &PassTime::comp},
                                     {"_mem", &PassTime::mem},
                                     {"", &PassTime::intensity}};

void layer_json(JsonWriter& w, const LayerResult& r, const CommUse& use, bool fp8) {
  const LayerCost& c = r.cost;
  w.begin_object();
  w.key("name").value(std::string_view(c.name));
  w.key("weights_mem").value(c.weights_mem);
  w.key("weights_grad_mem").value(c.weights_grad_mem);
  w.key("flops_fwd").value(c.flops_fwd);
  w.key("activation_buffer").value(c.activation_buffer);
  comm_json(w, "comm_fwd", "comm_fwd_type", c.comm_fwd);
  w.key("flops_bwd").value(c.flops_bwd);
  comm_json(w, "comm_bwd", "comm_bwd_type", c.comm_bwd);
  for (const auto& [pass, time] : {std::pair{"fwd", &r.fwd}, {"bwd", &r.bwd}}) {
    for (const PassField& f : kPassFields) {
      const std::string name = f.member == &PassTime::intensity ? std::string("intensity_") + pass
                                                                  : std::string("t_") + pass + f.name;
      w.key(name).value(time->*f.member);
    }
  }
  w.key("t").value(r.t);
  if (c.overlap == Overlap::ContextRing) {
    // context parallelism's ring: its steps and the transfer time the attention hides (not in t)
    w.key("ring_steps").value(c.ring_steps);
    w.key("t_fwd_comm_hidden").value(r.fwd.hidden);
    w.key("t_bwd_comm_hidden").value(r.bwd.hidden);
  }
  if (use.collectives > 0) w.key("comm_model").value(comm_use_name(use));
  if (fp8) {
    // the GEMM's data type and its FP8 quantization kernels (model/precision.hpp)
    w.key("precision").value(std::string_view(kPrecisionNames[static_cast<std::size_t>(c.precision)]));
    w.key("cast_fwd_gb").value(c.quant[kernels::kFwd].total_gb());
    w.key("cast_bwd_gb").value(c.quant[kernels::kBwd].total_gb());
    w.key("t_fwd_cast").value(r.fwd.cast);
    w.key("t_bwd_cast").value(r.bwd.cast);
  }
  w.end_object();
}

void module_json(JsonWriter& w, const char* key, const Module& m, const Layout& layout) {
  w.key(key).begin_array();
  for (int i = 0; i < m.count; ++i) {
    const LayerResult& r = m.layers[static_cast<std::size_t>(i)];
    layer_json(w, r, row_use(key, r, layout), layout.exec.precision != Precision::Bf16);
  }
  w.end_array();
}

}  // namespace

namespace {
constexpr UnitField<Efficiency> kEfficiencyFields[] = {
    {"tokens_per_s", &Efficiency::tokens_per_s, "tokens/s"},
    {"tokens_per_s_per_gpu", &Efficiency::tokens_per_s_per_gpu, "tokens/s"},
    {"model_flops_per_token", &Efficiency::model_flops_per_token, "FLOP"},
    {"model_tflops_per_gpu", &Efficiency::model_tflops_per_gpu, "TFLOP/s"},
    {"mfu", &Efficiency::mfu, "1"},
    {"mfu_precision", &Efficiency::mfu_precision, "1"},
};
constexpr UnitField<TrainingBudget> kBudgetFields[] = {
    {"tokens", &TrainingBudget::tokens, "tokens"},       {"steps", &TrainingBudget::steps, "steps"},
    {"train_seconds", &TrainingBudget::seconds, "s"},    {"train_days", &TrainingBudget::days, "days"},
    {"gpu_hours", &TrainingBudget::gpu_hours, "GPU-h"},  {"cost", &TrainingBudget::cost, "currency"},
};

// Efficiency fields go beyond the reference's output: a modern model's, a runtime's, or asked for.
bool shows_efficiency(const Evaluation& ev) { return ev.model_section || ev.under_runtime() || ev.budget.tokens > 0; }
// The budget's fields, the cost only when priced.
bool shows(const UnitField<TrainingBudget>& f, const TrainingBudget& b) {
  return f.member != &TrainingBudget::cost || b.gpu_hour_cost > 0;
}

void estimate_json_body(JsonWriter& w, const Evaluation& ev, const Layout& layout, const System& system);
}  // namespace

std::string estimate_json(const Evaluation& ev, const Layout& layout, const System& system) {
  JsonWriter w;
  w.begin_object();
  estimate_json_body(w, ev, layout, system);
  w.end_object();
  return w.str() + "\n";
}

std::string estimate_json(const Evaluation& ev, const Layout& layout, const System& system, const Transformer& model,
                          std::int64_t global_batch, bool placement_given, const LaunchLine* launch) {
  JsonWriter w;
  w.begin_object();
  w.key("inputs").begin_object();
  w.key("model").begin_object();
  w.key("name").value(std::string_view(model.name));
  w.key("seq_len").value(model.l);
  w.key("embed_dim").value(model.e);
  w.key("num_heads").value(model.h);
  w.key("depth").value(model.depth);
  w.key("ffn_dim").value(model.f);
  if (model.extends_reference()) {
    // The options beyond the reference's model (docs/models.md), so the output says what was costed.
    w.key("num_kv_heads").value(model.kv());
    w.key("mlp").value(std::string_view(model.mlp == MlpKind::SwiGlu ? "swiglu" : "gelu"));
    w.key("norm").value(std::string_view(model.norm == NormKind::RmsNorm ? "rmsnorm" : "layernorm"));
    w.key("bias").value(model.bias);
    w.key("dropout").value(model.dropout);
    w.key("causal").value(model.causal);
    w.key("vocab_size").value(model.vocab_size);
    w.key("tie_embeddings").value(model.tie_embeddings);
    w.key("learned_positions").value(model.learned_positions);
    w.key("logits_dtype").value(std::string_view(model.logits_dtype == LogitsDtype::Bf16 ? "bf16" : "fp32"));
    if (model.is_moe()) {
      w.key("moe").begin_object();
      w.key("experts").value(model.moe.experts);
      w.key("top_k").value(model.moe.top_k);
      w.key("ffn_dim").value(model.moe.ffn_dim);
      w.key("capacity_factor").value(model.moe.capacity_factor);
      w.key("every").value(model.moe.every);
      w.key("shared_experts").value(model.moe.shared_experts);
      if (model.moe.first_dense > 0) w.key("first_dense").value(model.moe.first_dense);
      if (model.moe.router_bias) w.key("router_bias").value(true);
      if (model.moe.expert_bias) w.key("expert_bias").value(true);
      w.end_object();
    }
    if (model.mtp_layers > 0) w.key("mtp_layers").value(model.mtp_layers);
    // the attention options, where set (the keys of older outputs stay)
    if (model.qkv_bias) w.key("qkv_bias").value(true);
    if (model.head_dim_given > 0) w.key("head_dim").value(model.head_dim_given);
    if (model.out_bias) w.key("out_bias").value(true);
    if (model.window > 0) w.key("sliding_window").value(model.window);
    if (model.global_every > 0) w.key("global_every").value(model.global_every);
    if (model.attention_sinks) w.key("attention_sinks").value(true);
    if (model.qk_norm) w.key("qk_norm").value(true);
    if (model.post_norms) w.key("post_norms").value(true);
    if (model.is_mla()) {
      w.key("mla").begin_object();
      w.key("q_lora_rank").value(model.mla.q_lora_rank);
      w.key("kv_lora_rank").value(model.mla.kv_lora_rank);
      w.key("qk_nope_head_dim").value(model.mla.qk_nope_head_dim);
      w.key("qk_rope_head_dim").value(model.mla.qk_rope_head_dim);
      w.key("v_head_dim").value(model.mla.v_head_dim);
      w.end_object();
    }
  }
  w.end_object();
  if (ev.under_runtime()) {
    w.key("runtime").begin_object();
    w.key("name").value(std::string_view(ev.runtime));
    w.key("fnv1a").value(hex64(ev.runtime_hash));
    w.end_object();
  }
  w.key("system").begin_object();
  w.key("name").value(std::string_view(system.name));
  w.key("nvs").value(system.nvlink_size);
  for (const SystemKey& f : kSystemKeys) w.key(f.name).value(system.*f.member);
  if (system.calibration) w.key("calibration").value(std::string_view(system.calibration->file));
  if (system.kernel_calibration) w.key("kernels").value(std::string_view(system.kernel_calibration->file));
  w.end_object();
  w.key("strategy").value(strategy_name(layout.strategy));
  w.key("global_batch_size").value(global_batch);
  for (const auto& [k, v] : config_keys(layout)) w.key(k).value(v);
  for (const auto& [k, v] : nv_keys(layout)) w.key(k).value(v);
  if (partitioned(ev, layout)) {
    w.key("first_stage_blocks").value(layout.exec.first_stage_blocks);
    w.key("last_stage_blocks").value(layout.exec.last_stage_blocks);
  }
  w.key("placement").value(std::string_view(placement_given ? "given" : "fastest"));
  w.end_object();
  // The unit of every number that follows, from the fields' registries (GB: 1e9 bytes).
  w.key("units").begin_object();
  w.key("modules").value(std::string_view("flops TFLOP; memory, activations and communication GB; times s"));
  w.key("throughput").value(std::string_view("samples/s"));
  auto units = [&w](const char* section, const auto& fields) {
    w.key(section).begin_object();
    for (const auto& f : fields) w.key(f.name).value(std::string_view(f.unit));
    w.end_object();
  };
  units("system", kSystemKeys);
  units("totals", kTotalsFields);
  if (ev.under_runtime()) units("runtime_totals", kRuntimeTotalsFields);
  if (layout.exec.offload != Offload::None) units("offload_totals", kOffloadTotalsFields);
  if (shows_efficiency(ev)) units("efficiency", kEfficiencyFields);
  if (ev.budget.tokens > 0) units("training", kBudgetFields);
  if (ev.model_section) units("model", kModelTotalsFields);
  w.end_object();
  estimate_json_body(w, ev, layout, system);
  if (launch != nullptr) {
    w.key("launch").value(std::string_view(launch_arguments_text(*launch)));
    w.key("launch_framework").value(std::string_view(launch_framework_info(launch->framework).name));
    w.key("launch_notes").begin_array();
    for (const std::string& n : launch->notes) w.value(std::string_view(n));
    w.end_array();
  }
  w.end_object();
  return w.str() + "\n";
}

namespace {
void estimate_json_body(JsonWriter& w, const Evaluation& ev, const Layout& layout, const System& system) {
  w.key("modules").begin_object();
  module_json(w, "mlp", ev.mlp, layout);
  module_json(w, "sa", ev.sa, layout);
  // The vocabulary's layers, only for a model that has one.
  if (ev.first_stage.count > 0) module_json(w, "embed", ev.first_stage, layout);
  if (ev.last_stage.count > 0) module_json(w, "head", ev.last_stage, layout);
  w.key("dp").begin_array();
  layer_json(w, ev.dp_row, row_use("dp", ev.dp_row, layout), false);
  w.end_array();
  w.key("pp").begin_array();
  layer_json(w, ev.pp_row, row_use("pp", ev.pp_row, layout), false);
  w.end_array();
  w.end_object();
  w.key("totals").begin_object();
  for (const TotalsField& f : kTotalsFields) w.key(f.name).value(ev.totals.*f.member);
  if (ev.under_runtime()) {
    for (const TotalsField& f : kRuntimeTotalsFields) w.key(f.name).value(ev.totals.*f.member);
  }
  if (layout.exec.offload != Offload::None) {
    for (const TotalsField& f : kOffloadTotalsFields) w.key(f.name).value(ev.totals.*f.member);
  }
  for (const auto& [k, v] : nv_keys(layout)) w.key(k).value(v);
  w.key("fits").value(ev.fits);
  const CommUse use = total_use(ev, layout);
  w.key("comm_model").value(comm_use_name(use));
  w.key("collectives").value(static_cast<std::int64_t>(use.collectives));
  w.key("calibrated_collectives").value(static_cast<std::int64_t>(use.calibrated));
  if (system.calibration) w.key("calibration").value(std::string_view(system.calibration->file));
  if (system.kernel_calibration) w.key("kernels").value(std::string_view(system.kernel_calibration->file));
  w.end_object();
  w.key("throughput").value(ev.throughput);
  // Tokens, model FLOP/s and MFU (model/efficiency.hpp), beyond the reference's output (a modern
  // model or a runtime), and a token budget's time and cost when one is asked.
  if (shows_efficiency(ev)) {
    w.key("efficiency").begin_object();
    for (const auto& f : kEfficiencyFields) w.key(f.name).value(ev.efficiency.*f.member);
    w.end_object();
  }
  if (ev.budget.tokens > 0) {
    w.key("training").begin_object();
    for (const auto& f : kBudgetFields) {
      if (shows(f, ev.budget)) w.key(f.name).value(ev.budget.*f.member);
    }
    w.end_object();
  }
  // Execution options beyond the reference's, only when any differs from it.
  if (shows_execution(ev, layout)) {
    const Execution& x = layout.exec;
    w.key("execution").begin_object();
    // every option (model/execution_options.hpp), the stages' blocks where partitioned
    for (const ExecutionOption& o : kExecutionOptions) {
      if (!o.searched() && !partitioned(ev, layout)) continue;
      const std::int64_t v = o.get(x);
      w.key(o.key);
      if (o.values == OptionValues::OnOff) {
        w.value(v != 0);
      } else if (o.values == OptionValues::Named) {
        w.value(std::string_view(o.names[static_cast<std::size_t>(v)]));
      } else {
        w.value(v);
      }
    }
    w.end_object();
  }
  if (ev.model_section) {
    w.key("model").begin_object();
    for (const ModelTotalsField& f : kModelTotalsFields) w.key(f.name).value(ev.model.*f.member);
    w.key("time_stage").value(ev.model.time_stage);
    w.key("memory_stage").value(ev.model.memory_stage);
    w.end_object();
  }
}
}  // namespace

namespace {

std::string comm_text(const CommSet& set, bool types) {
  std::string s;
  for (std::uint8_t i = 0; i < set.count; ++i) {
    if (i) s += ";";
    s += types ? std::string(comm_type_name(set.items[i].type)) : format_double(set.items[i].volume_gb);
  }
  return s;
}

// The text and CSV reports print numbers of the JSON report's body (every layer's, the totals,
// throughput, budget) and the efficiency figures; the JSON writer refuses a nonsensical number as it
// writes it (core/published.hpp), so they build that body first and print nothing on a refusal.
// The system there only names calibration files.
void check_published_numbers(const Evaluation& ev, const Layout& layout) {
  JsonWriter w(0);
  w.begin_object();
  estimate_json_body(w, ev, layout, System{});
  for (const auto& f : kEfficiencyFields) w.key(f.name).value(ev.efficiency.*f.member);
  w.end_object();
}

}  // namespace

std::string estimate_csv(const Evaluation& ev, const Layout& layout) {
  check_published_numbers(ev, layout);
  std::ostringstream o;
  o << "module,name,weights_mem,weights_grad_mem,flops_fwd,activation_buffer,comm_fwd,comm_fwd_type,flops_bwd,"
       "comm_bwd,comm_bwd_type,t_fwd,t_fwd_comm,t_fwd_comp,t_fwd_mem,intensity_fwd,t_bwd,t_bwd_comm,t_bwd_comp,"
       "t_bwd_mem,intensity_bwd,t,comm_model";
  const bool fp8 = layout.exec.precision != Precision::Bf16;
  if (fp8) o << ",precision,cast_fwd_gb,cast_bwd_gb,t_fwd_cast,t_bwd_cast";
  o << '\n';
  for_each_row(ev, [&](const char* module, const LayerResult& r) {
    const LayerCost& c = r.cost;
    o << module << ',' << c.name << ',' << format_double(c.weights_mem) << ',' << format_double(c.weights_grad_mem)
      << ',' << format_double(c.flops_fwd) << ',' << format_double(c.activation_buffer) << ','
      << comm_text(c.comm_fwd, false) << ',' << comm_text(c.comm_fwd, true) << ',' << format_double(c.flops_bwd)
      << ',' << comm_text(c.comm_bwd, false) << ',' << comm_text(c.comm_bwd, true);
    for (const PassTime* p : {&r.fwd, &r.bwd}) {
      o << ',' << format_double(p->t) << ',' << format_double(p->comm) << ',' << format_double(p->comp) << ','
        << format_double(p->mem) << ',' << format_double(p->intensity);
    }
    const CommUse use = row_use(module, r, layout);
    o << ',' << format_double(r.t) << ',' << (use.collectives > 0 ? comm_use_name(use) : "");
    if (fp8) {
      o << ',' << kPrecisionNames[static_cast<std::size_t>(c.precision)] << ',' << format_double(c.quant[0].total_gb()) << ','
        << format_double(c.quant[1].total_gb()) << ',' << format_double(r.fwd.cast) << ',' << format_double(r.bwd.cast);
    }
    o << '\n';
  });
  return o.str();
}

std::string estimate_csv_totals(const Evaluation& ev, const Layout& layout, const System& system) {
  check_published_numbers(ev, layout);
  std::ostringstream o;
  o << "quantity,value,unit\n";
  for (const TotalsField& f : kTotalsFields) o << f.name << ',' << format_double(ev.totals.*f.member) << ',' << f.unit << '\n';
  if (ev.under_runtime()) {
    for (const TotalsField& f : kRuntimeTotalsFields) {
      o << f.name << ',' << format_double(ev.totals.*f.member) << ',' << f.unit << '\n';
    }
    o << "runtime," << ev.runtime << ",\n";
  }
  if (layout.exec.offload != Offload::None) {
    for (const TotalsField& f : kOffloadTotalsFields) {
      o << f.name << ',' << format_double(ev.totals.*f.member) << ',' << f.unit << '\n';
    }
  }
  for (const auto& [k, v] : nv_keys(layout)) o << k << ',' << v << ",GPUs\n";
  o << "fits," << (ev.fits ? "true" : "false") << ",\n";
  o << "throughput," << format_double(ev.throughput) << ",samples/s\n";
  if (shows_efficiency(ev)) {
    for (const auto& f : kEfficiencyFields) o << f.name << ',' << format_double(ev.efficiency.*f.member) << ',' << f.unit << '\n';
  }
  for (const auto& f : kBudgetFields) {
    if (ev.budget.tokens > 0 && shows(f, ev.budget)) {
      o << f.name << ',' << format_double(ev.budget.*f.member) << ',' << f.unit << '\n';
    }
  }
  if (ev.model_section) {
    for (const ModelTotalsField& f : kModelTotalsFields) {
      o << f.name << ',' << format_double(ev.model.*f.member) << ',' << f.unit << '\n';
    }
  }
  if (partitioned(ev, layout)) {
    o << "first_stage_blocks," << layout.exec.first_stage_blocks << ",blocks\n";
    o << "last_stage_blocks," << layout.exec.last_stage_blocks << ",blocks\n";
  }
  if (ev.model_section || partitioned(ev, layout)) {
    o << "time_stage," << ev.model.time_stage << ",stage\n";
    o << "memory_stage," << ev.model.memory_stage << ",stage\n";
  }
  const CommUse use = total_use(ev, layout);
  o << "comm_model," << comm_use_name(use) << ",\n";
  o << "collectives," << use.collectives << ",\n";
  o << "calibrated_collectives," << use.calibrated << ",\n";
  // A path with a comma or quote is quoted, CSV style.
  if (system.calibration) {
    std::string path = system.calibration->file;
    if (path.find_first_of(",\"\n") != std::string::npos) {
      std::string q = "\"";
      for (char c : path) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      path = q + "\"";
    }
    o << "calibration," << path << ",\n";
  }
  return o.str();
}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// What bounds a pass: the largest of compute, exposed memory and exposed communication.
const char* bound_by(const PassTime& p) {
  if (p.comm >= p.comp && p.comm >= p.mem) return p.comm > 0 ? "comm" : "compute";
  return p.mem > p.comp ? "memory" : "compute";
}

}  // namespace

std::string axes_text() {
  std::ostringstream out;
  out << "The parallel axes (model/axes.hpp; docs/architecture.md):\n";
  for (std::size_t i = 0; i < kAxisCount; ++i) {
    const LayoutAxis& a = kAxes[i];
    const bool one_gpu = a.splits == AxisSplits::MicroBatches || a.splits == AxisSplits::Blocks;
    const char* gpus = a.gpus ? "" : one_gpu ? "; one GPU's work, not GPUs" : "; over the other axes' GPUs";
    out << '\n' << a.name << " (" << axis_strategies(i) << gpus << "): " << a.what
        << "\n  per layer: " << a.per_layer << "\n  per step:  " << a.per_step << "\n  NVLink:    " << a.nvlink;
    if (a.placed()) out << " (" << key_flag(a.nv_key) << ")";
    out << "\n  rule:      " << a.rule << '\n';
  }
  return out.str();
}

std::string estimate_text(const Evaluation& ev, const Layout& layout, const System& system, const Transformer& model,
                          std::int64_t global_batch) {
  check_published_numbers(ev, layout);
  std::ostringstream o;
  o << "perfsweep estimate: " << model.name << " on " << system.name << " (NVLink domain " << system.nvlink_size
    << "), strategy " << strategy_name(layout.strategy) << ", global batch " << global_batch << ", attention "
    << attention_name(layout.attention) << "\n";
  o << "configuration:";
  for (const auto& [k, v] : config_keys(layout)) o << ' ' << k << '=' << v;
  o << "\nNVLink placement:";
  for (const auto& [k, v] : nv_keys(layout)) o << ' ' << k << '=' << v;
  if (ev.under_runtime() && is_rank_order_placement(layout, system.nvlink_size)) {
    o << " (the rank order's, " << kRankOrderNames[static_cast<std::size_t>(layout.exec.rank_order)];
    std::int64_t used = 1;
    for (const auto& [k, v] : nv_keys(layout)) used *= v;
    if (used < system.nvlink_size && used < layout.n_gpus()) {
      o << "; " << used << " of each domain's " << system.nvlink_size << " GPUs";
    }
    o << ")";
  }
  o << "  | GPUs " << layout.n_gpus() << ", micro-batches " << global_batch / layout.dp / layout.mbs << "\n";
  if (shows_execution(ev, layout)) {
    o << "execution: " << execution_text(layout.exec, ev.param_layout) << "\n";
  }
  if (partitioned(ev, layout) || layout.exec.layout_chunk_blocks > 0) {
    const StageBlocks b = stage_blocks(model, layout.pp, layout.exec, ev.stage_partition);
    o << "pipeline stages: " << b.first << " blocks on the first, ";
    if (layout.pp > 2) o << b.middle << " on each of the " << layout.pp - 2 << " middle ones, ";
    o << b.last << " on the last";
    if (b.chunk > 0) {
      const std::int64_t v = layout.exec.interleave;
      o << "; chunks of " << b.chunk << " blocks, the first stage's first " << b.first - (v - 1) * b.chunk
        << " and the last stage's last " << b.last - (v - 1) * b.chunk;
    }
    o << "\n";
  }
  const bool runtime = ev.under_runtime();
  if (runtime) o << "runtime: " << ev.runtime << " (docs/runtimes.md)\n";
  o << "\n";

  // Two tables of one row per layer (costs, then times), each within 120 columns.
  char line[512];
  // Under fp8 precision each layer's data type and its quantization kernels' time.
  const bool fp8 = layout.exec.precision != Precision::Bf16;
  std::snprintf(line, sizeof line, "%-7s %-11s %10s %10s %17s %10s %10s %11s%s\n", "module", "layer", "fwd TFLOP",
                "bwd TFLOP", "HBM GB f/b", "weights GB", "acts GB", "comm GB f/b", fp8 ? "  dtype" : "");
  o << line;
  for_each_row(ev, [&](const char* module, const LayerResult& r) {
    const LayerCost& c = r.cost;
    double comm_f = 0, comm_b = 0;
    for (std::uint8_t i = 0; i < c.comm_fwd.count; ++i) comm_f += c.comm_fwd.items[i].volume_gb;
    for (std::uint8_t i = 0; i < c.comm_bwd.count; ++i) comm_b += c.comm_bwd.items[i].volume_gb;
    const std::string comm = fmt("%.3g", comm_f) + "/" + fmt("%.3g", comm_b);
    const std::string hbm = fmt("%.3g", c.mem_fwd) + "/" + fmt("%.3g", c.mem_bwd);
    const bool gemm = c.op == KernelOp::Gemm;
    std::snprintf(line, sizeof line, "%-7s %-11s %10.4g %10.4g %17s %10.4g %10.4g %11s%s%s\n", module, c.name, c.flops_fwd,
                  c.flops_bwd, hbm.c_str(), c.weights_mem, c.activation_buffer, comm.c_str(), fp8 && gemm ? "  " : "",
                  fp8 && gemm ? kPrecisionNames[static_cast<std::size_t>(c.precision)] : "");
    o << line;
  });
  o << "(HBM GB: memory traffic of the forward/backward pass";
  if (fp8) o << "; dtype: the GEMM's data type";
  o << ")\n\n";
  std::snprintf(line, sizeof line, "%-7s %-11s %8s %8s %11s %11s %11s %-8s %s%s\n", "module", "layer", "FLOP/B f",
                "comp/mem", "t_fwd ms", "t_bwd ms", "t_comm ms", "bound", "comm model", fp8 ? "   cast ms f/b" : "");
  o << line;
  for_each_row(ev, [&](const char* module, const LayerResult& r) {
    const LayerCost& c = r.cost;
    const CommUse use = row_use(module, r, layout);
    // TFLOP / GB = 1000 FLOP per byte
    const double flop_per_byte = c.mem_fwd > 0 ? 1e3 * c.flops_fwd / c.mem_fwd : 0;
    std::string cast = use.collectives > 0 ? std::string(comm_use_name(use)) : std::string("-");
    if (fp8 && (r.fwd.cast > 0 || r.bwd.cast > 0)) {
      cast.resize(std::max<std::size_t>(cast.size(), 13), ' ');
      cast += fmt("%.3g", r.fwd.cast * 1e3) + "/" + fmt("%.3g", r.bwd.cast * 1e3);
    }
    std::snprintf(line, sizeof line, "%-7s %-11s %8.4g %8.3g %11.4g %11.4g %11.4g %-8s %s\n", module, c.name,
                  flop_per_byte, r.fwd.intensity, r.fwd.t * 1e3, r.bwd.t * 1e3, (r.fwd.comm + r.bwd.comm) * 1e3,
                  bound_by(r.fwd.t >= r.bwd.t ? r.fwd : r.bwd), cast.c_str());
    o << line;
  });
  o << "(FLOP/B f: forward arithmetic intensity, FLOP per HBM byte; comp/mem: forward compute time / memory time,\n"
       " the reference's 'intensity'; bound: what dominates the longer pass";
  if (fp8) o << ";\n cast ms: the FP8 quantization kernels of the pass, part of its time (docs/fp8.md)";
  o << ")\n";
  if (layout.tensor.cp > 1) {
    // context parallelism's key/value exchange, exposed (in t_comm ms) and hidden behind the attention
    for_each_row(ev, [&](const char*, const LayerResult& r) {
      const LayerCost& c = r.cost;
      if (c.op != KernelOp::Attention) return;
      const Collective& f = c.comm_fwd.items[0];
      const Collective& b = c.comm_bwd.items[0];
      const char* link = f.fast_domain > 1 && f.fast_domain == f.group ? "NVLink" : "network";
      if (c.overlap == Overlap::ContextRing) {
        o << "context parallelism (" << c.name << "): ";
        if (c.comm_fwd.count > 1) {
          // a hierarchical exchange: all-to-alls over part of the group, the ring over the rest
          const Collective& a2a = c.comm_fwd.items[1];
          o << "all-to-all over " << a2a.group << " GPUs of cp=" << layout.tensor.cp << " ("
            << (a2a.fast_domain == a2a.group ? "NVLink" : "network") << ") of Q, K, V ("
            << fmt("%.4g", a2a.volume_gb * 1e3) << " MB), the heads split over them, then ";
        }
        o << "p2p ring over " << (c.ring_steps == layout.tensor.cp ? "cp=" : "") << c.ring_steps << " ("
          << (f.fast_domain > 1 ? "NVLink" : "network") << "), " << c.ring_steps - 1 << " transfers of "
          << fmt("%.4g", f.volume_gb * 1e3) << "/" << fmt("%.4g", b.volume_gb * 1e3)
          << " MB f/b (K, V; backward with dK, dV); exposed " << fmt("%.4g", r.fwd.comm * 1e3) << "/"
          << fmt("%.4g", r.bwd.comm * 1e3) << " ms, hidden behind the attention " << fmt("%.4g", r.fwd.hidden * 1e3)
          << "/" << fmt("%.4g", r.bwd.hidden * 1e3) << " ms\n";
      } else if (f.type == CommType::AllToAll) {
        const Collective& out = c.comm_fwd.items[1];
        o << "context parallelism (" << c.name << "): all-to-all over cp=" << layout.tensor.cp << " (" << link
          << ") of Q, K, V (" << fmt("%.4g", f.volume_gb * 1e3) << " MB) and the output (" << fmt("%.4g", out.volume_gb * 1e3)
          << " MB), the heads split over the group; backward the same of their gradients; exposed "
          << fmt("%.4g", r.fwd.comm * 1e3) << "/" << fmt("%.4g", r.bwd.comm * 1e3) << " ms f/b\n";
      } else {
        o << "context parallelism (" << c.name << "): all-gather of K, V over cp=" << layout.tensor.cp << " ("
          << link << "), " << fmt("%.4g", f.volume_gb * 1e3)
          << " MB gathered; backward all-gather and reduce-scatter of dK, dV; exposed " << fmt("%.4g", r.fwd.comm * 1e3)
          << "/" << fmt("%.4g", r.bwd.comm * 1e3) << " ms f/b\n";
      }
    });
  }
  const CommUse use = total_use(ev, layout);
  if (system.calibration) {
    o << "collectives: " << use.calibrated << " of " << use.collectives << " timed from the calibration "
      << system.calibration->file << ",\n the rest by the analytical model (collectives, placements, node counts or "
         "sizes it does not cover)\n\n";
  } else {
    o << "collectives: " << use.collectives << ", timed by the analytical model (no calibration)\n";
  }
  if (system.kernel_calibration) {
    o << "kernel times: fitted to GPU measurements, " << system.kernel_calibration->file << " (docs/validation.md)\n";
  } else {
    o << "kernel times: the reference's roofline, " << system.name << " is uncalibrated (not validated against "
      << "measured runs)\n";
  }
  if (!system.caveat.empty()) o << "caveat: " << system.caveat << "\n";
  o << "\n";

  const Totals& t = ev.totals;
  o << "step time " << fmt("%.6g", t.t) << " s, throughput " << fmt("%.6g", ev.throughput) << " samples/s, "
    << fmt("%.6g", t.flops_per_gpu / t.t) << " TFLOP/s per GPU achieved\n";
  const Efficiency& eff = ev.efficiency;
  o << "tokens " << fmt("%.6g", eff.tokens_per_s) << "/s (" << fmt("%.6g", eff.tokens_per_s_per_gpu)
    << "/s per GPU); model " << fmt("%.4g", eff.model_tflops_per_gpu) << " TFLOP/s per GPU, MFU "
    << fmt("%.1f", 100 * eff.mfu) << "% of the bf16 peak " << fmt("%g", system.matrix_flops_fp16);
  if (layout.exec.precision != Precision::Bf16) {
    // the peak of the data type the runtime's recipe runs the GEMMs in (fp8, mxfp8, nvfp4)
    o << " (" << fmt("%.1f", 100 * eff.mfu_precision) << "% of the "
      << data_type(eff.peak_type).name << " peak "
      << fmt("%g", eff.model_tflops_per_gpu / eff.mfu_precision) << ")";
  }
  o << "\n";
  o << "  (model FLOPs per token 6N + 12 L e T = " << fmt("%.4g", eff.model_flops_per_token)
    << ", as PaLM counts them)\n";
  if (ev.budget.tokens > 0) o << training_budget_text(ev.budget) << "\n";
  auto part = [&](const char* name, double v, double frac) {
    std::snprintf(line, sizeof line, "  %-28s %12.6g s  %6.2f %%\n", name, v, 100 * frac);
    o << line;
  };
  part("compute", t.t_comp, t.comp_frac);
  part("memory (exposed)", t.t_mem, t.mem_frac);
  part("tensor-parallel comm", t.t_tp_comm, t.tp_comm_frac);
  part("data-parallel comm", t.t_dp_comm, t.dp_comm_frac);
  part("pipeline comm", t.t_pp_comm, t.pp_comm_frac);
  part("pipeline bubble", t.t_bubble, t.bubble_frac);
  if (runtime) {
    part("optimizer, casts, zeroing", t.t_optimizer, t.t_optimizer / t.t);
    part("host floor (framework)", t.t_framework, t.t_framework / t.t);
  }
  if (layout.exec.offload != Offload::None) {
    part("host transfers (exposed)", t.t_offload, t.t_offload / t.t);
    part("host optimizer (CPU)", t.t_host_optimizer, t.t_host_optimizer / t.t);
  }
  o << "\nmemory per GPU (GB = 1e9 bytes; % of " << (runtime ? "what the runtime can allocate" : "hbm_capacity")
    << ")\n";
  const double limit = runtime ? t.mem_limit : system.hbm_capacity;
  auto mem = [&](const char* name, double v) {
    std::snprintf(line, sizeof line, "  %-28s %12.4f  %6.2f %%\n", name, v, 100 * v / limit);
    o << line;
  };
  mem("weights", t.wts_mem);
  mem("weight gradients", t.wts_grad_mem);
  mem("optimizer states", t.wts_optimizer_states_mem);
  // the pipeline schedule that keeps them: "activations (1F1B)", "(interleaved 1F1B)", "(zb-h2)"
  std::string acts_name = "activations (";
  if (layout.exec.schedule != PipelineSchedule::OneFOneB) {
    acts_name += kScheduleNames[static_cast<std::size_t>(layout.exec.schedule)];
  } else {
    acts_name += layout.exec.interleave > 1 ? "interleaved 1F1B" : "1F1B";
  }
  acts_name += ")";
  mem(acts_name.c_str(), t.acts_mem);
  if (runtime) mem("transients, resident inputs", t.mem - (t.wts_mem + t.wts_grad_mem + t.wts_optimizer_states_mem + t.acts_mem));
  mem("total", t.mem);
  if (runtime) {
    std::snprintf(line, sizeof line, "  %-28s %12.4f  (hbm_capacity %g read as %s)\n", "HBM capacity", ev.capacity_gb,
                  system.hbm_capacity, ev.capacity_in_gib ? "GiB" : "GB");
    o << line;
    // the driver's and CUDA context's share and the caching allocator's reserve taken off
    std::snprintf(line, sizeof line, "  %-28s %12.4f  -> %s\n", ("usable by " + ev.runtime).c_str(), t.mem_limit,
                  ev.fits ? "fits" : "DOES NOT FIT");
  } else {
    std::snprintf(line, sizeof line, "  %-28s %12.4f  -> %s\n", "HBM capacity (as given)", system.hbm_capacity,
                  ev.fits ? "fits" : "DOES NOT FIT");
  }
  o << line;
  // what is left of the limit the fit used (negative: over it by that much)
  std::snprintf(line, sizeof line, "  %-28s %12.4f\n", "headroom (limit - total)", limit - t.mem);
  o << line;
  if (layout.exec.offload != Offload::None) {
    // what the offload keeps on the host, against the host's memory per GPU
    std::snprintf(line, sizeof line, "  %-28s %12.4f  of host_memory %g -> %s\n",
                  (std::string("host (offload ") + kOffloadNames[static_cast<std::size_t>(layout.exec.offload)] + ")").c_str(),
                  t.host_mem, system.host_memory, fits_host(system, t) ? "fits" : "DOES NOT FIT");
    o << line;
  }
  const ModelTotals& mt = ev.model;
  o << "\nmodel: " << fmt("%.6g", mt.params) << " parameters (" << fmt("%.6g", mt.active_params)
    << " active per token), " << fmt("%.6g", mt.params_per_gpu) << " per GPU\n";
  if (model.vocab_size > 0) {
    o << "  embedding (weights, gradients, optimizer states) " << fmt("%.4f", mt.embedding_mem)
      << " GB per GPU on stage 0;\n  logits of one micro-batch " << fmt("%.4f", mt.logits_mem) << " GB on stage "
      << layout.pp - 1 << "\n";
  }
  if (model.vocab_size > 0 || partitioned(ev, layout)) {
    o << "  stage " << mt.time_stage << " bounds the time, stage " << mt.memory_stage << " the memory (of "
      << layout.pp << ")\n";
  }
  return o.str();
}

std::string training_budget_text(const TrainingBudget& b) {
  // for people: "training on 15T tokens: 1.79M steps, 314.7 days, 3.87M GPU-hours, cost 9.67M at 2.5 per GPU-hour"
  std::string out = "training on " + human_number(b.tokens) + " tokens: " + human_number(b.steps) + " steps, " +
                    human_number(b.days) + " days, " + human_number(b.gpu_hours) + " GPU-hours";
  if (b.gpu_hour_cost > 0) {
    out += ", cost " + human_number(b.cost) + " at " + human_number(b.gpu_hour_cost) + " per GPU-hour";
  }
  return out;
}

std::string configuration_summary(const Layout& layout, const Totals& t, const Transformer& model,
                                  const System& system, std::int64_t global_batch, std::string_view runtime,
                                  double tokens, double gpu_hour_cost) {
  std::string out = plan_of(layout.strategy).name;
  auto keys = config_keys(layout);
  for (const auto& kv : nv_keys(layout)) keys.push_back(kv);
  for (const auto& [key, value] : keys) {
    out += ' ';
    out += key;
    out += '=';
    out += std::to_string(value);
  }
  out += ' ';
  out += execution_text(layout.exec);
  // execution_text leaves out the default precision and schedule; the summary names every option
  if (layout.exec.precision == Precision::Bf16) out += " precision=bf16";
  if (layout.exec.schedule == PipelineSchedule::OneFOneB) out += " schedule=1f1b";
  out += " attention=";
  out += attention_name(layout.attention);
  out += " runtime=";
  out += runtime;
  const Efficiency e = efficiency(model, system, layout.n_gpus(), global_batch, t.t);
  const double limit = t.mem_limit > 0 ? t.mem_limit : system.hbm_capacity;
  out += "; step " + fmt("%.4g", t.t) + " s (compute " + fmt("%.1f", 100 * t.comp_frac) + "%, memory " +
         fmt("%.1f", 100 * t.mem_frac) + "%, tp comm " + fmt("%.1f", 100 * t.tp_comm_frac) + "%, dp comm " +
         fmt("%.1f", 100 * t.dp_comm_frac) + "%, pp comm " + fmt("%.1f", 100 * t.pp_comm_frac) + "%, bubble " +
         fmt("%.1f", 100 * t.bubble_frac) + "%";
  if (t.t_optimizer > 0 || t.t_framework > 0) {
    out += ", optimizer " + fmt("%.1f", 100 * t.t_optimizer / t.t) + "%, host floor " +
           fmt("%.1f", 100 * t.t_framework / t.t) + "%";
  }
  out += "), " + fmt("%.4g", e.tokens_per_s_per_gpu) + " tokens/s per GPU, MFU " + fmt("%.1f", 100 * e.mfu) +
         "%; memory " + fmt("%.1f", t.mem) + " of " + fmt("%.1f", limit) + " GB usable (headroom " +
         fmt("%.1f", limit - t.mem) + " GB)";
  if (tokens > 0) {
    out += "; " + training_budget_text(training_budget(e, layout.n_gpus(), global_batch, model.l, tokens, gpu_hour_cost));
  }
  return out;
}

}  // namespace perfsweep
