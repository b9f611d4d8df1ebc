// Launch lines (io/launch.hpp): every name each framework's line can carry is one of that
// framework's parser (test/data/launch/<framework>_arguments.txt, copied from its source), the
// values of the flags with fixed choices are among them, hand-derived lines for two
// configurations, and the 2d strategies refused.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "core/error.hpp"
#include "io/launch.hpp"

namespace perfsweep {
namespace {

std::set<std::string> parser_names(const std::string& framework) {
  const std::string path = std::string(PERFSWEEP_TEST_DATA_DIR) + "/launch/" + framework + "_arguments.txt";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() != '#') names.insert(line.substr(0, line.find('\t')));
  }
  return names;
}

Layout layout_1d(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t mbs) {
  Layout c;
  c.tensor.tp1 = tp;
  c.tensor.nv1 = std::min<std::int64_t>(tp, 8);
  c.nv_dp = std::max<std::int64_t>(1, std::min<std::int64_t>(dp, 8 / c.tensor.nv1));
  c.pp = pp;
  c.dp = dp;
  c.mbs = mbs;
  return c;
}

// A model with every option a launch line reads switched away from llama3_70b's.
Transformer every_option_model() {
  Transformer m = load_model_named("mixtral_8x7b");
  m.name = "every_option";
  m.moe.every = 2;
  m.moe.shared_experts = 1;
  m.moe.capacity_factor = 1.25;
  m.qkv_bias = true;
  m.dropout = 0.1;
  m.tie_embeddings = true;
  m.learned_positions = true;
  m.norm = NormKind::LayerNorm;
  m.mlp = MlpKind::Gelu;
  m.mtp_layers = 1;
  return m;
}

// The lines of many configurations: every model kind, recomputation, ZeRO stage, interleaving,
// sequence parallelism, parameter layout, attention, TP overlap, expert parallelism, stage
// partition and placement the generator distinguishes.
std::vector<LaunchLine> many_lines(LaunchFramework f) {
  const std::vector<Transformer> models = {load_model_named("gpt3_1T"), load_model_named("llama3_70b"),
                                           load_model_named("mixtral_8x7b"), every_option_model()};
  std::vector<LaunchLine> lines;
  for (const Transformer& m : models) {
    for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
      for (std::int64_t zero = 0; zero <= 3; ++zero) {
        for (ParamLayout p : {ParamLayout::Reference, ParamLayout::Megatron, ParamLayout::Amp}) {
          for (int variant = 0; variant < 6; ++variant) {
            Layout c = layout_1d(variant % 2 == 0 ? 8 : 2, variant < 2 ? 1 : 4, 16, 1);
            c.exec.recompute = r;
            c.exec.zero = zero;
            c.exec.params = p;
            c.exec.sequence_parallel = variant != 3;
            if (variant == 2) c.exec.interleave = 2;
            if (variant == 4) c.exec.first_stage_blocks = c.exec.last_stage_blocks = 2;
            if (variant == 5) {  // tp-pp-dp placement, unfused attention recomputed
              c.nv_dp = 1;
              c.nv_pp = 4;
              c.attention.flash = false;
              c.attention.recompute = true;
            }
            if (variant == 3) c.nv_pp = 2;  // a placement no rank order gives
            if (variant == 1) {             // context parallelism with each exchange
              c.tensor.cp = 2;
              c.exec.cp_comm = static_cast<CpComm>((static_cast<std::size_t>(r) + static_cast<std::size_t>(zero)) %
                                                   std::size(kCpCommNames));
            }
            if (m.is_moe()) c.exec.ep = variant % 3 == 0 ? 1 : 2;
            Runtime rt;
            rt.tp_comm_overlap = variant % 2 == 0 ? 0.5 : 0;
            if (p != ParamLayout::Reference) {  // FP8 in each recipe, weights gathered in FP8 or not
              c.exec.precision = Precision::Fp8;
              rt.mechanisms.fp8 = Fp8Policy{static_cast<Fp8Recipe>(1 + static_cast<std::size_t>(variant) %
                                                                (std::size(kLowPrecisionRecipes) - 1)),
                                 true, true, variant % 2 == 1};
            }
            lines.push_back(launch_line(f, {m, c, rt, 4096, 8}));
          }
        }
      }
    }
  }
  return lines;
}

// Every name the lines of many_lines carry is in the framework's list, which is the parser's
// whole (at least `min_names` names), and the lines carry at least `min_emitted` names.
void expect_names_in_parser(LaunchFramework f, const std::string& list, std::size_t min_names,
                            std::size_t min_emitted) {
  const std::set<std::string> names = parser_names(list);
  ASSERT_GT(names.size(), min_names);
  std::set<std::string> emitted;
  for (const LaunchLine& line : many_lines(f)) {
    for (const LaunchArgument& a : line.arguments) emitted.insert(a.name);
  }
  EXPECT_GT(emitted.size(), min_emitted);
  for (const std::string& n : emitted) EXPECT_TRUE(names.count(n)) << n << " is not in " << list << "_arguments.txt";
}

