// Llama 3 405B's pre-training layouts (Llama Team, "The Llama 3 Herd of Models", arXiv 2407.21783,
// Table 4; test/data/cluster/llama3_405b_table4.csv) on the cluster they ran on
// (systems/H100-llama3-cluster.yaml) under Meta's framework as section 3.3.2 describes it
// (runtimes/llama3.yaml): every layout fits in an H100's memory, as it did for Meta, and the
// predicted model TFLOP/s per GPU is within 10% of Meta's published figure (kTolerance: which
// FLOP count).
//
// What Table 4 does not give is taken from the paper's text or assumed: ZeRO-2 (FSDP sharding
// optimizer states and gradients, weights not resharded after the forward); one Transformer layer
// fewer on the first and the last stage (7 + 14 x 8 + 7 blocks); V = 8 virtual stages a GPU (the
// 126 layers with the embedding's and the output's chunks in 16 x 8 chunks, "the first model chunk
// on the first stage has only the embedding"); no activation checkpointing ("we could pre-train
// Llama 3 on sequences of 8K tokens without activation checkpointing"; at 131,072 tokens each of
// the 16 context-parallel ranks holds 8,192 of them, assumed likewise); all-gather context
// parallelism; micro-batches of one sequence (assumed).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/layouts.hpp"
#include "config/inputs.hpp"
#include "config/runtime_file.hpp"
#include "model/step.hpp"

namespace perfsweep {
namespace {

const std::filesystem::path kRoot = PERFSWEEP_SOURCE_DIR;
const std::filesystem::path kData = PERFSWEEP_TEST_DATA_DIR "/cluster";

struct Table4Row {
  std::int64_t gpus = 0, tp = 0, cp = 0, pp = 0, dp = 0, seq_len = 0, batch_per_dp = 0;
  double tflops_per_gpu = 0, bf16_mfu = 0;
};

std::vector<Table4Row> read_table4() {
  std::ifstream in(kData / "llama3_405b_table4.csv");
  EXPECT_TRUE(in) << "llama3_405b_table4.csv";
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "source,gpus,tp,cp,pp,dp,seq_len,batch_per_dp,tokens_per_batch,tflops_per_gpu,bf16_mfu");
  std::vector<Table4Row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
    if (f.size() != 11) {
      ADD_FAILURE() << "malformed row: " << line;
      continue;
    }
    Table4Row r;
    r.gpus = std::stoll(f[1]);
    r.tp = std::stoll(f[2]);
    r.cp = std::stoll(f[3]);
    r.pp = std::stoll(f[4]);
    r.dp = std::stoll(f[5]);
    r.seq_len = std::stoll(f[6]);
    r.batch_per_dp = std::stoll(f[7]);
    r.tflops_per_gpu = std::stod(f[9]);
    r.bf16_mfu = std::stod(f[10]);
    rows.push_back(r);
  }
  return rows;
}

// The paper does not say how it counts model FLOPs. At 8,192 tokens the attention is 8% of PaLM's
// count (6 N + 12 L e T a token, the causal attention whole) and either count is within 10% of
// Meta's; at 131,072 tokens it is 57%, and PaLM's count puts the prediction 35% above Meta's
// while the count with the causal attention halved (6 N + 6 L e T) puts it 3% below. Checked: PaLM's
// count at 8K tokens, the causal count at every length, each within 10%.
constexpr double kTolerance = 0.10;
double causal_tflops_per_gpu(const Transformer& m, const Efficiency& e) {
  const double halved = 6 * static_cast<double>(m.depth) * static_cast<double>(m.h * m.head_dim()) *
                        static_cast<double>(m.l);
  return (e.model_flops_per_token - halved) * e.tokens_per_s_per_gpu * 1e-12;
}

