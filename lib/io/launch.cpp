#include "io/launch.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string_view>

#include "core/error.hpp"
#include "model/step.hpp"

namespace perfsweep {

namespace {

std::string num(std::int64_t v) { return std::to_string(v); }

std::string real(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Megatron-Core's offload_fraction: the optimizer's share on the host, "1.0" for all of it.
std::string offload_fraction(const Execution& x) {
  return x.offload_percent == 100 ? "1.0" : real(static_cast<double>(x.offload_percent) / 100);
}

// Models with a NeMo 2.0 recipe (nemo/collections/llm/recipes/<recipe>.py) or a torchtitan
// flavor (torchtitan/models/<name>/__init__.py) of the same shape; nullptr: none.
// nemo_rope_scaling: the recipe's config class's Llama 3.1 rotary scaling factor
// (nemo/collections/llm/gpt/model/llama.py: Llama31Config405B inherits Llama31Config's 8.0,
// Llama32Config1B sets 32.0; 0: none), which GPTConfig has no field to override.
struct KnownModel {
  std::string_view model;
  const char* nemo_recipe;
  double nemo_rope_scaling;
  const char* torchtitan_name;
  const char* torchtitan_flavor;
};
constexpr KnownModel kKnownModels[] = {
    {"gpt3", "gpt3_175b", 0, nullptr, nullptr},
    {"llama3_8b", "llama3_8b", 0, "llama3", "8B"},
    {"llama3_70b", "llama3_70b", 0, "llama3", "70B"},
    {"llama3_405b", "llama31_405b", 8, "llama3", "405B"},
    {"llama3_2_1b", "llama32_1b", 32, nullptr, nullptr},
    {"mixtral_8x7b", "mixtral_8x7b", 0, nullptr, nullptr},
};
// What every torchtitan llama3 flavor fixes beside the shape (v0.2.2 torchtitan/models/llama3:
// rope_theta=500000 in each flavor, TransformerModelArgs' norm_eps 1e-5, and RoPEScalingArgs'
// factor 8 applied to every flavor); test/data/launch/torchtitan_flavors.txt holds them as read.
struct FlavorNumerics {
  double rope_theta, norm_epsilon, rope_scaling_factor;
};
constexpr FlavorNumerics kTorchtitanLlama3{500000, 1e-5, 8};
const KnownModel* known_model(const std::string& name) {
  for (const KnownModel& k : kKnownModels) {
    if (k.model == name) return &k;
  }
  return nullptr;
}

// GPUs of the tensor, data and pipeline groups in one NVLink domain when ranks are numbered
// tensor-parallel first, then data-parallel, then pipeline (dp_before_pp: Megatron-Core's default
// order tp-cp-ep-dp-pp, torchtitan's device mesh [pp, dp, tp]) or pipeline before data-parallel
// (Megatron-LM's --use-tp-pp-dp-mapping): each group takes the part of the domain left over that
// divides its degree; a job within one domain has every group there whole.
// Context parallelism's group comes right after tensor parallelism's in both orders (Megatron's
// tp-cp-ep-dp-pp; torchtitan's mesh [pp, dp, cp, tp]).
struct DomainShares {
  std::int64_t tp = 1, dp = 1, pp = 1, cp = 1;
  bool operator==(const DomainShares&) const = default;
};
DomainShares domain_shares(const Layout& c, std::int64_t nvs, bool dp_before_pp) {
  DomainShares s;
  if (c.n_gpus() <= nvs) return {c.tensor.tp1, c.dp, c.pp, c.tensor.cp};
  std::int64_t left = nvs;
  auto take = [&left](std::int64_t degree) {
    const std::int64_t t = std::gcd(degree, left);
    left /= t;
    return t;
  };
  s.tp = take(c.tensor.tp1);
  s.cp = take(c.tensor.cp);
  if (dp_before_pp) {
    s.dp = take(c.dp);
    s.pp = take(c.pp);
  } else {
    s.pp = take(c.pp);
    s.dp = take(c.dp);
  }
  return s;
}
DomainShares layout_shares(const Layout& c) { return {c.tensor.nv1, c.nv_dp, c.nv_pp, c.tensor.nv_cp}; }
std::string shares_text(const DomainShares& s) {
  std::string text = "nv_tp=";
  text += num(s.tp);
  if (s.cp > 1) {
    text += " nv_cp=";
    text += num(s.cp);
  }
  text += " nv_dp=";
  text += num(s.dp);
  text += " nv_pp=";
  text += num(s.pp);
  return text;
}
// A note when the placement the estimate assumed is not the one the framework's rank order gives.
void note_placement(std::vector<std::string>& notes, const Layout& c, const DomainShares& framework_order,
                    const char* framework) {
  if (layout_shares(c) == framework_order) return;
  std::string n = "the estimate placed ";
  n += shares_text(layout_shares(c));
  n += " GPUs of each group in an NVLink domain; ";
  n += framework;
  n += "'s rank order places ";
  n += shares_text(framework_order);
  notes.push_back(std::move(n));
}

std::string gpus_note(const Layout& c, const char* how) {
  std::string n = num(c.n_gpus());
  n += c.n_gpus() == 1 ? " GPU: " : " GPUs: ";
  n += how;
  n += " (data-parallel size ";
  n += num(c.dp);
  n += " = ";
  n += num(c.n_gpus());
  n += " / (tensor ";
  n += num(c.tensor.tp1);
  if (c.tensor.cp > 1) {
    n += " x context ";
    n += num(c.tensor.cp);
  }
  n += " x pipeline ";
  n += num(c.pp);
  n += "))";
  return n;
}

// The model's features no launch line can change (every framework's GPT is causal and has a
// vocabulary).
void note_model(std::vector<std::string>& notes, const Transformer& m, const char* framework) {
  if (!m.causal) {
    std::string n = "the estimate costs attention without a causal mask (the reference's models); ";
    n += framework;
    n += " masks causally";
    notes.push_back(std::move(n));
  }
  if (m.vocab_size == 0) {
    std::string n = "the estimate costs the transformer blocks only (the model has no vocabulary); ";
    n += framework;
    n += " adds the embedding, LM head and loss of its tokenizer's vocabulary";
    notes.push_back(std::move(n));
  }
}

// Recomputation as the frameworks name it: unfused attention recomputed in the backward is
// Megatron-LM's selective recomputation of the attention core.
Recompute effective_recompute(const Layout& c) {
  if (c.exec.recompute == Recompute::None && c.attention.recompute) return Recompute::Selective;
  return c.exec.recompute;
}

bool flash_attention(const LaunchInput& in) { return in.layout.attention.flash && in.runtime.flash_attention; }

// The data types the runtime keeps (its states, or the --layout choice's): every runtime computes
// in bf16 (the kernel calibrations are bf16 and FP8; no precision is fp16), with bf16 weights or,
// under autocast, fp32 ones; gradients reduced and accumulated in bf16 (2-byte gradients with no
// wider accumulator: NeMo's grad_reduce_in_fp32=False, the reference's 2 + 2 bytes) or in fp32
// (Megatron-LM's default under --bf16; nanotron's fp32 accumulator).
struct ParamDtypes {
  bool fp32_weights = false;    // PyTorch autocast: fp32 weights, bf16 copies for the GEMMs
  bool fp32_gradients = true;   // gradients accumulated and reduced in fp32
};
ParamDtypes param_dtypes(const LaunchInput& in) {
  const StateBytes b = runtime_state_bytes(in.runtime, in.layout.exec);
  return {b.weights > 2, b.gradients > 2 || b.accumulator > 2};
}

bool tp_comm_overlap(const LaunchInput& in) { return tp_comm_hidden(in.runtime, in.layout.exec.tp_comm_overlap) > 0; }

// Whether the layout runs its linear layers in FP8 or FP4 (the runtime runs FP8 at all), and
// the recipe they run: the data type's own (mxfp8, nvfp4), else the runtime's.
bool fp8(const LaunchInput& in) {
  return in.layout.exec.precision != Precision::Bf16 && in.runtime.mechanisms.fp8.recipe != Fp8Recipe::None;
}
Fp8Recipe fp8_recipe(const LaunchInput& in) { return layout_fp8(in.runtime, in.layout.exec).recipe; }

bool sequence_parallel(const Layout& c) { return c.tensor.tp1 > 1 && c.exec.sequence_parallel; }

// The model's and recomputation's settings as Megatron-Core's TransformerConfig fields (NeMo's
// model.config) with values as Python writes them; Megatron-LM's command line spells the same
// fields (megatron_flag). add_qkv_bias only when on; the vocabulary's and the experts' only where
// the model has them.
struct CoreValue {
  const char* field;
  std::string value;
};
// Megatron-LM and NeMo pad the tokenizer's vocabulary to a multiple of make_vocab_size_divisible_by
// x tp (megatron/training/tokenizer/tokenizer.py _vocab_size_with_padding; nemo/lightning/base.py
// get_vocab_size); the estimate holds ceil(V / tp) rows a GPU (model/block.cpp vocab_per_gpu), which
// the largest power of two up to 128 (their default) dividing ceil(V / tp) gives.
std::int64_t vocab_divisor(std::int64_t vocab, std::int64_t tp) {
  const std::int64_t rows = (vocab + tp - 1) / tp;
  std::int64_t d = 1;
  while (d < 128 && rows % (2 * d) == 0) d *= 2;
  return d;
}
std::int64_t padded_vocab(std::int64_t vocab, std::int64_t tp) { return (vocab + tp - 1) / tp * tp; }

bool rotary(const Transformer& m) { return m.vocab_size > 0 && !m.learned_positions; }
// A whole rotary base (Megatron-LM's --rotary-base and GPTConfig.rotary_base are ints).
bool whole_rope_theta(const Transformer& m) {
  return m.rope_theta > 0 && m.rope_theta == static_cast<double>(static_cast<std::int64_t>(m.rope_theta));
}

// Whether the layout's MoE layers dispatch through DeepEP (Execution::moe_dispatcher) over more
// than one GPU.
bool deepep_dispatch(const Transformer& m, const Layout& c) {
  return m.is_moe() && c.exec.ep > 1 && c.exec.moe_dispatcher == MoeDispatcher::DeepEp;
}

std::vector<CoreValue> core_config(const Transformer& m, Recompute recompute, std::int64_t tp, bool deepep) {
  const char* yes = "True";
  const char* no = "False";
  std::vector<CoreValue> v = {
      {"seq_length", num(m.l)},
      {"num_layers", num(m.depth)},
      {"hidden_size", num(m.e)},
      {"ffn_hidden_size", num(m.f)},
      {"num_attention_heads", num(m.h)},
      {"num_query_groups", num(m.kv())},
      {"normalization", m.norm == NormKind::RmsNorm ? "RMSNorm" : "LayerNorm"},
      {"gated_linear_unit", m.mlp == MlpKind::SwiGlu ? yes : no},
      {"add_bias_linear", m.bias ? yes : no},
  };
  if (m.qkv_bias) v.push_back({"add_qkv_bias", yes});
  if (m.head_dim_given > 0) v.push_back({"kv_channels", num(m.head_dim())});
  if (m.qk_norm) v.push_back({"qk_layernorm", yes});
  if (m.is_mla()) {
    // Megatron-Core's MLATransformerConfig (q_lora_rank None: the queries projected directly)
    v.push_back({"multi_latent_attention", yes});
    if (m.mla.q_lora_rank > 0) v.push_back({"q_lora_rank", num(m.mla.q_lora_rank)});
    v.push_back({"kv_lora_rank", num(m.mla.kv_lora_rank)});
    v.push_back({"qk_head_dim", num(m.mla.qk_nope_head_dim)});
    v.push_back({"qk_pos_emb_head_dim", num(m.mla.qk_rope_head_dim)});
    v.push_back({"v_head_dim", num(m.mla.v_head_dim)});
  }
  v.push_back({"hidden_dropout", real(m.dropout)});
  v.push_back({"attention_dropout", real(m.dropout)});
  if (m.norm_epsilon > 0) v.push_back({"layernorm_epsilon", real(m.norm_epsilon)});
  if (m.vocab_size > 0) {
    v.push_back({"share_embeddings_and_output_weights", m.tie_embeddings ? yes : no});
    v.push_back({"position_embedding_type", m.learned_positions ? "learned_absolute" : "rope"});
    if (rotary(m) && whole_rope_theta(m)) v.push_back({"rotary_base", num(static_cast<std::int64_t>(m.rope_theta))});
    v.push_back({"make_vocab_size_divisible_by", num(vocab_divisor(m.vocab_size, tp))});
    // multi-token prediction, on the last stage as Megatron-Core places it
    if (m.mtp_layers > 0) v.push_back({"mtp_num_layers", num(m.mtp_layers)});
  }
  if (m.is_moe()) {
    v.push_back({"num_moe_experts", num(m.moe.experts)});
    v.push_back({"moe_router_topk", num(m.moe.top_k)});
    v.push_back({"moe_ffn_hidden_size", num(m.moe.ffn_dim)});
    // the estimate's dispatch and combine: all-to-alls over the expert-parallel group, or DeepEP's
    // through the flex dispatcher (Execution::moe_dispatcher)
    v.push_back({"moe_token_dispatcher_type", deepep ? "flex" : "alltoall"});
    if (deepep) v.push_back({"moe_enable_deepep", yes});
    // an integer N: one MoE block in every N (Megatron-Core puts it first in each group, the
    // estimate last; every stage holds whole groups, so each stage's blocks are the same)
    if (m.moe.every > 1) v.push_back({"moe_layer_freq", num(m.moe.every)});
    // dense first blocks: the per-block pattern Megatron-LM evaluates, 0 dense and 1 MoE
    if (m.moe.first_dense > 0) {
      v.push_back({"moe_layer_freq", "([0]*" + num(m.moe.first_dense) + "+[1]*" + num(m.moe_blocks()) + ")"});
    }
    if (m.moe.shared_experts > 0) {
      v.push_back({"moe_shared_expert_intermediate_size", num(m.moe.shared_experts * m.moe.ffn_dim)});
    }
    // group-limited routing
    if (m.moe.groups > 0) {
      v.push_back({"moe_router_num_groups", num(m.moe.groups)});
      v.push_back({"moe_router_group_topk", num(m.moe.group_top_k)});
    }
    if (m.moe.capacity_factor != 1.0) {
      // each expert computes on its whole capacity, as the estimate costs it
      v.push_back({"moe_expert_capacity_factor", real(m.moe.capacity_factor)});
      v.push_back({"moe_pad_expert_input_to_capacity", yes});
    }
  }
  switch (recompute) {
    case Recompute::None: v.push_back({"recompute_granularity", "None"}); break;
    case Recompute::Selective: v.push_back({"recompute_granularity", "selective"}); break;
    case Recompute::Full:
      v.push_back({"recompute_granularity", "full"});
      v.push_back({"recompute_method", "uniform"});
      v.push_back({"recompute_num_layers", "1"});
      break;
  }
  return v;
}

// How Megatron-LM's arguments.py spells a config field where it is not "--" + the field with
// dashes: a switch for one boolean value (the other is the default), another name, or a value that
// is the default and so left out.
struct MegatronSpelling {
  std::string_view field;
  const char* flag_when_true;   // nullptr: nothing when True
  const char* flag_when_false;  // nullptr: nothing when False
};
constexpr MegatronSpelling kMegatronSwitches[] = {
    {"gated_linear_unit", "--swiglu", nullptr},  // --swiglu also sets activation_func to SiLU
    {"add_bias_linear", nullptr, "--disable-bias-linear"},
    {"add_qkv_bias", "--add-qkv-bias", nullptr},
    {"qk_layernorm", "--qk-layernorm", nullptr},
    {"multi_latent_attention", "--multi-latent-attention", nullptr},
    {"share_embeddings_and_output_weights", nullptr, "--untie-embeddings-and-output-weights"},
    {"moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity", nullptr},
    {"moe_enable_deepep", "--moe-enable-deepep", nullptr},
};
struct MegatronDefault {
  std::string_view field, value;
};
constexpr MegatronDefault kMegatronDefaults[] = {
    {"normalization", "LayerNorm"},      {"hidden_dropout", "0.1"},
    {"attention_dropout", "0.1"},        {"position_embedding_type", "learned_absolute"},
    {"recompute_granularity", "None"},
};
std::string megatron_flag(std::string_view field) {
  if (field == "num_moe_experts") return "--num-experts";
  if (field == "layernorm_epsilon") return "--norm-epsilon";
  std::string flag = "--";
  for (char ch : field) flag += ch == '_' ? '-' : ch;
  return flag;
}

class Builder {
 public:
  explicit Builder(LaunchLine& line) : line_(line) {}
  void add(std::string name, std::string value = {}) { line_.arguments.push_back({std::move(name), std::move(value)}); }
  // A list argument (argparse's nargs): its values as words.
  void add_words(std::string name, const std::vector<std::string>& values) {
    std::string joined;
    for (const std::string& v : values) joined += (joined.empty() ? "" : " ") + v;
    line_.arguments.push_back({std::move(name), std::move(joined), true});
  }
  void note(std::string text) { line_.notes.push_back(std::move(text)); }
  std::vector<std::string>& notes() { return line_.notes; }

 private:
  LaunchLine& line_;
};

// What each framework's line reads of the input: the model, the layout and its execution options.
struct Parts {
  const Transformer& m;
  const Layout& c;
  const Execution& x;
};
Parts parts(const LaunchInput& in) { return {in.model, in.layout, in.layout.exec}; }

// The first note: what the arguments are and where they go.
std::string intro(LaunchFramework f, const Transformer& m) {
  switch (f) {
    case LaunchFramework::Megatron:
      return "Megatron-LM pretrain_gpt.py arguments of the configuration; data, tokenizer, optimizer and schedule "
             "are the user's";
    case LaunchFramework::Nemo: {
      const KnownModel* known = known_model(m.name);
      if (known == nullptr || known->nemo_recipe == nullptr) {
        return "nemo llm pretrain --factory RECIPE followed by these overrides, RECIPE a NeMo 2.0 recipe of the "
               "model (nemo/collections/llm/recipes)";
      }
      std::string n = "nemo llm pretrain --factory ";
      n += known->nemo_recipe;
      n += " followed by these overrides";
      return n;
    }
    case LaunchFramework::Torchtitan:
      return "torchtitan (run_train.sh / torchtitan/train.py) flags of the configuration, after a --job.config_file "
             "of the model";
  }
  return {};
}

// The layout's interleaved chunks where its stages are slotted (the embedding or the loss taking
// a block's slot, interleaved_chunks); not valid otherwise (no interleaving, an even split, or
// every stage's blocks a multiple of V, which the frameworks' first/last stage counts express).
InterleavedChunks slotted_chunks(const Transformer& m, const Layout& c) {
  const Execution& x = c.exec;
  if (x.interleave < 2 || c.pp < 2 || (x.first_stage_blocks == 0 && x.last_stage_blocks == 0)) return {};
  const InterleavedChunks chunks = interleaved_chunks(stage_blocks(m, c.pp, x), c.pp, x.interleave);
  return chunks.embedding_slot || chunks.loss_slot ? chunks : InterleavedChunks{};
}

// The first and last stages' blocks a line gives (0: the even split): the layout's (given, or
// balanced by `auto`), or those of the runtime's partition (nanotron's) where the stages are
// uneven. The frameworks split the rest evenly over the middle stages; a partition whose middle
// stages differ has no such form: the line takes the balanced split of that form (`changed`).
struct LineStages {
  std::int64_t first = 0, last = 0;
  bool changed = false;
};
LineStages line_stages(const LaunchInput& in) {
  const auto [m, c, x] = parts(in);
  if (c.pp < 2) return {};
  if (x.first_stage_blocks > 0 || x.last_stage_blocks > 0) return {x.first_stage_blocks, x.last_stage_blocks, false};
  const StageBlocks b = stage_blocks(m, c.pp, x, in.runtime.mechanisms.stage_partition);
  if (b.even()) return {};
  if (b.first + b.last + b.middle * (c.pp - 2) == m.depth) return {b.first, b.last, false};
  const StageBlocks even = balanced_stages(m.depth, c.pp, m.is_moe() ? m.moe.every : 1, 1, 0, 0, 0);
  return {even.first, even.last, true};
}
// A layout's uneven interleaved chunks (Execution::layout_chunk_blocks, from --pipeline-layout) in
// Megatron-Core's pipeline_model_parallel_layout syntax: the embedding with the first stage's first
// chunk, the MTP layers and the loss with the last stage's last, every other chunk
// layout_chunk_blocks blocks ("Et*4|(t*4|)*14tmL"); empty without such chunks.
std::string pipeline_layout_text(const Transformer& m, const Layout& c) {
  const Execution& x = c.exec;
  if (x.layout_chunk_blocks <= 0) return {};
  const StageBlocks b = stage_blocks(m, c.pp, x);
  const std::int64_t v = x.interleave, regular = c.pp * v - 2;
  std::string text;
  const auto blocks = [&](std::int64_t k, std::int64_t chunk) {
    const std::int64_t n = chunk_blocks(b, InterleavedChunks{}, c.pp, v, k, chunk);
    if (n <= 0) return;
    text += 't';
    if (n > 1) text.append("*").append(num(n));
  };
  text += 'E';
  blocks(0, 0);
  text += '|';
  if (regular > 1) text += '(';
  if (regular > 0) {
    blocks(1 % c.pp, 1 / c.pp);  // a regular chunk: the one after the first
    text += '|';
  }
  if (regular > 1) text.append(")*").append(num(regular));
  blocks(c.pp - 1, v - 1);
  text.append(static_cast<std::size_t>(m.mtp_layers), 'm');
  text += 'L';
  return text;
}

void note_stages(Builder& b, const LaunchInput& in, const char* framework) {
  const auto [m, c, x] = parts(in);
  if (c.exec.layout_chunk_blocks > 0) {
    b.note(std::string("the estimate's uneven interleaved chunks (--pipeline-layout) have no ") + framework +
           " form: the line cuts the stages' blocks as its own schedule does");
  }
  const LineStages line = line_stages(in);
  if (!line.changed) return;
  const StageBlocks est = stage_blocks(m, c.pp, x, in.runtime.mechanisms.stage_partition);
  b.note("the runtime's stage partition (" + num(est.first) + " blocks on the first stage, up to " + num(est.middle) +
         " on a middle one, " + num(est.last) + " on the last) has no " + framework +
         " form, whose middle stages hold as many blocks each: the line puts " + num(line.first) + " on the first and " +
         num(line.last) + " on the last");
}

// Megatron-Core's cp_comm_type for an exchange (--cp-comm-type; NeMo's model.config.cp_comm_type).
const char* megatron_cp_comm(CpComm k) { return cp_exchange(k).megatron; }

// Whether the layout numbers ranks with the pipeline inside the data-parallel replicas
// (RankOrder::PipelineInnerDataOuter, tp-cp-ep-pp-dp): the layout's, the runtime's unless chosen.
bool pipeline_inner(const LaunchInput& in) { return in.layout.exec.rank_order == RankOrder::PipelineInnerDataOuter; }
// Megatron-Core's TransformerConfig: "Make sure EP and CP aren't used with this option enabled".
void note_mapping_limits(Builder& b, const Layout& c, const char* option) {
  if (c.tensor.cp == 1 && c.exec.ep == 1) return;
  std::string n = option;
  n += " is documented for neither context nor expert parallelism (Megatron-Core: \"Make sure EP and CP "
       "aren't used with this option enabled\"); the estimate places the ";
  n += c.tensor.cp > 1 ? "context" : "expert";
  n += "-parallel ranks inside each pipeline stage";
  b.note(std::move(n));
}

// Notes on the data types: the reference's own layout (no runtime states) runs its 2 + 2 bytes as
// bf16 with bf16 gradient reduction (`reduction`: the framework's spelling); fp32 weights
// (autocast) are not what the framework's bf16 (`bf16`) keeps.
void note_dtypes(Builder& b, const LaunchInput& in, const char* reduction, const char* bf16) {
  if (!in.runtime.has_states && in.layout.exec.params == ParamLayout::Reference) {
    b.note(std::string("the reference's 2-byte weights and gradients run as bf16 with gradients reduced in bf16 (") +
           reduction + "); --layout megatron keeps fp32 gradients");
  }
  if (param_dtypes(in).fp32_weights) {
    b.note(std::string("the estimate keeps fp32 weights with bf16 copies (PyTorch autocast); ") + bf16 +
           " keeps bf16 weights with fp32 master weights");
  }
}

// What the model leaves to the framework's defaults, and the vocabulary's padding: `theta` and
// `epsilon` name the framework's fallbacks ("Megatron-LM's --rotary-base default 10000").
void note_numerics(Builder& b, const Transformer& m, std::int64_t tp, const char* theta, const char* epsilon) {
  if (rotary(m) && m.rope_theta == 0) {
    b.note(std::string("the model gives no rope_theta (rotary base): ") + theta + " applies");
  } else if (rotary(m) && !whole_rope_theta(m)) {
    b.note("the model's rope_theta " + real(m.rope_theta) + " is not a whole number, which " + theta +
           " must be: the line leaves it out");
  }
  if (m.norm_epsilon == 0) b.note(std::string("the model gives no norm_epsilon: ") + epsilon + " applies");
  if (m.vocab_size > 0 && padded_vocab(m.vocab_size, tp) != m.vocab_size) {
    b.note("the tokenizer's " + num(m.vocab_size) + " tokens padded to " + num(padded_vocab(m.vocab_size, tp)) +
           " (a multiple of make-vocab-size-divisible-by " + num(vocab_divisor(m.vocab_size, tp)) + " x tensor " +
           num(tp) + "), the rows the estimate costs");
  }
}

// The estimate replicates key/value groups over a tensor group larger than their count, as
// Megatron-Core does from 0.16 (model/block.hpp); the versions these lines target refuse it
// (TransformerConfig: num_query_groups a multiple of tensor_model_parallel_size).
void note_kv_replication(Builder& b, const Transformer& m, std::int64_t tp, const char* version) {
  if (m.kv() % tp == 0) return;
  b.note(std::string(version) + "'s TransformerConfig needs the key/value heads (num_query_groups " + num(m.kv()) +
         ") a multiple of tensor " + num(tp) + "; the estimate replicates them over the tensor group as "
         "Megatron-Core does from 0.16");
}

// Whether Megatron-Core's Transformer Engine activation offloading runs the layout: its
// TransformerConfig refuses it with pipeline parallelism and with recomputation.
bool activation_offload_runs(const Layout& c) {
  return c.pp == 1 && effective_recompute(c) == Recompute::None;
}

// Whether the FP8 weights are gathered in FP8 (--fp8-param-gather): only where ZeRO gathers
// weights at all (validate_args: "--fp8-param-gather only supported with distributed optimizer,
// torch fsdp2, megatron fsdp"), and with the optimizer on the host only under delayed scaling.
bool fp8_param_gather(const LaunchInput& in) {
  const Execution& x = in.layout.exec;
  return fp8(in) && x.fp8_params && x.zero >= 1 &&
         !(x.offload == Offload::Optimizer && fp8_recipe(in) != Fp8Recipe::Delayed);
}
void note_fp8_param_gather(Builder& b, const LaunchInput& in) {
  if (!fp8(in) || !in.layout.exec.fp8_params || fp8_param_gather(in)) return;
  b.note(in.layout.exec.zero == 0
             ? "the runtime gathers weights in FP8, which needs ZeRO's gathers: none at ZeRO 0"
             : "the runtime gathers weights in FP8, which Megatron-LM allows with the optimizer on the host only "
               "under delayed scaling: the line gathers them in bf16");
}

// Megatron-LM's pretrain_gpt.py (names: megatron/training/arguments.py at core_v0.15.3).
void megatron_line(const LaunchInput& in, Builder& b) {
  const auto [m, c, x] = parts(in);

  b.add("--tensor-model-parallel-size", num(c.tensor.tp1));
  b.add("--pipeline-model-parallel-size", num(c.pp));
  // a pipeline layout gives the virtual stages and every stage's blocks itself
  const std::string layout = pipeline_layout_text(m, c);
  if (!layout.empty()) {
    b.add("--pipeline-model-parallel-layout", layout);
  } else {
    if (x.interleave > 1) b.add("--num-virtual-stages-per-pipeline-rank", num(x.interleave));
    const InterleavedChunks chunks = slotted_chunks(m, c);
    if (chunks.embedding_slot) b.add("--account-for-embedding-in-pipeline-split");
    if (chunks.loss_slot) b.add("--account-for-loss-in-pipeline-split");
    const LineStages stages = line_stages(in);
    if (!chunks.valid && stages.first > 0) b.add("--decoder-first-pipeline-num-layers", num(stages.first));
    if (!chunks.valid && stages.last > 0) b.add("--decoder-last-pipeline-num-layers", num(stages.last));
    note_stages(b, in, "Megatron-LM");
  }
  if (sequence_parallel(c)) b.add("--sequence-parallel");
  if (m.is_moe() && x.ep > 1) b.add("--expert-model-parallel-size", num(x.ep));
  // Megatron-Core's default expert_tensor_parallel_size is tp
  if (m.is_moe() && expert_tensor_degree(c) != c.tensor.tp1) {
    b.add("--expert-tensor-parallel-size", num(expert_tensor_degree(c)));
  }
  if (c.tensor.cp > 1) {
    // Transformer Engine's ring attention (p2p, the default), the all-gather of K and V, or the
    // all-to-all of Q, K, V and the output (a2a)
    b.add("--context-parallel-size", num(c.tensor.cp));
    b.add("--cp-comm-type", megatron_cp_comm(x.cp_comm));
    if (cp_exchange(x.cp_comm).hierarchical) {
      const std::int64_t a = cp_head_ranks(m, c.tensor, x.cp_comm);
      b.add_words("--hierarchical-context-parallel-sizes", {num(a), num(c.tensor.cp / a)});
    }
  }
  // offload (megatron/training/arguments.py): HybridDeviceOptimizer with the optimizer's share on
  // the host, which runs on the precision-aware optimizer's code path (validate_args asserts
  // --use-precision-aware-optimizer with it). Activation offloading has no argument at
  // core_v0.15.3 (launch_line notes it).
  if (x.offload == Offload::Optimizer) {
    b.add("--optimizer-cpu-offload");
    b.add("--optimizer-offload-fraction", offload_fraction(x));
    b.add("--use-precision-aware-optimizer");
  }
  const DomainShares placed = layout_shares(c);
  if (pipeline_inner(in)) {
    // the runtime's rank order tp-cp-ep-pp-dp (RankGenerator's order with --use-tp-pp-dp-mapping)
    b.add("--use-tp-pp-dp-mapping");
    note_placement(b.notes(), c, domain_shares(c, in.nvlink_size, false), "Megatron-LM (tp-cp-ep-pp-dp)");
    note_mapping_limits(b, c, "Megatron-LM's --use-tp-pp-dp-mapping");
  } else if (placed != domain_shares(c, in.nvlink_size, true) && placed == domain_shares(c, in.nvlink_size, false)) {
    b.add("--use-tp-pp-dp-mapping");
  } else {
    note_placement(b.notes(), c, domain_shares(c, in.nvlink_size, true), "Megatron-LM (tp-cp-ep-dp-pp)");
  }

  b.add("--micro-batch-size", num(c.mbs));
  b.add("--global-batch-size", num(in.global_batch));
  b.add("--max-position-embeddings", num(m.l));
  if (m.vocab_size > 0) b.add("--vocab-size", num(m.vocab_size));
  for (const CoreValue& v : core_config(m, effective_recompute(c), c.tensor.tp1, deepep_dispatch(m, c))) {
    const std::string_view field = v.field;
    if (field == "num_query_groups") {
      if (m.kv() == m.h) continue;
      b.add("--group-query-attention");
    }
    bool spelled = false;
    for (const MegatronSpelling& sw : kMegatronSwitches) {
      if (sw.field != field) continue;
      spelled = true;
      const char* flag = v.value == "True" ? sw.flag_when_true : sw.flag_when_false;
      if (flag != nullptr) b.add(flag);
    }
    for (const MegatronDefault& d : kMegatronDefaults) spelled = spelled || (d.field == field && d.value == v.value);
    if (!spelled) b.add(megatron_flag(field), v.value);
  }
  if (rotary(m) && m.rope_scaling_factor > 0) {  // Llama 3.1's "llama3" scaling (rotary_pos_embedding.py)
    b.add("--use-rope-scaling");
    b.add("--rope-scaling-factor", real(m.rope_scaling_factor));
  }
  note_numerics(b, m, c.tensor.tp1, "Megatron-LM's --rotary-base default 10000",
                "Megatron-LM's --norm-epsilon default 1e-05");
  note_kv_replication(b, m, c.tensor.tp1, "Megatron-Core core_v0.15.3");
  switch (x.zero) {
    case 0: break;  // DDP: every rank keeps whole optimizer states
    case 1: b.add("--use-distributed-optimizer"); break;
    default:
      b.add("--use-megatron-fsdp");
      b.add("--data-parallel-sharding-strategy", x.zero == 2 ? "optim_grads" : "optim_grads_params");
      b.add("--ckpt-format", "fsdp_dtensor");  // validate_args: Megatron FSDP only saves fsdp_dtensor
      break;
  }
  // bf16 (never --fp16, whose loss scaling no runtime here models), the gradients reduced and
  // accumulated in the runtime's type (validate_args: --bf16 alone accumulates in fp32)
  const ParamDtypes dtypes = param_dtypes(in);
  b.add("--bf16");
  b.add(dtypes.fp32_gradients ? "--accumulate-allreduce-grads-in-fp32" : "--grad-reduce-in-bf16");
  note_dtypes(b, in, "--grad-reduce-in-bf16", "Megatron-LM's --bf16");
  if (fp8(in)) {
    // e4m3 forward, e5m2 gradients (Transformer Engine's HYBRID format), or FP4's e2m1
    // the recipe as Megatron-LM's --fp8-recipe names it (current per-tensor scaling: "tensorwise")
    const LowPrecisionRecipe& recipe = recipe_of(fp8_recipe(in));
    const std::string kind = recipe.launch_kind;
    b.add("--" + kind + "-format", recipe.megatron_format);
    b.add("--" + kind + "-recipe", recipe.megatron);
    if (fp8_param_gather(in)) b.add("--" + kind + "-param-gather");
    note_fp8_param_gather(b, in);
  }
  b.add("--attention-backend", flash_attention(in) ? "flash" : "unfused");
  if (tp_comm_overlap(in)) {
    if (sequence_parallel(c)) {
      b.add("--tp-comm-overlap");
    } else {
      b.note("the runtime overlaps tensor-parallel communication, which Megatron-LM's --tp-comm-overlap does "
             "only with tensor parallelism and --sequence-parallel");
    }
  }
  if (x.zero >= 2) {
    b.note("environment: CUDA_DEVICE_MAX_CONNECTIONS unset or above 1 (validate_args: \"FSDP always requires "
           "CUDA_DEVICE_MAX_CONNECTIONS value large than one\")");
  } else if (c.tensor.tp1 > 1 || c.tensor.cp > 1) {
    b.note("environment: CUDA_DEVICE_MAX_CONNECTIONS=1 (validate_args asserts it with tensor or context "
           "parallelism on GPUs before Blackwell)");
  }
}

// NeMo 2.0 recipe overrides for NeMo-Run's `nemo llm pretrain --factory RECIPE` (names: the
// MegatronStrategy, MegatronMixedPrecision and MockDataModule arguments at NeMo 8cfedd7, and the
// Megatron-Core core_v0.14.0 TransformerConfig, OptimizerConfig and DistributedDataParallelConfig
// fields its model.config, optim.config and trainer.strategy.ddp are).
void nemo_line(const LaunchInput& in, Builder& b) {
  const auto [m, c, x] = parts(in);
  const char* yes = "True";
  const char* no = "False";

  b.add("trainer.strategy.tensor_model_parallel_size", num(c.tensor.tp1));
  b.add("trainer.strategy.pipeline_model_parallel_size", num(c.pp));
  b.add("trainer.strategy.virtual_pipeline_model_parallel_size", x.interleave > 1 ? num(x.interleave) : "None");
  b.add("trainer.strategy.context_parallel_size", num(c.tensor.cp));
  if (c.tensor.cp > 1) b.add("model.config.cp_comm_type", megatron_cp_comm(x.cp_comm));
  if (c.tensor.cp > 1 && cp_exchange(x.cp_comm).hierarchical) {
    b.note("NeMo's strategy creates no hierarchical context-parallel groups (Megatron-Core's "
           "hierarchical_context_parallel_sizes): run the " + std::string(cp_exchange(x.cp_comm).name) +
           " exchange with Megatron-LM");
  }
  // Megatron-Core's OptimizerConfig and TransformerConfig fields (offload_fraction defaults to 0
  // there; the HybridDeviceOptimizer runs on the precision-aware optimizer's code path, as
  // Megatron-LM's validate_args requires). Transformer Engine's activation offloading of every
  // block but the last (cpu_offloading_num_layers below the depth), which TransformerConfig
  // refuses with pipeline parallelism or recomputation (launch_line notes it then).
  if (x.offload == Offload::Optimizer) {
    b.add("optim.config.optimizer_cpu_offload", yes);
    b.add("optim.config.optimizer_offload_fraction", offload_fraction(x));
    b.add("optim.config.use_precision_aware_optimizer", yes);
  } else if (x.offload == Offload::Activations && activation_offload_runs(c)) {
    b.add("model.config.cpu_offloading", yes);
    b.add("model.config.cpu_offloading_num_layers", num(m.depth - 1));
    b.add("model.config.cpu_offloading_activations", yes);
    b.add("model.config.cpu_offloading_weights", no);
  }
  b.add("trainer.strategy.sequence_parallel", sequence_parallel(c) ? yes : no);
  const std::string layout = pipeline_layout_text(m, c);
  if (!layout.empty()) {
    b.add("trainer.strategy.pipeline_model_parallel_layout", layout);
  } else {
    const InterleavedChunks chunks = slotted_chunks(m, c);
    if (chunks.embedding_slot) b.add("trainer.strategy.account_for_embedding_in_pipeline_split", yes);
    if (chunks.loss_slot) b.add("trainer.strategy.account_for_loss_in_pipeline_split", yes);
    const LineStages stages = line_stages(in);
    if (!chunks.valid && stages.first > 0) {
      b.add("trainer.strategy.num_layers_in_first_pipeline_stage", num(stages.first));
    }
    if (!chunks.valid && stages.last > 0) b.add("trainer.strategy.num_layers_in_last_pipeline_stage", num(stages.last));
    note_stages(b, in, "NeMo");
  }
  if (m.is_moe()) b.add("trainer.strategy.expert_model_parallel_size", num(x.ep));
  // MegatronStrategy takes no expert tensor-parallel size here; the model's config does (default tp)
  if (m.is_moe() && expert_tensor_degree(c) != c.tensor.tp1) {
    b.add("model.config.expert_tensor_parallel_size", num(expert_tensor_degree(c)));
  }
  const DomainShares placed = layout_shares(c);
  if (pipeline_inner(in)) {
    b.add("trainer.strategy.use_tp_pp_dp_mapping", yes);
    note_placement(b.notes(), c, domain_shares(c, in.nvlink_size, false), "NeMo (tp-cp-ep-pp-dp)");
    note_mapping_limits(b, c, "NeMo's use_tp_pp_dp_mapping (Megatron-Core's)");
  } else if (placed != domain_shares(c, in.nvlink_size, true) && placed == domain_shares(c, in.nvlink_size, false)) {
    b.add("trainer.strategy.use_tp_pp_dp_mapping", yes);
  } else {
    note_placement(b.notes(), c, domain_shares(c, in.nvlink_size, true), "NeMo (tp-cp-ep-dp-pp)");
  }
  b.add("optim.config.use_distributed_optimizer", x.zero >= 1 ? yes : no);
  if (x.zero >= 2) {
    b.add("trainer.strategy.fsdp", "megatron");
    // Megatron-FSDP saves fsdp_dtensor checkpoints only (MegatronStrategy, Megatron-LM's validate_args)
    b.add("trainer.strategy.save_ckpt_format", "fsdp_dtensor");
    b.add("trainer.strategy.ddp.data_parallel_sharding_strategy", x.zero == 2 ? "optim_grads" : "optim_grads_params");
    b.note("trainer.strategy.ddp.* needs a recipe whose strategy has a DistributedDataParallelConfig (ddp=run.Config"
           "(DistributedDataParallelConfig, ...))");
  }
  // The precision plugin (MegatronMixedPrecision) sets the model's, optimizer's and DDP's data types
  // and FP8 settings over model.config's (MegatronStrategy: update_config_with_dtype_overrides), so
  // they go to trainer.plugins: bf16 compute, gradients reduced in the runtime's type (NeMo's
  // performance recipes: grad_reduce_in_fp32=False).
  const ParamDtypes dtypes = param_dtypes(in);
  b.add("trainer.plugins.precision", "bf16-mixed");
  b.add("trainer.plugins.grad_reduce_in_fp32", dtypes.fp32_gradients ? yes : no);
  note_dtypes(b, in, "grad_reduce_in_fp32=False", "NeMo's bf16-mixed");
  if (fp8(in)) {
    const LowPrecisionRecipe& recipe = recipe_of(fp8_recipe(in));
    const std::string kind = recipe.launch_kind;
    b.add("trainer.plugins." + kind, recipe.megatron_format);
    b.add("trainer.plugins." + kind + "_recipe", recipe.megatron);
    if (kind == "fp8") {
      b.add("trainer.plugins.fp8_param_gather", fp8_param_gather(in) ? yes : no);
      note_fp8_param_gather(b, in);
    } else if (fp8_param_gather(in)) {
      b.note("NeMo's precision plugin has no " + kind + "_param_gather: the line gathers the weights in bf16");
    }
  }
  b.add("data.seq_length", num(m.l));
  b.add("data.micro_batch_size", num(c.mbs));
  b.add("data.global_batch_size", num(in.global_batch));

  for (const CoreValue& v : core_config(m, effective_recompute(c), c.tensor.tp1, deepep_dispatch(m, c))) {
    b.add(std::string("model.config.") + v.field, v.value);
  }
  note_numerics(b, m, c.tensor.tp1, "the recipe's model.config.rotary_base", "the recipe's layernorm_epsilon");
  note_kv_replication(b, m, c.tensor.tp1, "Megatron-Core core_v0.14.0");
  const KnownModel* known = known_model(m.name);
  const double recipe_scaling = known != nullptr ? known->nemo_rope_scaling : 0;
  if (rotary(m) && m.rope_scaling_factor != recipe_scaling) {
    b.note(m.rope_scaling_factor > 0
               ? "the model scales its rotary frequencies as Llama 3.1 (factor " + real(m.rope_scaling_factor) +
                     "), which GPTConfig has no field for: the recipe's config class must (Llama31Config's "
                     "scale_factor)"
               : "the recipe's config class scales the rotary frequencies (Llama31Config's scale_factor " +
                     real(recipe_scaling) + "); the model does not");
  }
  if (m.mlp == MlpKind::SwiGlu) {
    b.note("gated_linear_unit gates the MLP with the model config's activation_func: SwiGLU is F.silu, as the "
           "recipes' Llama and Mixtral configs set it");
  }
  if (!flash_attention(in)) {
    b.note("the estimate costs unfused attention; NeMo picks the attention kernel with model.config."
           "attention_backend (an AttnBackend: unfused), set in the recipe");
  }
  if (tp_comm_overlap(in)) {
    b.note("the runtime overlaps tensor-parallel communication: NeMo does with a MegatronCommOverlapCallback("
           "tp_comm_overlap=True) in trainer.callbacks, as a recipe's performance_mode=True adds it");
  }
}

// torchtitan's train.py flags (names: torchtitan/config/job_config.py at v0.2.2, as tyro makes
// them: --section.field).
void torchtitan_line(const LaunchInput& in, Builder& b) {
  const auto [m, c, x] = parts(in);
  const KnownModel* known = known_model(m.name);
  if (known != nullptr && known->torchtitan_name != nullptr) {
    b.add("--model.name", known->torchtitan_name);
    b.add("--model.flavor", known->torchtitan_flavor);
    // the flavor fixes the numerics too; say where the model's differ
    const FlavorNumerics& f = kTorchtitanLlama3;
    std::string differ;
    if (m.rope_theta > 0 && m.rope_theta != f.rope_theta) {
      differ += "; rope_theta " + real(f.rope_theta) + " (the model's " + real(m.rope_theta) + ")";
    }
    if (m.norm_epsilon > 0 && m.norm_epsilon != f.norm_epsilon) {
      differ += "; norm_eps " + real(f.norm_epsilon) + " (the model's " + real(m.norm_epsilon) + ")";
    }
    if (m.rope_scaling_factor != f.rope_scaling_factor) {
      differ += "; Llama 3.1's rotary scaling with factor " + real(f.rope_scaling_factor) + " (the model: " +
                (m.rope_scaling_factor > 0 ? "factor " + real(m.rope_scaling_factor) : std::string("none")) + ")";
    }
    if (!differ.empty()) {
      b.note("torchtitan's " + std::string(known->torchtitan_name) + " " + known->torchtitan_flavor +
             " flavor fixes " + differ.substr(2) + " (torchtitan/models/llama3)");
    }
  } else {
    std::string n = "torchtitan takes the model as --model.name and --model.flavor, whose shape must be the "
                    "estimate's: ";
    n += num(m.depth);
    n += " blocks, hidden ";
    n += num(m.e);
    n += ", ffn ";
    n += num(m.f);
    n += ", ";
    n += num(m.h);
    n += " heads, ";
    n += num(m.kv());
    n += " key/value heads";
    if (m.is_moe()) {
      n += ", ";
      n += num(m.moe.experts);
      n += " experts (top ";
      n += num(m.moe.top_k);
      n += ")";
    }
    if (m.vocab_size > 0) n += ", vocabulary " + num(m.vocab_size);
    if (rotary(m) && m.rope_theta > 0) n += ", rope_theta " + real(m.rope_theta);
    if (rotary(m) && m.rope_scaling_factor > 0) n += ", rope scaling factor " + real(m.rope_scaling_factor);
    if (m.norm_epsilon > 0) n += ", norm_eps " + real(m.norm_epsilon);
    b.note(std::move(n));
  }

  b.add("--parallelism.tensor_parallel_degree", num(c.tensor.tp1));
  if (c.tensor.cp > 1) {
    // PyTorch's context parallelism: "alltoall" passes the K, V shards around (the ring),
    // "allgather" all-gathers them after the first block
    b.add("--parallelism.context_parallel_degree", num(c.tensor.cp));
    const CpExchange& exchange = cp_exchange(x.cp_comm);
    b.add("--parallelism.context_parallel_rotate_method", exchange.torchtitan != nullptr ? exchange.torchtitan : "alltoall");
    if (exchange.torchtitan == nullptr) {
      b.note(std::string("torchtitan's context parallelism is ring attention (its rotate methods pass or gather the "
                         "K, V shards); the estimate's ") +
             exchange.name + " exchange (the heads split over ranks of the cp group) has no torchtitan equivalent");
    }
  }
  b.add("--parallelism.pipeline_parallel_degree", num(c.pp));
  // DDP only as the one parallelism (parallelize_llama: "DDP has not supported > 1D parallelism")
  const bool ddp = x.zero == 0 && c.tensor.tp1 == 1 && c.pp == 1 && c.tensor.cp == 1;
  if (ddp) {
    b.add("--parallelism.data_parallel_replicate_degree", num(c.dp));
    b.add("--parallelism.data_parallel_shard_degree", "1");
  } else {  // FSDP2: states sharded; weights gathered once a step (never) or again for the backward (always)
    b.add("--parallelism.data_parallel_replicate_degree", "1");
    b.add("--parallelism.data_parallel_shard_degree", num(c.dp));
    b.add("--parallelism.fsdp_reshard_after_forward", x.zero == 3 ? "always" : "never");
    if (x.zero == 0) {
      b.note("ZeRO 0 (whole states on every data-parallel rank) is torchtitan's DDP, which runs no other "
             "parallelism: FSDP with fsdp_reshard_after_forward never shards the optimizer states and gradients "
             "(ZeRO-2)");
    } else if (x.zero == 1) {
      b.note("ZeRO-1 (optimizer states sharded, gradients whole) has no torchtitan equivalent: FSDP with "
             "fsdp_reshard_after_forward never also shards the gradients (ZeRO-2)");
    }
  }
  if (m.is_moe() && x.ep > 1) {
    b.add("--parallelism.expert_parallel_degree", num(x.ep));
    // each expert split over the expert tensor-parallel group (torchtitan's: 1 or tp)
    if (expert_tensor_degree(c) > 1) b.add("--parallelism.expert_tensor_parallel_degree", num(expert_tensor_degree(c)));
    if (expert_tensor_degree(c) != 1 && expert_tensor_degree(c) != c.tensor.tp1) {
      b.note("torchtitan splits an expert over 1 or tp GPUs; the estimate's etp lies between");
    }
    if (deepep_dispatch(m, c)) b.note("the estimate's DeepEP dispatch (moe_dispatcher=deepep) is not set here: give it "
                                      "in the job's torchtitan configuration where its release has one");
  }
  if (c.tensor.tp1 > 1 && !c.exec.sequence_parallel) {
    b.note("torchtitan's tensor parallelism is always sequence-parallel; the estimate costs it without");
  }
  if (pipeline_inner(in)) {
    b.note("the runtime numbers ranks tp-cp-ep-pp-dp (the pipeline inside the data-parallel replicas); "
           "torchtitan's device mesh is [pp, dp, cp, tp] with no option for another order: the line runs "
           "tp-cp-dp-pp");
  }
  note_placement(b.notes(), c, domain_shares(c, in.nvlink_size, true), "torchtitan (mesh pp, dp, tp)");

  if (c.pp > 1) {
    // every micro-batch of a data-parallel rank in one pipeline schedule
    b.add("--training.local_batch_size", num(in.global_batch / c.dp));
    b.add("--parallelism.pipeline_parallel_microbatch_size", num(c.mbs));
    if (x.interleave > 1) {
      // one chunk of slots / V blocks a virtual stage, the first and last one block fewer where
      // the embedding or the loss takes a slot
      const InterleavedChunks chunks = slotted_chunks(m, c);
      const std::int64_t per_stage = chunks.valid ? chunks.slots : m.depth / c.pp;
      b.add("--parallelism.pipeline_parallel_schedule", "Interleaved1F1B");
      b.add("--parallelism.pipeline_parallel_layers_per_stage", num(per_stage / x.interleave));
      b.add("--parallelism.pipeline_parallel_first_stage_less_layers", chunks.embedding_slot ? "1" : "0");
      b.add("--parallelism.pipeline_parallel_last_stage_less_layers", chunks.loss_slot ? "1" : "0");
      if (x.first_stage_blocks > 0 && !chunks.embedding_slot && !chunks.loss_slot) {
        b.note("torchtitan shortens only the first and last virtual stages; the estimate's stages of " +
               num(x.first_stage_blocks) + " and " + num(x.last_stage_blocks) + " blocks are not expressed");
      }
    } else {
      // generate_llm_fqn_per_model_part: the first stage holds per_stage - first_less blocks, the
      // last per_stage - last_less, the others per_stage, where per_stage = (depth + first_less +
      // last_less) / pp; these values make it the estimate's partition
      const LineStages stages = line_stages(in);
      StageBlocks blocks{m.depth / c.pp, m.depth / c.pp, m.depth / c.pp};
      if (stages.first > 0 || stages.last > 0) {
        blocks.first = stages.first > 0 ? stages.first : (m.depth - stages.last) / (c.pp - 1);
        blocks.last = stages.last > 0 ? stages.last : (m.depth - stages.first) / (c.pp - 1);
        blocks.middle = c.pp > 2 ? (m.depth - blocks.first - blocks.last) / (c.pp - 2) : blocks.first;
      }
      note_stages(b, in, "torchtitan");
      const std::int64_t per_stage = c.pp > 2 ? blocks.middle : std::max(blocks.first, blocks.last);
      b.add("--parallelism.pipeline_parallel_schedule", "1F1B");
      b.add("--parallelism.pipeline_parallel_first_stage_less_layers", num(per_stage - blocks.first));
      b.add("--parallelism.pipeline_parallel_last_stage_less_layers", num(per_stage - blocks.last));
    }
  } else {
    // one micro-batch a forward and backward, accumulated to the global batch
    b.add("--training.local_batch_size", num(c.mbs));
  }
  b.add("--training.global_batch_size", num(in.global_batch));
  b.add("--training.seq_len", num(m.l));

  switch (effective_recompute(c)) {
    case Recompute::None: b.add("--activation_checkpoint.mode", "none"); break;
    case Recompute::Selective:
      b.add("--activation_checkpoint.mode", "selective");
      b.add("--activation_checkpoint.selective_ac_option", "op");
      b.note("torchtitan's op-level selective checkpointing keeps every other matmul's output and recomputes the "
             "rest; the estimate recomputes the attention core only");
      break;
    case Recompute::Full: b.add("--activation_checkpoint.mode", "full"); break;
  }
  const ParamDtypes dtypes = param_dtypes(in);
  if (!dtypes.fp32_weights) {
    b.note("torchtitan keeps fp32 weights, gradients and optimizer states and computes in bf16 "
           "(training.mixed_precision_param): the estimate's --layout amp");
  }
  if (!dtypes.fp32_gradients) {
    b.note("the runtime reduces gradients in bf16; torchtitan's FSDP reduces them in fp32 "
           "(training.mixed_precision_reduce has no other choice)");
  }
  if (fp8(in)) {
    // torchao's float8 linear layers (torchtitan/components/quantization/float8.py)
    b.add("--model.converters", "quantize.linear.float8");
    if (fp8_recipe(in) != Fp8Recipe::Current) {
      b.note("torchtitan's float8 scales per tensor from each tensor (the layout's recipe is another)");
    }
    if (in.layout.exec.fp8_params) b.add("--quantize.linear.float8.enable_fsdp_float8_all_gather");
  }
  // FSDP2's CPUOffloadPolicy: parameters, gradients and optimizer states on the host
  if (x.offload == Offload::Weights) b.add("--training.enable_cpu_offload");
  if (!flash_attention(in)) {
    b.note("the estimate costs unfused attention; torchtitan runs PyTorch's scaled_dot_product_attention");
  }
  if (tp_comm_overlap(in)) {
    // async tensor parallelism is a torch.compile pass
    b.add("--parallelism.enable_async_tensor_parallel");
    b.add("--compile.enable");
  }
}

// Whether a shell would split or expand the value.
bool needs_quotes(const std::string& v) {
  return v.find_first_of(" \t\"'$`\\*?[]()<>|;&!#~{}") != std::string::npos;
}
std::string shell_word(const std::string& v) {
  if (!needs_quotes(v)) return v;
  std::string out = "'";
  for (char ch : v) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  out += '\'';
  return out;
}

}  // namespace

const LaunchFrameworkInfo& launch_framework_info(LaunchFramework f) {
  for (const LaunchFrameworkInfo& i : kLaunchFrameworks) {
    if (i.framework == f) return i;
  }
  return kLaunchFrameworks[0];
}

LaunchFramework parse_launch_framework(const std::string& text) {
  for (const LaunchFrameworkInfo& i : kLaunchFrameworks) {
    if (text == i.name) return i.framework;
  }
  std::string msg = "--launch must be megatron, nemo or torchtitan, got '";
  msg += text;
  msg += "'";
  throw InputError(msg);
}

void check_launch_strategy(LaunchFramework framework, Strategy strategy) {
  if (strategy == Strategy::OneD) return;
  const LaunchFrameworkInfo& info = launch_framework_info(framework);
  std::string msg = "--launch ";
  msg += info.name;
  msg += ": the ";
  msg += strategy == Strategy::TwoD ? "2d (SUMMA)" : "2d-seqp (sequence over tp2)";
  msg += " strategy has no equivalent in ";
  msg += info.name;
  msg += ", whose tensor parallelism is 1d (--strat 1d)";
  throw ConfigError(msg);
}

LaunchLine launch_line(LaunchFramework framework, const LaunchInput& in) {
  const LaunchFrameworkInfo& info = launch_framework_info(framework);
  check_launch_strategy(framework, in.layout.strategy);
  LaunchLine line;
  line.framework = framework;
  Builder b(line);
  b.note(intro(framework, in.model));
  std::string source = "argument names of ";
  source += info.source;
  b.note(std::move(source));
  b.note(gpus_note(in.layout, info.gpus));
  note_model(b.notes(), in.model, info.display);
  if (in.layout.exec.schedule != PipelineSchedule::OneFOneB) {
    // Megatron-LM and NeMo run 1F1B and interleaved 1F1B; torchtitan's zero-bubble and DualPipe
    // schedules are the V-shaped ones (two chunks a GPU), which the estimate does not cost
    std::string note = "the estimate's ";
    note += kScheduleNames[static_cast<std::size_t>(in.layout.exec.schedule)];
    note += " schedule has no ";
    note += info.display;
    note += " argument: the line runs 1F1B";
    b.note(std::move(note));
  }
  const Offload offload = in.layout.exec.offload;
  bool offload_spelled = offload == Offload::None;
  switch (framework) {
    // Megatron-LM core_v0.15.3 has arguments for the optimizer's offload only
    case LaunchFramework::Megatron: offload_spelled = offload_spelled || offload == Offload::Optimizer; break;
    // NeMo sets Megatron-Core's activation offloading too, where its TransformerConfig runs it
    case LaunchFramework::Nemo:
      offload_spelled = offload_spelled || offload == Offload::Optimizer ||
                        (offload == Offload::Activations && activation_offload_runs(in.layout));
      break;
    // torchtitan offloads whole FSDP states only
    case LaunchFramework::Torchtitan: offload_spelled = offload_spelled || offload == Offload::Weights; break;
  }
  if (!offload_spelled) {
    std::string note = "the estimate's offload ";
    note += kOffloadNames[static_cast<std::size_t>(offload)];
    note += " has no ";
    note += info.display;
    note += " argument";
    if (framework == LaunchFramework::Nemo && offload == Offload::Activations) {
      note += " with pipeline parallelism or recomputation (Megatron-Core's TransformerConfig refuses CPU "
              "offloading with either)";
    }
    note += ": the line keeps it on the GPU";
    b.note(std::move(note));
  }
  switch (framework) {
    case LaunchFramework::Megatron: megatron_line(in, b); break;
    case LaunchFramework::Nemo: nemo_line(in, b); break;
    case LaunchFramework::Torchtitan: torchtitan_line(in, b); break;
  }
  return line;
}

std::string launch_arguments_text(const LaunchLine& line) {
  const bool assigns = line.framework == LaunchFramework::Nemo;
  std::string out;
  for (const LaunchArgument& a : line.arguments) {
    if (!out.empty()) out += ' ';
    out += a.name;
    if (a.value.empty()) continue;
    out += assigns ? '=' : ' ';
    if (!a.words) {
      out += shell_word(a.value);
      continue;
    }
    for (std::size_t i = 0, at = 0; at <= a.value.size(); ++i) {
      const std::size_t end = std::min(a.value.find(' ', at), a.value.size());
      if (i > 0) out += ' ';
      out += shell_word(a.value.substr(at, end - at));
      at = end + 1;
    }
  }
  return out;
}

std::string launch_text(const LaunchLine& line) {
  std::string out;
  for (const std::string& n : line.notes) {
    out += "# ";
    out += n;
    out += '\n';
  }
  out += launch_arguments_text(line);
  out += '\n';
  return out;
}

}  // namespace perfsweep