TEST(Launch, EveryMegatronFlagIsInItsParser) { expect_names_in_parser(LaunchFramework::Megatron, "megatron", 500, 40); }
TEST(Launch, EveryNemoOverrideIsInItsConfigs) { expect_names_in_parser(LaunchFramework::Nemo, "nemo", 300, 35); }
TEST(Launch, EveryTorchtitanFlagIsInItsJobConfig) {
  expect_names_in_parser(LaunchFramework::Torchtitan, "torchtitan", 100, 15);
}

// The flags with fixed choices and their choices in the parsers' source (megatron/training/
// arguments.py at core_v0.15.3 and megatron/core/transformer/enums.py AttnBackend;
// torchtitan/config/job_config.py at v0.2.2; Megatron-Core core_v0.14.0 for NeMo's model.config).
TEST(Launch, ChoiceValuesAreTheParsers) {
  const std::map<std::string, std::set<std::string>> choices = {
      {"--recompute-granularity", {"full", "selective"}},
      {"--recompute-method", {"uniform", "block"}},
      {"--normalization", {"LayerNorm", "RMSNorm"}},
      {"--data-parallel-sharding-strategy", {"no_shard", "optim", "optim_grads", "optim_grads_params"}},
      {"--moe-token-dispatcher-type", {"allgather", "alltoall", "flex"}},
      {"--attention-backend", {"flash", "fused", "unfused", "local", "auto"}},
      {"--position-embedding-type", {"learned_absolute", "rope", "mrope", "relative", "none"}},
      {"--activation_checkpoint.mode", {"selective", "full", "memory_budget", "none"}},
      {"--parallelism.fsdp_reshard_after_forward", {"default", "always", "never"}},
      {"trainer.strategy.ddp.data_parallel_sharding_strategy",
       {"no_shard", "optim", "optim_grads", "optim_grads_params"}},
      {"model.config.recompute_granularity", {"None", "full", "selective"}},
      {"model.config.recompute_method", {"uniform", "block"}},
      {"model.config.normalization", {"LayerNorm", "RMSNorm"}},
      // megatron/training/arguments.py: --fp8-format choices e4m3, hybrid; --fp8-recipe choices
      {"--fp8-format", {"e4m3", "hybrid"}},
      {"--fp8-recipe", {"tensorwise", "delayed", "mxfp8", "blockwise"}},
      {"model.config.fp8", {"e4m3", "hybrid"}},
      {"model.config.fp8_recipe", {"tensorwise", "delayed", "mxfp8", "blockwise"}},
      // --fp4-format e2m1, --fp4-recipe nvfp4 (Megatron-Core's Fp4Recipe); NeMo's plugin the same
      {"--fp4-format", {"e2m1"}},
      {"--fp4-recipe", {"nvfp4"}},
      {"trainer.plugins.fp4", {"e2m1"}},
      {"trainer.plugins.fp4_recipe", {"nvfp4"}},
      // --cp-comm-type's help (arguments.py): p2p, a2a, allgather or a2a+p2p; the same strings in
      // TransformerConfig.cp_comm_type; torchtitan's context_parallel_rotate_method
      {"--cp-comm-type", {"p2p", "a2a", "allgather", "a2a+p2p"}},
      {"model.config.cp_comm_type", {"p2p", "a2a", "allgather", "a2a+p2p"}},
      {"--parallelism.context_parallel_rotate_method", {"allgather", "alltoall"}},
  };
  std::set<std::string> cp_values, recipe_values;
  for (LaunchFramework f : {LaunchFramework::Megatron, LaunchFramework::Nemo, LaunchFramework::Torchtitan}) {
    for (const LaunchLine& line : many_lines(f)) {
      for (const LaunchArgument& a : line.arguments) {
        const auto it = choices.find(a.name);
        if (it != choices.end()) {
          EXPECT_TRUE(it->second.count(a.value)) << a.name << " " << a.value;
        }
        if (a.name == "--cp-comm-type") cp_values.insert(a.value);
        if (a.name == "--fp8-recipe" || a.name == "--fp4-recipe") recipe_values.insert(a.value);
      }
    }
  }
  EXPECT_EQ(cp_values, (std::set<std::string>{"p2p", "allgather", "a2a", "a2a+p2p"}));
  EXPECT_EQ(recipe_values, (std::set<std::string>{"delayed", "tensorwise", "mxfp8", "nvfp4"}));
}

// Llama-3-70B on 512 GPUs: tp 4, pp 4, dp 32, micro-batch 1, global batch 2048, sequence 8192,
// ZeRO-1 (Megatron-LM's distributed optimizer), sequence parallelism, bf16 weights with fp32
// gradients (--layout megatron), flash attention; 8 GPUs a domain: the tensor group and 2 of the
// data-parallel group, the order Megatron-LM's ranks take (no mapping flag, no placement note).
struct Llama70b {
  Transformer model = load_model_named("llama3_70b");
  Layout layout;
  Runtime runtime;
  Llama70b() {
    layout = layout_1d(4, 4, 32, 1);
    layout.exec.params = ParamLayout::Megatron;
  }
  LaunchLine line(LaunchFramework f) const { return launch_line(f, {model, layout, runtime, 2048, 8}); }
};