TEST(Llama3Table4, LayoutsFitAndMatchMeta) {
  const System s = load_system(kRoot / "systems" / "H100-llama3-cluster.yaml");
  EXPECT_EQ(s.runtime, "llama3");
  const Runtime rt = load_runtime_named(s.runtime);
  const std::vector<Table4Row> rows = read_table4();
  ASSERT_EQ(rows.size(), 3u);
  for (const Table4Row& r : rows) {
    Transformer m = load_model(kRoot / "models" / "llama3_405b.yaml");
    m.l = r.seq_len;
    Layout c = test::one_d(r.tp, r.dp, r.pp);
    c.exec.rank_order = runtime_defaults(rt).rank_order;  // the runtime's, Meta's [TP, CP, PP, DP]
    c.tensor.nv1 = r.tp;  // tensor parallelism inside the server, the innermost of [TP, CP, PP, DP]
    c.tensor.cp = r.cp;
    c.exec.cp_comm = CpComm::AllGather;
    c.exec.zero = 2;
    c.exec.interleave = 8;
    c.exec.first_stage_blocks = 7;
    c.exec.last_stage_blocks = 7;
    ASSERT_EQ(c.n_gpus(), r.gpus);
    const std::int64_t global_batch = r.dp * r.batch_per_dp;
    const Evaluation ev = evaluate(s, m, rt, c, global_batch);
    const double predicted = ev.efficiency.model_tflops_per_gpu;
    std::printf("llama3_405b %lld GPUs tp%lld cp%lld pp%lld dp%lld seq %lld: %.1f model TFLOP/s per GPU (Meta %.0f), "
                "MFU %.1f%% (Meta %.0f%%), memory %.1f of %.1f GB\n",
                static_cast<long long>(r.gpus), static_cast<long long>(r.tp), static_cast<long long>(r.cp),
                static_cast<long long>(r.pp), static_cast<long long>(r.dp), static_cast<long long>(r.seq_len), predicted,
                r.tflops_per_gpu, 100 * ev.efficiency.mfu, 100 * r.bf16_mfu, ev.totals.mem, ev.totals.mem_limit);
    EXPECT_TRUE(ev.fits) << r.gpus << " GPUs, seq " << r.seq_len << ": " << ev.totals.mem << " GB of "
                         << ev.totals.mem_limit;
    const double causal = causal_tflops_per_gpu(m, ev.efficiency);
    std::printf("  counted with the causal attention halved: %.1f TFLOP/s per GPU\n", causal);
    if (r.seq_len <= 8192) {
      EXPECT_LE(std::fabs(predicted - r.tflops_per_gpu), kTolerance * r.tflops_per_gpu)
          << r.gpus << " GPUs, seq " << r.seq_len << ": predicted " << predicted << ", Meta " << r.tflops_per_gpu;
    }
    EXPECT_LE(std::fabs(causal - r.tflops_per_gpu), kTolerance * r.tflops_per_gpu)
        << r.gpus << " GPUs, seq " << r.seq_len << ": causal count " << causal << ", Meta " << r.tflops_per_gpu;
  }
}

// The same layouts under Megatron's runtime (its distributed optimizer, ZeRO-1: the fp32
// gradients whole on every rank) do not fit: what the llama3 runtime's ZeRO-2 changes.
TEST(Llama3Table4, MegatronsZeroOneDoesNotFit) {
  const System s = load_system(kRoot / "systems" / "H100-llama3-cluster.yaml");
  const Runtime rt = load_runtime_named("megatron");
  Transformer m = load_model(kRoot / "models" / "llama3_405b.yaml");
  Layout c = test::one_d(8, 128, 16);
  c.tensor.nv1 = 8;
  c.exec.interleave = 8;
  c.exec.first_stage_blocks = 7;
  c.exec.last_stage_blocks = 7;
  const Evaluation megatron = evaluate(s, m, rt, c, 2048);
  EXPECT_FALSE(megatron.fits);
  c.exec.zero = 2;
  const Evaluation llama3 = evaluate(s, m, load_runtime_named("llama3"), c, 2048);
  EXPECT_TRUE(llama3.fits);
  // the gradients' fp32 bytes, whole under ZeRO-1, are what separates the two
  EXPECT_GT(megatron.totals.mem - llama3.totals.mem, 12.0);
}

}  // namespace
}  // namespace perfsweep