TEST(Launch, MegatronLlama70b) {
  const LaunchLine line = Llama70b().line(LaunchFramework::Megatron);
  EXPECT_EQ(launch_arguments_text(line),
            "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 4 --sequence-parallel "
            "--micro-batch-size 1 --global-batch-size 2048 --max-position-embeddings 8192 --vocab-size 128256 "
            "--seq-length 8192 --num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 "
            "--group-query-attention --num-query-groups 8 --normalization RMSNorm --swiglu --disable-bias-linear "
            "--hidden-dropout 0 --attention-dropout 0 --norm-epsilon 1e-05 --untie-embeddings-and-output-weights "
            "--position-embedding-type rope --rotary-base 500000 --make-vocab-size-divisible-by 64 "
            "--use-distributed-optimizer --bf16 --accumulate-allreduce-grads-in-fp32 --attention-backend flash");
  const std::string text = launch_text(line);
  EXPECT_NE(text.find("# 512 GPUs: "), std::string::npos) << text;
  EXPECT_NE(text.find("(data-parallel size 32 = 512 / (tensor 4 x pipeline 4))"), std::string::npos) << text;
  EXPECT_NE(text.find("# argument names of NVIDIA/Megatron-LM core_v0.15.3"), std::string::npos) << text;
  EXPECT_EQ(text.find("placed"), std::string::npos) << text;
}

// The same in FP8 under the megatron runtime's recipe (Transformer Engine's delayed scaling).
TEST(Launch, MegatronLlama70bFp8) {
  Llama70b l;
  l.layout.exec.precision = Precision::Fp8;
  l.runtime.mechanisms.fp8 = Fp8Policy{Fp8Recipe::Delayed, true, true};
  const std::string text = launch_arguments_text(l.line(LaunchFramework::Megatron));
  EXPECT_NE(text.find("--bf16 --accumulate-allreduce-grads-in-fp32 --fp8-format hybrid --fp8-recipe delayed "
                      "--attention-backend flash"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("--fp8-param-gather"), std::string::npos) << text;
  l.layout.exec.fp8_params = true;  // --fp8-params on (or a runtime's fp8_weight_gather: runtime_defaults)
  EXPECT_NE(launch_arguments_text(l.line(LaunchFramework::Megatron)).find("--fp8-recipe delayed --fp8-param-gather"),
            std::string::npos);
  l.runtime.mechanisms.fp8.recipe = Fp8Recipe::Current;
  // NeMo's precision plugin sets the model config's FP8 fields: they go to trainer.plugins
  EXPECT_NE(launch_arguments_text(l.line(LaunchFramework::Nemo))
                .find("trainer.plugins.fp8=hybrid trainer.plugins.fp8_recipe=tensorwise trainer.plugins.fp8_param_gather=True"),
            std::string::npos);
  EXPECT_NE(launch_arguments_text(l.line(LaunchFramework::Torchtitan)).find("--model.converters quantize.linear.float8"),
            std::string::npos);
}

TEST(Launch, NemoLlama70b) {
  const LaunchLine line = Llama70b().line(LaunchFramework::Nemo);
  EXPECT_EQ(launch_arguments_text(line),
            "trainer.strategy.tensor_model_parallel_size=4 trainer.strategy.pipeline_model_parallel_size=4 "
            "trainer.strategy.virtual_pipeline_model_parallel_size=None trainer.strategy.context_parallel_size=1 "
            "trainer.strategy.sequence_parallel=True optim.config.use_distributed_optimizer=True "
            "trainer.plugins.precision=bf16-mixed trainer.plugins.grad_reduce_in_fp32=True data.seq_length=8192 "
            "data.micro_batch_size=1 "
            "data.global_batch_size=2048 model.config.seq_length=8192 model.config.num_layers=80 "
            "model.config.hidden_size=8192 model.config.ffn_hidden_size=28672 model.config.num_attention_heads=64 "
            "model.config.num_query_groups=8 model.config.normalization=RMSNorm model.config.gated_linear_unit=True "
            "model.config.add_bias_linear=False model.config.hidden_dropout=0 model.config.attention_dropout=0 "
            "model.config.layernorm_epsilon=1e-05 model.config.share_embeddings_and_output_weights=False "
            "model.config.position_embedding_type=rope model.config.rotary_base=500000 "
            "model.config.make_vocab_size_divisible_by=64 model.config.recompute_granularity=None");
  EXPECT_EQ(line.notes.front(), "nemo llm pretrain --factory llama3_70b followed by these overrides");
}

TEST(Launch, TorchtitanLlama70b) {
  const LaunchLine line = Llama70b().line(LaunchFramework::Torchtitan);
  // ZeRO-1 is nearest FSDP without resharding after the forward (with a note); the pipeline's
  // 2048 / 32 = 64 samples of a data-parallel rank in one schedule of 64 micro-batches; no stage
  // given fewer blocks for the embedding or the head (torchtitan's default is one fewer each).
  EXPECT_EQ(launch_arguments_text(line),
            "--model.name llama3 --model.flavor 70B --parallelism.tensor_parallel_degree 4 "
            "--parallelism.pipeline_parallel_degree 4 --parallelism.data_parallel_replicate_degree 1 "
            "--parallelism.data_parallel_shard_degree 32 --parallelism.fsdp_reshard_after_forward never "
            "--training.local_batch_size 64 --parallelism.pipeline_parallel_microbatch_size 1 "
            "--parallelism.pipeline_parallel_schedule 1F1B --parallelism.pipeline_parallel_first_stage_less_layers 0 "
            "--parallelism.pipeline_parallel_last_stage_less_layers 0 --training.global_batch_size 2048 "
            "--training.seq_len 8192 --activation_checkpoint.mode none");
  const std::string text = launch_text(line);
  EXPECT_NE(text.find("# ZeRO-1 (optimizer states sharded, gradients whole) has no torchtitan equivalent"),
            std::string::npos)
      << text;
}

// Mixtral 8x7B on 64 GPUs: tp 2, pp 4 with 2 virtual stages a GPU, dp 8 with experts over ep 4,
// micro-batch 2, global batch 256, full recomputation, no ZeRO, the reference's 2 + 2 bytes a
// parameter (bf16 with bf16 gradient reduction), and a runtime that overlaps tensor-parallel
// communication. The vocabulary: 32000 / 2 = 16000 rows a GPU, 128 x 125, so 128 pads nothing.
TEST(Launch, MegatronMixtralInterleavedExpertParallel) {
  const Transformer model = load_model_named("mixtral_8x7b");
  Layout c = layout_1d(2, 4, 8, 2);
  c.exec.interleave = 2;
  c.exec.ep = 4;
  c.exec.zero = 0;
  c.exec.recompute = Recompute::Full;
  c.exec.tp_comm_overlap = true;
  Runtime rt;
  rt.tp_comm_overlap = 0.6;
  const LaunchLine line = launch_line(LaunchFramework::Megatron, {model, c, rt, 256, 8});
  EXPECT_EQ(launch_arguments_text(line),
            "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
            "--sequence-parallel --expert-model-parallel-size 4 --micro-batch-size 2 --global-batch-size 256 "
            "--max-position-embeddings 4096 --vocab-size 32000 --seq-length 4096 --num-layers 32 --hidden-size 4096 "
            "--ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention --num-query-groups 8 "
            "--normalization RMSNorm --swiglu --disable-bias-linear --hidden-dropout 0 --attention-dropout 0 "
            "--norm-epsilon 1e-05 --untie-embeddings-and-output-weights --position-embedding-type rope "
            "--rotary-base 1000000 --make-vocab-size-divisible-by 128 "
            "--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 14336 --moe-token-dispatcher-type alltoall "
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 --bf16 "
            "--grad-reduce-in-bf16 --attention-backend flash --tp-comm-overlap");

  // group-limited routing as Megatron-Core's router takes it (8 experts in 4 groups, top 2 of 2)
  Transformer grouped = model;
  grouped.moe.groups = 4;
  grouped.moe.group_top_k = 2;
  EXPECT_NE(launch_arguments_text(launch_line(LaunchFramework::Megatron, {grouped, c, rt, 256, 8}))
                .find("--moe-token-dispatcher-type alltoall --moe-router-num-groups 4 --moe-router-group-topk 2 "),
            std::string::npos);
  // A pipeline layout's uneven chunks (4 stages of 2 chunks: 3 blocks in the first stage's first,
  // 5 in the last stage's last, 4 in the 6 others) as Megatron-Core's layout string, which gives
  // the virtual stages itself
  Layout chunked = c;
  chunked.exec.first_stage_blocks = 7;
  chunked.exec.last_stage_blocks = 9;
  chunked.exec.layout_chunk_blocks = 4;
  const std::string chunked_args = launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, chunked, rt, 256, 8}));
  EXPECT_NE(chunked_args.find("--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout 'Et*3|(t*4|)*6t*5L' "),
            std::string::npos)
      << chunked_args;
  EXPECT_EQ(chunked_args.find("--num-virtual-stages-per-pipeline-rank"), std::string::npos);
  EXPECT_EQ(chunked_args.find("--decoder-first-pipeline-num-layers"), std::string::npos);
  EXPECT_NE(launch_arguments_text(launch_line(LaunchFramework::Nemo, {model, chunked, rt, 256, 8}))
                .find("trainer.strategy.pipeline_model_parallel_layout='Et*3|(t*4|)*6t*5L'"),
            std::string::npos);
  // DeepEP's dispatch: Megatron-Core's flex dispatcher with DeepEP on
  Layout deepep = c;
  deepep.exec.moe_dispatcher = MoeDispatcher::DeepEp;
  EXPECT_NE(launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, deepep, rt, 256, 8}))
                .find("--moe-token-dispatcher-type flex --moe-enable-deepep "),
            std::string::npos);
  EXPECT_NE(launch_arguments_text(launch_line(LaunchFramework::Nemo, {model, deepep, rt, 256, 8}))
                .find("model.config.moe_token_dispatcher_type=flex model.config.moe_enable_deepep=True"),
            std::string::npos);

  const LaunchLine titan = launch_line(LaunchFramework::Torchtitan, {model, c, rt, 256, 8});
  const std::string args = launch_arguments_text(titan);
  // ZeRO 0 is torchtitan's DDP, which runs with no other parallelism: FSDP over 8 (with a note);
  // experts over 4 of them and the tensor group; 4 blocks a virtual stage
  EXPECT_NE(launch_text(titan).find("# ZeRO 0 (whole states on every data-parallel rank) is torchtitan's DDP"),
            std::string::npos);
  for (const char* part :
       {"--parallelism.data_parallel_replicate_degree 1 --parallelism.data_parallel_shard_degree 8 "
        "--parallelism.fsdp_reshard_after_forward never ",
        "--parallelism.expert_parallel_degree 4 --parallelism.expert_tensor_parallel_degree 2 ",
        "--training.local_batch_size 32 --parallelism.pipeline_parallel_microbatch_size 2 "
        "--parallelism.pipeline_parallel_schedule Interleaved1F1B --parallelism.pipeline_parallel_layers_per_stage 4 ",
        "--activation_checkpoint.mode full --parallelism.enable_async_tensor_parallel --compile.enable"}) {
    EXPECT_NE(args.find(part), std::string::npos) << part << " not in " << args;
  }
}

// Expert tensor parallelism: each expert whole on one GPU (etp 1) under tp 2 is Megatron-LM's
// --expert-tensor-parallel-size 1, NeMo's model.config.expert_tensor_parallel_size=1 and torchtitan's
// default (no flag); etp equal to tp writes nothing in Megatron-LM's and NeMo's lines (their
// default), torchtitan's degree 2. Every name is in its parser's list.
TEST(Launch, ExpertTensorParallelSize) {
  const Transformer model = load_model_named("mixtral_8x7b");
  Layout c = layout_1d(2, 4, 8, 2);
  c.exec.ep = 4;
  c.exec.etp = 1;
  const Runtime rt;
  const std::string megatron = launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, c, rt, 256, 8}));
  EXPECT_NE(megatron.find("--expert-model-parallel-size 4 --expert-tensor-parallel-size 1 "), std::string::npos)
      << megatron;
  const std::string nemo = launch_text(launch_line(LaunchFramework::Nemo, {model, c, rt, 256, 8}));
  EXPECT_NE(nemo.find("model.config.expert_tensor_parallel_size=1"), std::string::npos) << nemo;
  const std::string titan = launch_arguments_text(launch_line(LaunchFramework::Torchtitan, {model, c, rt, 256, 8}));
  EXPECT_NE(titan.find("--parallelism.expert_parallel_degree 4 "), std::string::npos) << titan;
  EXPECT_EQ(titan.find("expert_tensor_parallel_degree"), std::string::npos) << titan;
  for (const std::int64_t etp : {std::int64_t{0}, std::int64_t{2}}) {
    c.exec.etp = etp;
    EXPECT_EQ(launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, c, rt, 256, 8}))
                  .find("--expert-tensor-parallel-size"),
              std::string::npos);
    EXPECT_EQ(launch_text(launch_line(LaunchFramework::Nemo, {model, c, rt, 256, 8})).find("expert_tensor_parallel_size"),
              std::string::npos);
  }
}

// The case: Llama 3 70B under the nemo runtime (bf16 gradient buffers, current-scaling
// FP8, TP overlap), tp 4, pp 8 with 5 virtual stages. Megatron-LM trains it in bf16 with gradients
// reduced in bf16 (never --fp16), with the model's rotary base and norm epsilon, and a vocabulary
// padded to the estimate's 128256 rows: ceil(128256 / 4) = 32064 = 64 x 501, so 64 (its default
// 128 would pad to 128512). NeMo takes the data types and FP8 from its precision plugin.
TEST(Launch, Llama70bUnderNemoRuntime) {
  const Transformer model = load_model_named("llama3_70b");
  const Runtime rt = load_runtime_named("nemo");
  Layout c = layout_1d(4, 8, 2, 1);
  c.nv_dp = 2;
  c.exec.interleave = 5;
  c.exec.precision = Precision::Fp8;
  const std::string megatron = launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, c, rt, 128, 8}));
  EXPECT_EQ(megatron.find("--fp16"), std::string::npos) << megatron;
  for (const char* part : {"--norm-epsilon 1e-05 ", "--rotary-base 500000 --make-vocab-size-divisible-by 64 ",
                           "--bf16 --grad-reduce-in-bf16 --fp8-format hybrid --fp8-recipe tensorwise "}) {
    EXPECT_NE(megatron.find(part), std::string::npos) << part << " not in " << megatron;
  }
  const std::string nemo = launch_arguments_text(launch_line(LaunchFramework::Nemo, {model, c, rt, 128, 8}));
  EXPECT_NE(nemo.find("trainer.plugins.precision=bf16-mixed trainer.plugins.grad_reduce_in_fp32=False "
                      "trainer.plugins.fp8=hybrid trainer.plugins.fp8_recipe=tensorwise "
                      "trainer.plugins.fp8_param_gather=False "),
            std::string::npos)
      << nemo;
  EXPECT_EQ(nemo.find("model.config.fp8"), std::string::npos) << nemo;
  // torchtitan reduces in fp32 only, and its 70B flavor scales the rotary frequencies as Llama 3.1
  const std::string titan = launch_text(launch_line(LaunchFramework::Torchtitan, {model, c, rt, 128, 8}));
  EXPECT_NE(titan.find("# the runtime reduces gradients in bf16; torchtitan's FSDP reduces them in fp32"),
            std::string::npos)
      << titan;
  EXPECT_NE(titan.find("# torchtitan's llama3 70B flavor fixes Llama 3.1's rotary scaling with factor 8 (the model: "
                       "none)"),
            std::string::npos)
      << titan;
}

// What the model leaves open, and a vocabulary the tensor group does not divide: GPT-2's 50257
// tokens over tp 4 are 12565 rows a GPU (odd: divisible by 1 only), padded to 50260; its learned
// positions have no rotary base. The 1.3B GPT of the measured runs gives no rope_theta: Megatron's
// default, with a note. Llama 3.1 405B scales its rotary frequencies (factor 8).
TEST(Launch, NumericsAndVocabularyPadding) {
  const Runtime rt;
  const Layout c = layout_1d(4, 1, 2, 1);
  const LaunchLine gpt2 = launch_line(LaunchFramework::Megatron, {load_model_named("gpt2_small"), c, rt, 16, 8});
  const std::string gpt2_args = launch_arguments_text(gpt2);
  EXPECT_NE(gpt2_args.find("--make-vocab-size-divisible-by 1 "), std::string::npos) << gpt2_args;
  EXPECT_EQ(gpt2_args.find("--rotary-base"), std::string::npos) << gpt2_args;
  EXPECT_NE(launch_text(gpt2).find("# the tokenizer's 50257 tokens padded to 50260 (a multiple of "
                                   "make-vocab-size-divisible-by 1 x tensor 4), the rows the estimate costs"),
            std::string::npos)
      << launch_text(gpt2);
  const std::string gpt13 =
      launch_text(launch_line(LaunchFramework::Megatron, {load_model_named("gpt_1_3b"), c, rt, 16, 8}));
  EXPECT_NE(gpt13.find("# the model gives no rope_theta (rotary base): Megatron-LM's --rotary-base default 10000 "
                       "applies"),
            std::string::npos)
      << gpt13;
  const std::string big = launch_arguments_text(
      launch_line(LaunchFramework::Megatron, {load_model_named("llama3_405b"), layout_1d(8, 1, 2, 1), rt, 16, 8}));
  EXPECT_NE(big.find("--use-rope-scaling --rope-scaling-factor 8 "), std::string::npos) << big;
  // tensor 16 over 8 key/value heads: Megatron-Core 0.16's replication, which the targets refuse
  const std::string wide = launch_text(
      launch_line(LaunchFramework::Megatron, {load_model_named("llama3_405b"), layout_1d(16, 1, 1, 1), rt, 16, 8}));
  EXPECT_NE(wide.find("# Megatron-Core core_v0.15.3's TransformerConfig needs the key/value heads (num_query_groups "
                      "8) a multiple of tensor 16"),
            std::string::npos)
      << wide;
}

// Multi-token prediction's depths, as Megatron-LM and NeMo take them.
TEST(Launch, MultiTokenPrediction) {
  Transformer m = load_model_named("llama3_8b");
  m.mtp_layers = 2;
  const Layout c = layout_1d(4, 1, 2, 1);
  const std::string megatron = launch_arguments_text(launch_line(LaunchFramework::Megatron, {m, c, Runtime{}, 16, 8}));
  EXPECT_NE(megatron.find("--mtp-num-layers 2 "), std::string::npos) << megatron;
  const std::string nemo = launch_arguments_text(launch_line(LaunchFramework::Nemo, {m, c, Runtime{}, 16, 8}));
  EXPECT_NE(nemo.find("model.config.mtp_num_layers=2"), std::string::npos) << nemo;
  m.mtp_layers = 0;
  EXPECT_EQ(launch_arguments_text(launch_line(LaunchFramework::Megatron, {m, c, Runtime{}, 16, 8})).find("mtp"),
            std::string::npos);
}

// Uneven stages (7 blocks on each end stage of llama3_8b's 32 over 4 stages, 9 on the middle ones)
// and the tp-pp-dp placement (the tensor group, then the pipeline, in a domain of 8).
TEST(Launch, UnevenStagesAndPlacement) {
  const Transformer model = load_model_named("llama3_8b");
  Layout c = layout_1d(2, 4, 2, 1);
  c.nv_dp = 1;
  c.nv_pp = 4;
  c.exec.first_stage_blocks = 7;
  c.exec.last_stage_blocks = 7;
  const Runtime rt;
  const std::string megatron = launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, c, rt, 64, 8}));
  EXPECT_NE(megatron.find("--decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 7 "
                          "--sequence-parallel --use-tp-pp-dp-mapping "),
            std::string::npos)
      << megatron;
  // torchtitan: per stage (32 + 2 + 2) / 4 = 9, the first and the last 2 fewer
  const LaunchLine titan = launch_line(LaunchFramework::Torchtitan, {model, c, rt, 64, 8});
  EXPECT_NE(launch_arguments_text(titan).find("--parallelism.pipeline_parallel_first_stage_less_layers 2 "
                                              "--parallelism.pipeline_parallel_last_stage_less_layers 2 "),
            std::string::npos);
  EXPECT_NE(launch_text(titan).find("# the estimate placed nv_tp=2 nv_dp=1 nv_pp=4 GPUs of each group in an NVLink "
                                    "domain; torchtitan (mesh pp, dp, tp)'s rank order places nv_tp=2 nv_dp=2 "
                                    "nv_pp=2"),
            std::string::npos)
      << launch_text(titan);
  // two stages of 10 and 22 blocks: 22 each, the first 12 fewer
  c = layout_1d(2, 2, 2, 1);
  c.exec.first_stage_blocks = 10;
  c.exec.last_stage_blocks = 22;
  EXPECT_NE(launch_arguments_text(launch_line(LaunchFramework::Torchtitan, {model, c, rt, 64, 8}))
                .find("--parallelism.pipeline_parallel_first_stage_less_layers 12 "
                      "--parallelism.pipeline_parallel_last_stage_less_layers 0 "),
            std::string::npos);
}

// A layout that numbers ranks tp-cp-ep-pp-dp (its runtime's rank_order, llama3.yaml, or
// --rank-order): Megatron-LM's
// --use-tp-pp-dp-mapping and NeMo's use_tp_pp_dp_mapping whatever the placement (TP 8 fills a
// domain, so both orders place it alike), with a note under context parallelism, which
// Megatron-Core documents the option without; torchtitan has no such option: a note. The default
// order emits neither.
TEST(Launch, LayoutRankOrder) {
  const Transformer model = load_model_named("llama3_8b");
  Layout c = layout_1d(8, 4, 16, 1);
  Layout c_inner = c;
  c_inner.exec.rank_order = RankOrder::PipelineInnerDataOuter;  // the runtime's, or --rank-order's
  Runtime megatron_order;
  Runtime pipeline_inner;
  pipeline_inner.rank_order = RankOrder::PipelineInnerDataOuter;
  // the layout's order decides, whatever the runtime's default
  const LaunchInput plain{model, c, pipeline_inner, 64, 8};
  const LaunchInput inner{model, c_inner, megatron_order, 64, 8};
  EXPECT_EQ(launch_arguments_text(launch_line(LaunchFramework::Megatron, plain)).find("--use-tp-pp-dp-mapping"),
            std::string::npos);
  EXPECT_NE(launch_arguments_text(launch_line(LaunchFramework::Megatron, inner)).find("--use-tp-pp-dp-mapping"),
            std::string::npos);
  EXPECT_EQ(launch_text(launch_line(LaunchFramework::Megatron, inner)).find("Make sure EP and CP"), std::string::npos);
  EXPECT_EQ(launch_arguments_text(launch_line(LaunchFramework::Nemo, plain)).find("use_tp_pp_dp_mapping"),
            std::string::npos);
  EXPECT_NE(launch_arguments_text(launch_line(LaunchFramework::Nemo, inner))
                .find("trainer.strategy.use_tp_pp_dp_mapping"),
            std::string::npos);
  EXPECT_NE(launch_text(launch_line(LaunchFramework::Torchtitan, inner)).find("no option for another order"),
            std::string::npos);
  EXPECT_EQ(launch_text(launch_line(LaunchFramework::Torchtitan, plain)).find("no option for another order"),
            std::string::npos);
  c_inner.tensor.cp = 2;
  const std::string with_cp = launch_text(launch_line(LaunchFramework::Megatron, {model, c_inner, pipeline_inner, 64, 8}));
  EXPECT_NE(with_cp.find("--use-tp-pp-dp-mapping"), std::string::npos) << with_cp;
  EXPECT_NE(with_cp.find("Make sure EP and CP aren't used with this option enabled"), std::string::npos) << with_cp;
}

// The hierarchical exchange (a2a+p2p) states its levels as Megatron-LM's list argument: Llama 3 70B
// at tp 2 leaves a rank 32 query and 4 key/value heads; cp 8 with 4 in a domain splits them over 4
// GPUs by all-to-alls, the ring over the other 2 (arguments.py requires the sizes with a2a+p2p).
// NeMo passes no hierarchical sizes to Megatron-Core's groups, which its line notes.
TEST(Launch, HierarchicalContextParallelSizes) {
  const Transformer model = load_model_named("llama3_70b");
  Layout c = layout_1d(2, 4, 4, 1);
  c.tensor.cp = 8;
  c.tensor.nv_cp = 4;
  c.tensor.nv1 = 2;
  c.nv_dp = 1;
  c.exec.cp_comm = CpComm::AllToAllP2P;
  const Runtime rt;
  const std::string megatron = launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, c, rt, 64, 8}));
  EXPECT_NE(megatron.find("--context-parallel-size 8 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 4 2 "),
            std::string::npos)
      << megatron;
  const std::string nemo = launch_text(launch_line(LaunchFramework::Nemo, {model, c, rt, 64, 8}));
  EXPECT_NE(nemo.find("model.config.cp_comm_type=a2a+p2p"), std::string::npos) << nemo;
  EXPECT_NE(nemo.find("no hierarchical context-parallel groups"), std::string::npos) << nemo;
  c.exec.cp_comm = CpComm::AllToAll;
  EXPECT_EQ(launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, c, rt, 64, 8})).find("hierarchical"),
            std::string::npos);
}

// Llama 3 405B as Dubey et al. 2024 ran it: 16 stages, interleaved, one block fewer on the first
// and the last (which hold the embedding and the loss). Megatron-LM cuts such stages into chunks
// only with the embedding and the loss counted as blocks (--account-for-*-in-pipeline-split);
// torchtitan shortens the first and last virtual stages by one. Every name is in its parser.
TEST(Launch, SlottedInterleavedStages) {
  const Transformer model = load_model_named("llama3_405b");
  Layout c = layout_1d(8, 16, 128, 1);
  c.exec.interleave = 4;
  c.exec.first_stage_blocks = c.exec.last_stage_blocks = 7;
  const Runtime rt;
  const LaunchLine megatron = launch_line(LaunchFramework::Megatron, {model, c, rt, 2048, 8});
  const std::string text = launch_arguments_text(megatron);
  EXPECT_NE(text.find("--num-virtual-stages-per-pipeline-rank 4 --account-for-embedding-in-pipeline-split "
                      "--account-for-loss-in-pipeline-split "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("--decoder-first-pipeline-num-layers"), std::string::npos) << text;
  const LaunchLine nemo = launch_line(LaunchFramework::Nemo, {model, c, rt, 2048, 8});
  EXPECT_NE(launch_arguments_text(nemo).find("trainer.strategy.account_for_embedding_in_pipeline_split=True "
                                             "trainer.strategy.account_for_loss_in_pipeline_split=True"),
            std::string::npos)
      << launch_arguments_text(nemo);
  // torchtitan: 8 slots a stage in 4 chunks of 2, the first and last virtual stages 1 fewer
  const LaunchLine titan = launch_line(LaunchFramework::Torchtitan, {model, c, rt, 2048, 8});
  EXPECT_NE(launch_arguments_text(titan).find("--parallelism.pipeline_parallel_layers_per_stage 2 "
                                              "--parallelism.pipeline_parallel_first_stage_less_layers 1 "
                                              "--parallelism.pipeline_parallel_last_stage_less_layers 1"),
            std::string::npos)
      << launch_arguments_text(titan);
  const std::pair<const LaunchLine*, const char*> lines[] = {
      {&megatron, "megatron"}, {&nemo, "nemo"}, {&titan, "torchtitan"}};
  for (const auto& [line, list] : lines) {
    const std::set<std::string> names = parser_names(list);
    for (const LaunchArgument& a : line->arguments) EXPECT_TRUE(names.count(a.name)) << a.name << " in " << list;
  }
  // plain uneven chunks (every stage a multiple of V) keep the stage counts
  c.exec.first_stage_blocks = 4;
  c.exec.last_stage_blocks = 10;  // 112 over 14 middle stages of 8
  c.exec.interleave = 2;
  const std::string plain = launch_arguments_text(launch_line(LaunchFramework::Megatron, {model, c, rt, 2048, 8}));
  EXPECT_NE(plain.find("--decoder-first-pipeline-num-layers 4 --decoder-last-pipeline-num-layers 10 "),
            std::string::npos)
      << plain;
}

TEST(Launch, TwoDimensionalStrategiesAreRefused) {
  const Transformer model = load_model_named("gpt3_1T");
  const Runtime rt;
  for (Strategy s : {Strategy::TwoD, Strategy::TwoDSeqp}) {
    Layout c;
    c.strategy = s;
    c.tensor.tp1 = c.tensor.tp2 = 2;
    for (LaunchFramework f : {LaunchFramework::Megatron, LaunchFramework::Nemo, LaunchFramework::Torchtitan}) {
      EXPECT_THROW(check_launch_strategy(f, s), ConfigError);
      EXPECT_THROW(launch_line(f, {model, c, rt, 64, 8}), ConfigError);
    }
  }
  EXPECT_NO_THROW(check_launch_strategy(LaunchFramework::Megatron, Strategy::OneD));
}

TEST(Launch, FrameworkNames) {
  EXPECT_EQ(parse_launch_framework("megatron"), LaunchFramework::Megatron);
  EXPECT_EQ(parse_launch_framework("nemo"), LaunchFramework::Nemo);
  EXPECT_EQ(parse_launch_framework("torchtitan"), LaunchFramework::Torchtitan);
  EXPECT_THROW(parse_launch_framework("deepspeed"), InputError);
  EXPECT_THROW(parse_launch_framework(""), InputError);
}

// A value a shell would split is quoted; each note is a '#' line before the arguments.
TEST(Launch, TextQuotesAndNotes) {
  LaunchLine line;
  line.framework = LaunchFramework::Megatron;
  line.notes = {"one", "two"};
  line.arguments = {{"--a", "1"}, {"--b", ""}, {"--c", "x y"}, {"--d", "it's"}};
  EXPECT_EQ(launch_text(line), "# one\n# two\n--a 1 --b --c 'x y' --d 'it'\\''s'\n");
  line.framework = LaunchFramework::Nemo;
  EXPECT_EQ(launch_arguments_text(line), "--a=1 --b --c='x y' --d='it'\\''s'");
}

}  // namespace
}  // namespace perfsweep
