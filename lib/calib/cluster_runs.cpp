#include "calib/cluster_runs.hpp"

#include "config/runtime_file.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/limits.hpp"
#include "model/parameters.hpp"
#include "model/step.hpp"

namespace perfsweep::calib {
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

// A CSV file: a header line, then one record per line (RFC 4180 quoting, no line breaks inside
// quotes; a UTF-8 byte-order mark and CR line ends are accepted).
struct CsvTable {
  std::string file;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::size_t> lines;  // 1-based line of each row
};

CsvTable read_csv(const std::filesystem::path& path) {
  CsvTable t;
  t.file = path.string();
  require_input_file(t.file);  // a FIFO would block the read
  std::ifstream in(path);
  if (!in) throw InputError(t.file + ": cannot open the measurements file");
  std::string text;
  std::size_t line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (line == 1 && text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
    if (trim(text).empty()) continue;
    const std::string where = t.file + ":" + std::to_string(line);
    std::vector<std::string> cells = split_csv_line(text, where);
    if (t.header.empty()) {
      t.header = std::move(cells);
      continue;
    }
    if (cells.size() != t.header.size()) {
      throw InputError(where + ": " + std::to_string(cells.size()) + " fields, the header has " +
                       std::to_string(t.header.size()));
    }
    t.rows.push_back(std::move(cells));
    t.lines.push_back(line);
  }
  if (t.header.empty()) throw InputError(t.file + ": empty file, no header line");
  if (t.rows.empty()) throw InputError(t.file + ": no runs after the header");
  return t;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Columns by header name (case-insensitive), and typed access to one row's fields with errors
// that name the file, the line and the column.
class Columns {
 public:
  explicit Columns(const CsvTable& t) : t_(t) {}

  std::size_t need(const char* name) const {
    if (auto i = find(name)) return *i;
    throw InputError(t_.file + ": no column '" + name + "' in the header");
  }
  std::optional<std::size_t> find(const char* name) const {
    const std::string want = lower(name);
    for (std::size_t i = 0; i < t_.header.size(); ++i) {
      if (lower(t_.header[i]) == want) return i;
    }
    return std::nullopt;
  }

  struct Row {
    const CsvTable& t;
    std::size_t r;
    std::size_t line() const { return t.lines[r]; }
    const std::string& text(std::size_t col) const { return t.rows[r][col]; }
    bool empty(std::size_t col) const { return text(col).empty(); }
    [[noreturn]] void fail(std::size_t col, const std::string& what) const {
      throw InputError(t.file + ":" + std::to_string(line()) + ": column '" + t.header[col] + "': " + what);
    }
    double number(std::size_t col) const {
      const std::string& s = text(col);
      if (s.empty()) fail(col, "missing value");
      const std::optional<double> v = parse_finite(s);
      if (!v) fail(col, "expected a number, got '" + s + "'");
      return *v;
    }
    // A measured quantity (seconds, TFLOP/s, parameters in billions) the validation divides by.
    double positive(std::size_t col) const {
      const double v = number(col);
      if (!(v >= kMinMeasured)) {
        fail(col, "expected a positive number (at least 1e-12), got '" + text(col) + "'");
      }
      return v;
    }
    // A positive whole number, also written as "16.0", at most `max` (GPUs, degrees, nodes and
    // model sizes; a model's keys are checked again against kModelKeyLimits).
    I count(std::size_t col, I max = kMaxGpuCount) const {
      const double v = number(col);
      if (!(v >= 1) || v > static_cast<double>(max) || v != std::floor(v)) {
        fail(col, "expected an integer in [1, " + std::to_string(max) + "], got '" + text(col) + "'");
      }
      return static_cast<I>(v);
    }
    // The product of counts, failing at `col` past `max`.
    I product(std::size_t col, std::initializer_list<I> factors, I max, const char* what) const {
      I p = 1;
      for (const I f : factors) {
        if (__builtin_mul_overflow(p, f, &p) || p > max) fail(col, std::string(what) + " exceeds " + std::to_string(max));
      }
      return p;
    }
    void check_model(const Transformer& m) const {
      if (const std::string error = model_limits_error(m); !error.empty()) {
        throw InputError(t.file + ":" + std::to_string(line()) + ": " + error);
      }
    }
    bool yes_no(std::size_t col) const {
      const std::string s = lower(text(col));
      if (s == "yes" || s == "true" || s == "1") return true;
      if (s == "no" || s == "false" || s == "0") return false;
      fail(col, "expected yes/no or true/false, got '" + text(col) + "'");
    }
  };
  Row row(std::size_t r) const { return Row{t_, r}; }

 private:
  const CsvTable& t_;
};

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Megatron's vocabulary padding: the next multiple of 128 x tp (--make-vocab-size-divisible-by).
I padded_vocab(I vocab, I tp) {
  const I unit = 128 * tp;
  return (vocab + unit - 1) / unit * unit;
}

// GPT as Megatron-LM builds it: GELU MLP of 4e, LayerNorm, biases, dropout 0.1, causal
// attention, learned positions, the LM head tied to the input embedding.
Transformer megatron_gpt(std::string name, I l, I e, I h, I depth, I vocab) {
  Transformer m;
  m.name = std::move(name);
  m.l = l;
  m.e = e;
  m.h = h;
  m.depth = depth;
  m.f = 4 * e;
  m.causal = true;
  m.vocab_size = vocab;
  m.tie_embeddings = true;
  m.learned_positions = true;
  return m;
}

// The Llama-3-shaped models of the nanotron benchmark: MLP width by hidden size (Llama 3.2 1B and
// 3B, Llama 3.1 8B, 70B and 405B configs); each reproduces the file's "Total Params" column.
std::optional<I> llama_ffn(I hidden) {
  switch (hidden) {
    case 2048: return 8192;
    case 3072: return 8192;
    case 4096: return 14336;
    case 8192: return 28672;
    case 16384: return 53248;
    default: return std::nullopt;
  }
}

// "..._gqa8" in a nanotron run name: 8 key/value heads.
std::optional<I> gqa_from_name(const std::string& name) {
  const std::size_t at = name.rfind("_gqa");
  if (at == std::string::npos) return std::nullopt;
  I v = 0;
  const char* first = name.data() + at + 4;
  const char* last = name.data() + name.size();
  const auto [p, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || p == first || v < 1) return std::nullopt;
  return v;
}

// Narayanan et al. (2021) Table 1 gives no micro-batch and no interleaving; Megatron-LM's script
// for the table (examples/sc21/run_table_1.sh) sets them per model, found here by hidden size:
// the micro-batch, the layers per virtual pipeline stage (0: no interleaving) and whether the run
// used Megatron's local DDP (DDP=local: gradients reduced after the backward) or PyTorch's.
struct Table1Settings {
  I hidden, micro_batch, layers_per_virtual_stage;
  bool local_ddp;
};
constexpr Table1Settings kNarayananTable1[] = {
    {2304, 16, 0, false}, {3072, 16, 0, false}, {4096, 16, 0, false}, {6144, 8, 0, false},
    {8192, 4, 0, true},   {10240, 2, 5, true},  {12288, 2, 5, true},  {16384, 1, 3, true},
    {20480, 1, 1, true},  {25600, 1, 0, true},
};
std::optional<Table1Settings> narayanan_table1_settings(I hidden) {
  for (const Table1Settings& t : kNarayananTable1) {
    if (t.hidden == hidden) return t;
  }
  return std::nullopt;
}

ClusterRun base_run(const Columns::Row& row, RunSet set) {
  ClusterRun run;
  run.line = row.line();
  run.group = run_set_name(set);
  run.status = "Success";
  run.layout.strategy = Strategy::OneD;
  return run;
}

}  // namespace

const char* run_set_name(RunSet set) {
  switch (set) {
    case RunSet::Megatron: return "megatron";
    case RunSet::Vtrain: return "vtrain";
    case RunSet::Nanotron: return "nanotron";
  }
  return "?";
}

const char* quantity_name(Quantity q) {
  switch (q) {
    case Quantity::IterationSeconds: return "iteration_s";
    case Quantity::TflopsPerGpu: return "tflops_per_gpu";
    case Quantity::TokensPerSecondPerGpu: return "tokens_per_s_per_gpu";
  }
  return "?";
}

const char* default_system_file(RunSet set) {
  switch (set) {
    case RunSet::Megatron: return "selene_a100";
    case RunSet::Vtrain: return "vtrain_a100";
    case RunSet::Nanotron: return "hf_h100";
  }
  return "";
}

void place_megatron_order(Layout& c, I node) {
  I room = node;
  const auto take = [&room](I group) {
    const I n = std::gcd(group, room);
    room /= n;
    return n;
  };
  c.tensor.nv1 = take(c.tensor.tp1);
  c.tensor.nv2 = 1;
  c.nv_dp = take(c.dp);
  c.nv_pp = take(c.pp);
}

std::vector<ClusterRun> read_megatron_runs(const std::filesystem::path& file) {
  const CsvTable t = read_csv(file);
  const Columns cols(t);
  const std::size_t source = cols.need("source"), params = cols.need("params_b"), heads = cols.need("heads"),
                    hidden = cols.need("hidden"), layers = cols.need("layers"), seq = cols.need("seq_len"),
                    vocab = cols.need("vocab"), tp = cols.need("tp"), pp = cols.need("pp"), gpus = cols.need("gpus"),
                    gb = cols.need("global_batch"), mb = cols.need("micro_batch"), il = cols.need("interleave"),
                    rc = cols.need("recompute"), sp = cols.need("sequence_parallel"),
                    tflops = cols.need("measured_tflops_per_gpu"), iter = cols.need("measured_iteration_s");
  std::vector<ClusterRun> runs;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const Columns::Row row = cols.row(r);
    ClusterRun run = base_run(row, RunSet::Megatron);
    if (row.empty(source)) row.fail(source, "missing value");
    run.group = row.text(source);
    const double billions = row.positive(params);
    const std::string rc_text = lower(row.text(rc));
    Layout& c = run.layout;
    c.tensor.tp1 = row.count(tp);
    c.pp = row.count(pp);
    const I n = row.count(gpus);
    row.product(pp, {c.tensor.tp1, c.pp}, kMaxGpuCount, "tp x pp");
    if (n % (c.tensor.tp1 * c.pp) != 0) row.fail(gpus, "not a multiple of tp x pp = " + std::to_string(c.tensor.tp1 * c.pp));
    c.dp = n / (c.tensor.tp1 * c.pp);
    c.mbs = row.empty(mb) ? 1 : row.count(mb);
    c.exec.interleave = row.count(il);
    // Where the table gives no micro-batch (Narayanan's Table 1): the micro-batch and interleaving
    // of Megatron-LM's script for the table, else a micro-batch of 1 and the file's interleave.
    if (row.empty(mb)) {
      if (const auto t1 = narayanan_table1_settings(row.count(hidden)); t1 && run.group == "narayanan2021_table1") {
        c.mbs = t1->micro_batch;
        c.exec.dp_after_backward = t1->local_ddp;
        const I per_stage = row.count(layers) / c.pp;
        if (t1->layers_per_virtual_stage > 0 && per_stage % t1->layers_per_virtual_stage == 0) {
          c.exec.interleave = per_stage / t1->layers_per_virtual_stage;
        }
      }
    }
    try {
      c.exec.recompute = parse_recompute(rc_text, "recompute");
    } catch (const InputError&) {
      row.fail(rc, "expected none, selective or full, got '" + row.text(rc) + "'");
    }
    c.exec.sequence_parallel = row.yes_no(sp);
    c.exec.zero = 0;  // no distributed optimizer in these runs
    c.exec.params = ParamLayout::Megatron;
    c.attention.flash = false;  // Megatron's fused softmax, before flash attention
    c.exec.p2p_scatter_gather = true;
    c.exec.sp_backward_gather = true;  // sequence parallelism re-gathers a projection's input
    c.exec.fused_elementwise = true;   // bias-GeLU and bias-dropout-add kernels
    run.global_batch = row.count(gb, kMaxGlobalBatch);
    run.model = megatron_gpt(run.group + "-" + format_number(billions) + "B", row.count(seq), row.count(hidden),
                             row.count(heads), row.count(layers), row.count(vocab));
    row.check_model(run.model);
    const bool has_tflops = !row.empty(tflops), has_iter = !row.empty(iter);
    if (has_tflops == has_iter) {
      row.fail(has_tflops ? iter : tflops, "exactly one of measured_tflops_per_gpu and measured_iteration_s is needed");
    }
    run.quantity = has_tflops ? Quantity::TflopsPerGpu : Quantity::IterationSeconds;
    run.measured = has_tflops ? row.positive(tflops) : row.positive(iter);
    const std::string short_source = run.group.substr(0, run.group.find_first_of("0123456789"));
    run.id = short_source + "-" + format_number(billions) + "B" + (has_iter ? "-" + rc_text : "");
    place_megatron_order(c, 8);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<ClusterRun> read_vtrain_runs(const std::filesystem::path& file) {
  const CsvTable t = read_csv(file);
  const Columns cols(t);
  const std::size_t params = cols.need("Parameters (billion)"), gpus = cols.need("# GPUs"),
                    gb = cols.need("global batch"), mb = cols.need("micro batch"), hidden = cols.need("hidden size"),
                    heads = cols.need("attention heads"), layers = cols.need("# layers"),
                    seq = cols.need("sequence length"), tp = cols.need("tensor parallelism"),
                    dp = cols.need("data parallelism"), pp = cols.need("pipeline parallelism"),
                    iter = cols.need("iteration time (ms)");
  std::vector<ClusterRun> runs;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const Columns::Row row = cols.row(r);
    ClusterRun run = base_run(row, RunSet::Vtrain);
    Layout& c = run.layout;
    c.tensor.tp1 = row.count(tp);
    c.dp = row.count(dp);
    c.pp = row.count(pp);
    if (row.count(gpus) != row.product(gpus, {c.tensor.tp1, c.dp, c.pp}, kMaxGpuCount, "tp x dp x pp")) row.fail(gpus, "is not tp x dp x pp = " + std::to_string(c.n_gpus()));
    c.mbs = row.count(mb);
    // vTrain's Megatron-DeepSpeed configurations (config/*.json): activation checkpointing on,
    // 1F1B, no sequence parallelism, no ZeRO; unfused attention; GPT-2's vocabulary.
    c.exec.recompute = Recompute::Full;
    c.exec.sequence_parallel = false;
    c.exec.zero = 0;
    c.exec.params = ParamLayout::Megatron;
    c.exec.p2p_scatter_gather = true;
    c.exec.fused_elementwise = true;  // Megatron-DeepSpeed's bias-GeLU and bias-dropout-add kernels
    c.attention.flash = false;
    run.global_batch = row.count(gb);
    const double billions = row.positive(params);
    run.model = megatron_gpt("vtrain-" + format_number(billions) + "B", row.count(seq), row.count(hidden),
                             row.count(heads), row.count(layers), padded_vocab(50257, c.tensor.tp1));
    run.quantity = Quantity::IterationSeconds;
    run.measured = row.positive(iter) * 1e-3;
    char id[64];
    std::snprintf(id, sizeof id, "vtrain-%03zu", r + 1);
    run.id = id;
    place_megatron_order(c, 8);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<ClusterRun> read_nanotron_runs(const std::filesystem::path& file) {
  const CsvTable t = read_csv(file);
  const Columns cols(t);
  const std::size_t job = cols.need("job_id"), name = cols.need("name"), nodes = cols.need("nodes"),
                    seq = cols.need("seq_len"), mbs = cols.need("mbs"), acc = cols.need("batch_accum"),
                    tokens = cols.need("tok/s/gpu"), mem = cols.need("Mem Alloc (GB)"), dp = cols.need("dp"),
                    pp = cols.need("pp"), tp = cols.need("tp"), tp_mode = cols.need("tp_mode"),
                    hidden = cols.need("hidden_size"), layers = cols.need("num_layers"),
                    heads = cols.need("num_heads"), kv = cols.need("num_kv_heads"), vocab = cols.need("vocab_size"),
                    tie = cols.need("tie_word_embeddings"), zero = cols.need("zero_stage"),
                    fp32_acc = cols.need("accumulate_grad_in_fp32"), status = cols.need("status");
  const std::optional<std::size_t> allreduce_bw = cols.find("AllReduce (GB/s)");
  const std::optional<std::size_t> pp_fix = cols.find("after_pp_fix");
  std::vector<ClusterRun> runs;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const Columns::Row row = cols.row(r);
    ClusterRun run = base_run(row, RunSet::Nanotron);
    if (row.empty(job)) row.fail(job, "missing value");
    run.id = row.text(job);
    if (row.empty(status)) row.fail(status, "missing value");
    run.status = row.text(status);
    Layout& c = run.layout;
    c.tensor.tp1 = row.count(tp);
    c.dp = row.count(dp);
    c.pp = row.count(pp);
    run.nodes = row.count(nodes, kMaxNodes);
    row.product(nodes, {c.tensor.tp1, c.dp, c.pp}, kMaxGpuCount, "tp x dp x pp");
    const I gpus = run.nodes * 8;
    if (gpus != c.n_gpus()) row.fail(nodes, "8 GPUs a node make " + std::to_string(gpus) + ", not dp x tp x pp = " +
                                              std::to_string(c.n_gpus()));
    c.mbs = row.count(mbs);
    run.global_batch = row.product(acc, {c.dp, c.mbs, row.count(acc)}, kMaxGlobalBatch, "dp x mbs x batch_accum");
    const std::string mode = row.text(tp_mode);
    if (mode == "REDUCE_SCATTER") {
      c.exec.sequence_parallel = true;
    } else if (mode == "ALL_REDUCE") {
      c.exec.sequence_parallel = false;
    } else {
      row.fail(tp_mode, "expected REDUCE_SCATTER or ALL_REDUCE, got '" + mode + "'");
    }
    const double z = row.number(zero);
    if (z != 0 && z != 1 && z != 2 && z != 3) row.fail(zero, "expected a ZeRO stage 0 to 3, got '" + row.text(zero) + "'");
    c.exec.zero = static_cast<I>(z);
    c.exec.recompute = Recompute::None;
    // bf16 weights, an fp32 gradient accumulator, fp32 master weights and Adam moments
    // (accumulate_grad_in_fp32, true where the file says); the reference layout otherwise.
    c.exec.params = row.empty(fp32_acc) || row.yes_no(fp32_acc) ? ParamLayout::Megatron : ParamLayout::Reference;
    run.host_floor_fitted = true;
    c.attention.flash = true;

    Transformer& m = run.model;
    m.e = row.count(hidden);
    const std::optional<I> ffn = llama_ffn(m.e);
    if (!ffn) row.fail(hidden, "no known Llama MLP width for hidden size " + row.text(hidden));
    m.f = *ffn;
    m.h = row.count(heads);
    m.depth = row.count(layers);
    m.l = row.count(seq);
    m.vocab_size = row.count(vocab);
    // Empty where the run did not start: the run name's "_gqaN", else multi-head; Llama 3.2 1B and
    // 3B (hidden <= 3072) tie their embeddings, the larger models do not.
    m.kv_heads = !row.empty(kv) ? row.count(kv) : gqa_from_name(row.text(name)).value_or(m.h);
    m.tie_embeddings = !row.empty(tie) ? row.yes_no(tie) : m.e <= 3072;
    m.mlp = MlpKind::SwiGlu;
    m.norm = NormKind::RmsNorm;
    m.bias = false;
    m.dropout = 0;
    m.causal = true;
    m.name = "llama-h" + std::to_string(m.e) + "-d" + std::to_string(m.depth);
    row.check_model(m);

    run.quantity = Quantity::TokensPerSecondPerGpu;
    if (run.status == "Success") {
      run.measured = row.positive(tokens);
      run.measured_mem_gb = row.positive(mem);
    }
    if (allreduce_bw && !row.empty(*allreduce_bw)) run.cluster_allreduce_GBps = row.positive(*allreduce_bw);
    if (pp_fix && !row.empty(*pp_fix)) run.pipeline_before_fix = !row.yes_no(*pp_fix);
    place_megatron_order(c, 8);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<ClusterRun> read_cluster_runs(RunSet set, const std::filesystem::path& file) {
  std::vector<ClusterRun> runs;
  switch (set) {
    case RunSet::Megatron: runs = read_megatron_runs(file); break;
    case RunSet::Vtrain: runs = read_vtrain_runs(file); break;
    case RunSet::Nanotron: runs = read_nanotron_runs(file); break;
  }
  mark_fit_runs(set, runs);
  const Runtime rt = set_runtime(set);
  for (ClusterRun& r : runs) {
    r.runtime = rt;
    // nanotron without accumulate_grad_in_fp32 keeps no fp32 accumulator.
    if (set == RunSet::Nanotron && r.layout.exec.params != ParamLayout::Megatron) r.runtime.states.accumulator = 0;
  }
  return runs;
}

Runtime set_runtime(RunSet set) {
  Runtime rt = load_runtime_named(set == RunSet::Nanotron ? "nanotron" : "megatron");
  if (set == RunSet::Nanotron) {
    // the host floor is what validate_runs fits (FrameworkOverhead), added to the GPU's step
    rt.host_block_s = rt.host_block_per_tp_s = rt.host_block_per_tp_domain_s = 0;
  } else {
    rt.flash_attention = false;  // Megatron's fused scale-mask-softmax: the runs predate flash attention
  }
  return rt;
}

void mark_fit_runs(RunSet set, std::vector<ClusterRun>& runs) {
  if (set == RunSet::Megatron) return;
  for (std::size_t i = 0; i < runs.size(); ++i) runs[i].fit = i % 3 == 0;
}

kernels::Calibration scale_calibration(const kernels::Calibration& base, const KernelScales& k) {
  kernels::Calibration c = base;
  for (kernels::GemmModel& g : c.gemm[static_cast<std::size_t>(kernels::GemmType::Bf16)]) {
    g.efficiency = std::min(1.0, g.efficiency * k.compute);
  }
  for (std::size_t pass : {kernels::kFwd, kernels::kBwd}) {
    c.attention[pass].efficiency = std::min(1.0, c.attention[pass].efficiency * k.compute);
    for (auto& stream : c.stream) stream[pass].launch_s *= k.stream_launch;
  }
  return c;
}

KernelScaleFit fit_kernel_scales(const System& system, const std::vector<ClusterRun>& runs) {
  if (system.kernel_calibration == nullptr) {
    throw InputError("fitting kernel scales needs a system with a kernel calibration (`kernels:`), " + system.name +
                     " has none");
  }
  std::vector<const ClusterRun*> fit_runs;
  for (const ClusterRun& r : runs) {
    if (r.fit) fit_runs.push_back(&r);
  }
  if (fit_runs.empty()) throw InputError("no runs of this set are marked for fitting");
  const kernels::Calibration base = *system.kernel_calibration;
  const auto mean_abs = [&](const KernelScales& k) {
    System s = system;
    s.kernel_calibration = std::make_shared<const kernels::Calibration>(scale_calibration(base, k));
    double sum = 0;
    std::size_t n = 0;
    for (const ClusterRun* r : fit_runs) {
      const RunPrediction p = predict_run(s, *r);
      if (!std::isfinite(p.predicted)) continue;
      sum += std::abs(p.predicted / r->measured - 1);
      ++n;
    }
    if (n == 0) throw InputError("none of the fit runs can be predicted");
    return std::pair{sum / D(static_cast<I>(n)), n};
  };
  KernelScaleFit fit;
  std::tie(fit.mean_abs_before, fit.runs) = mean_abs(KernelScales{});
  double best = std::numeric_limits<double>::infinity();
  for (int c = 80; c <= 140; ++c) {
    for (int l = 0; l <= 20; ++l) {
      const KernelScales k{c / 100.0, l / 20.0};
      const double err = mean_abs(k).first;
      if (err < best) {
        best = err;
        fit.scales = k;
      }
    }
  }
  fit.mean_abs_after = best;
  fit.calibration = scale_calibration(base, fit.scales);
  return fit;
}

double megatron_model_flops(const Transformer& m, I global_batch) {
  const double B = D(global_batch), s = D(m.l), l = D(m.depth), h = D(m.e), V = D(m.vocab_size);
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

ClusterNetwork fit_cluster_network(const std::vector<ClusterRun>& runs) {
  std::map<I, std::vector<double>> by_nodes;
  for (const ClusterRun& r : runs) {
    if (r.fit && r.nodes > 1 && std::isfinite(r.cluster_allreduce_GBps)) by_nodes[r.nodes].push_back(r.cluster_allreduce_GBps);
  }
  ClusterNetwork net;
  for (auto& [nodes, values] : by_nodes) {
    std::sort(values.begin(), values.end());
    const std::size_t k = values.size();
    net.scaling.nodes.push_back(nodes);
    net.scaling.allreduce_bus_GBps.push_back(k % 2 ? values[k / 2] : 0.5 * (values[k / 2 - 1] + values[k / 2]));
    net.runs.push_back(k);
  }
  return net;
}

double quantity_of_iteration(const ClusterRun& run, double t) {
  const double gpus = D(run.layout.n_gpus());
  switch (run.quantity) {
    case Quantity::IterationSeconds: return t;
    case Quantity::TflopsPerGpu: return megatron_model_flops(run.model, run.global_batch) / (t * gpus) * 1e-12;
    case Quantity::TokensPerSecondPerGpu: return D(run.global_batch * run.model.l) / t / gpus;
  }
  return kNoValue;
}

double iteration_with_overhead(const System& system, const ClusterRun& run, const RunPrediction& p,
                               const FrameworkOverhead& o) {
  if (o.empty() || !std::isfinite(p.slot_s)) return p.iteration_s;
  const Layout& c = run.layout;
  const I domain = std::max<I>(1, system.nvlink_size);
  const I tp_domains = (c.tensor.tp1 * c.tensor.tp2 + domain - 1) / domain;
  const double per_layer = o.layer_s + (c.pp > 1 ? D(c.tensor.tp1 * c.tensor.tp2) * o.pipelined_layer_per_tp_s : 0) +
                           D(tp_domains - 1) * o.tp_domain_layer_s;
  double slot = std::max(p.slot_s, D(p.stage_layers) * per_layer);
  if (run.pipeline_before_fix && c.pp > 1 && run.nodes > 1) slot += o.before_fix_slot_s;
  return slot * p.slots + p.outside_s;
}

System with_network(const System& cluster, const ClusterNetwork* network) {
  // A multi-node job's network at the bus bandwidth its cluster reaches at that many nodes.
  System system = cluster;
  if (network != nullptr && !network->empty()) {
    system.network_scaling = std::make_shared<const NetworkScaling>(network->scaling);
  }
  return system;
}

Runtime run_runtime(const ClusterRun& run, const FrameworkOverhead& o) {
  Runtime rt = run.runtime;
  if (o.empty()) return rt;
  rt.host_block_s = o.layer_s;
  rt.host_block_per_tp_s = o.pipelined_layer_per_tp_s;
  rt.host_block_per_tp_domain_s = o.tp_domain_layer_s;
  if (run.pipeline_before_fix) {
    rt.host_slot_pipelined_multinode_s = o.before_fix_slot_s;
    rt.name += "-before-fix";
  }
  return rt;
}

RunPrediction predict_run(const System& cluster, const ClusterRun& run, const ClusterNetwork* network,
                          const FrameworkOverhead& overhead) {
  RunPrediction p;
  const System system = at_scale(with_network(cluster, network), run.layout.n_gpus());
  const Runtime rt = run_runtime(run, overhead);
  Evaluation ev;
  try {
    ev = evaluate(system, run.model, rt, run.layout, run.global_batch);
  } catch (const ConfigError& e) {
    p.error = e.what();
    return p;
  }
  const Totals& x = ev.totals;
  const Layout& c = run.layout;
  // the blocks of the stage that bounds the step, in the runtime's partition
  Execution applied = c.exec;
  AttentionMode attention = c.attention;
  apply_runtime(rt, applied, attention);
  const StageBlocks blocks = stage_blocks(run.model, c.pp, applied);
  const I stage = ev.model.time_stage;
  p.stage_layers = stage == 0 ? blocks.first : stage == c.pp - 1 ? blocks.last : blocks.middle;
  const I micro_batches = run.global_batch / (c.dp * c.mbs);
  p.slots = D(micro_batches) + D(c.pp - 1) / D(std::max<I>(1, c.exec.interleave));
  p.outside_s = x.t_dp_comm;
  p.slot_s = (x.t - x.t_dp_comm) / p.slots;
  p.iteration_s = x.t;
  p.predicted = quantity_of_iteration(run, x.t);
  // the fullest stage's weights, gradients and optimizer states (as the runs report them, GiB)
  p.predicted_mem_gb = (x.wts_mem + x.wts_grad_mem + x.wts_optimizer_states_mem) / kGbPerGib;
  p.peak_mem_gb = x.mem;
  p.fits = !(x.mem > x.mem_limit);
  return p;
}

bool RunResult::has_error() const { return std::isfinite(run.measured) && std::isfinite(prediction.predicted); }

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return kNoValue;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

ComputeScaleFit fit_one_node_compute(const System& system, const std::vector<ClusterRun>& runs,
                                     const FrameworkOverhead& overhead, const ClusterNetwork* network) {
  ComputeScaleFit fit;
  if (system.kernel_calibration == nullptr) return fit;
  std::vector<const ClusterRun*> fitted_runs, all;
  for (const ClusterRun& r : runs) {
    if (!r.fit || !std::isfinite(r.measured)) continue;
    all.push_back(&r);
    if (r.layout.n_gpus() <= system.nvlink_size) fitted_runs.push_back(&r);
  }
  if (fitted_runs.size() < kMinOneNodeFitRuns) {
    fitted_runs = std::move(all);
    fit.one_node = false;
  }
  const kernels::Calibration base = *system.kernel_calibration;
  const auto median_abs = [&](double compute) {
    System s = system;
    s.kernel_calibration = std::make_shared<const kernels::Calibration>(scale_calibration(base, {compute, 1}));
    std::vector<double> errs;
    for (const ClusterRun* r : fitted_runs) {
      const RunPrediction p = predict_run(s, *r, network, overhead);
      if (std::isfinite(p.predicted)) errs.push_back(std::abs(p.predicted / r->measured - 1));
    }
    return std::pair{median(errs), errs.size()};
  };
  std::tie(fit.median_abs_before, fit.runs) = median_abs(1);
  if (fit.runs == 0) return fit;
  fit.median_abs_after = fit.median_abs_before;
  for (int c = 50; c <= 150; ++c) {
    const double err = median_abs(c / 100.0).first;
    if (err < fit.median_abs_after) {
      fit.median_abs_after = err;
      fit.compute = c / 100.0;
    }
  }
  return fit;
}

OverheadFit fit_framework_overhead(const System& system, const std::vector<ClusterRun>& runs,
                                   const std::vector<RunPrediction>& predictions) {
  if (predictions.size() != runs.size()) throw std::logic_error("fit_framework_overhead: one prediction per run");
  std::vector<std::size_t> fit_runs;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].fit && std::isfinite(runs[i].measured) && std::isfinite(predictions[i].predicted)) fit_runs.push_back(i);
  }
  OverheadFit fit;
  fit.runs = fit_runs.size();
  if (fit_runs.empty()) return fit;
  std::vector<double> errs(fit_runs.size());
  const auto median_abs = [&](const FrameworkOverhead& o) {
    for (std::size_t k = 0; k < fit_runs.size(); ++k) {
      const ClusterRun& r = runs[fit_runs[k]];
      const double t = iteration_with_overhead(system, r, predictions[fit_runs[k]], o);
      errs[k] = std::abs(quantity_of_iteration(r, t) / r.measured - 1);
    }
    return median(errs);
  };
  // Each coordinate: its member and its grid (first value, step, number of values).
  struct Axis {
    double FrameworkOverhead::*member;
    double step;
    int values;
  };
  constexpr std::array<Axis, 4> kAxes{{{&FrameworkOverhead::layer_s, 0.25e-3, 41},
                                       {&FrameworkOverhead::pipelined_layer_per_tp_s, 0.125e-3, 41},
                                       {&FrameworkOverhead::tp_domain_layer_s, 0.25e-3, 41},
                                       {&FrameworkOverhead::before_fix_slot_s, 25e-3, 81}}};
  FrameworkOverhead best;
  fit.median_abs_before = median_abs(best);
  double best_err = fit.median_abs_before;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Axis& axis : kAxes) {
      for (int k = 0; k < axis.values; ++k) {
        FrameworkOverhead o = best;
        o.*axis.member = axis.step * k;
        const double err = median_abs(o);
        if (err < best_err) {
          best_err = err;
          best = o;
          changed = true;
        }
      }
    }
  }
  fit.overhead = best;
  fit.median_abs_after = best_err;
  return fit;
}

std::vector<RunResult> validate_runs(const System& system, const std::vector<ClusterRun>& runs, bool unfitted,
                                     ClusterFit* fitted) {
  const bool nanotron = !runs.empty() && runs.front().host_floor_fitted;
  ClusterFit fit;
  System costed = system;
  std::vector<RunPrediction> predictions(runs.size());
  if (nanotron && !unfitted) {
    fit.network = fit_cluster_network(runs);
    // The compute scale and the overhead, each fitted with the other's value of the round before.
    for (int round = 0; round < 2; ++round) {
      if (system.kernel_calibration != nullptr) {
        fit.compute = fit_one_node_compute(system, runs, fit.overhead.overhead, &fit.network);
        costed.kernel_calibration = std::make_shared<const kernels::Calibration>(
            scale_calibration(*system.kernel_calibration, {fit.compute.compute, 1}));
      }
      // The GPU's steps: of the fit runs in the first round, of every run in the last (the
      // final compute scale), which the fitted overhead then completes below.
      for (std::size_t i = 0; i < runs.size(); ++i) {
        if (round == 1 || runs[i].fit) predictions[i] = predict_run(costed, runs[i], &fit.network);
      }
      fit.overhead = fit_framework_overhead(costed, runs, predictions);
    }
    // the predictions: the composition with the fitted floor in each run's runtime
    for (std::size_t i = 0; i < runs.size(); ++i) {
      predictions[i] = predict_run(costed, runs[i], &fit.network, fit.overhead.overhead);
    }
    fit.system = with_network(costed, &fit.network);
  } else {
    for (std::size_t i = 0; i < runs.size(); ++i) predictions[i] = predict_run(costed, runs[i]);
    fit.system = costed;
  }
  std::vector<RunResult> out;
  out.reserve(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out.push_back({runs[i], std::move(predictions[i])});
    out.back().run.runtime = run_runtime(runs[i], fit.overhead.overhead);  // as predicted
  }
  if (fitted != nullptr) *fitted = std::move(fit);
  return out;
}

namespace {
std::string cell(double v, const char* fmt = "%.9g") {
  if (!std::isfinite(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

bool oom_judged(const std::string& status) { return status == "Success" || status == "OOM"; }
}  // namespace

std::string runs_csv(RunSet set, const std::vector<RunResult>& rows) {
  const bool nanotron = set == RunSet::Nanotron;
  std::string out = "id,quantity,measured,predicted,rel_err,fit";
  out += nanotron ? ",status_measured,fits_predicted,measured_mem_gb,predicted_mem_gb" : "";
  out += ",predicted_iteration_s,note\n";
  for (const RunResult& r : rows) {
    out += r.run.id + "," + quantity_name(r.run.quantity) + "," + cell(r.run.measured) + "," +
           cell(r.prediction.predicted) + "," + (r.has_error() ? cell(r.rel_err(), "%.6f") : "") + "," +
           (r.run.fit ? "1" : "0");
    if (nanotron) {
      const bool expressed = r.prediction.error.empty();
      out += "," + r.run.status + "," + (expressed ? (r.prediction.fits ? "1" : "0") : "") + "," +
             cell(r.run.measured_mem_gb, "%.6g") + "," + (expressed ? cell(r.prediction.predicted_mem_gb, "%.6g") : "");
    }
    out += "," + cell(r.prediction.iteration_s, "%.17g");
    // The model's reason where it cannot express the run, quoted for CSV.
    std::string note;
    for (const char ch : r.prediction.error) {
      if (ch == '"') note += '"';
      note += ch;
    }
    out += note.empty() ? "," : ",\"" + note + "\"";
    out += "\n";
  }
  return out;
}

std::vector<RunSummary> summarize_runs(const std::vector<RunResult>& rows, bool held_out_only) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RunResult*>> groups;
  for (const RunResult& r : rows) {
    if (held_out_only == r.run.fit) continue;
    if (!groups.contains(r.run.group)) order.push_back(r.run.group);
    groups[r.run.group].push_back(&r);
  }
  std::vector<RunSummary> out;
  for (const std::string& g : order) {
    RunSummary s;
    s.group = g;
    std::vector<double> errs, mem_errs;
    for (const RunResult* r : groups[g]) {
      if (r->has_error()) errs.push_back(std::abs(r->rel_err()));
      const bool expressed = r->prediction.error.empty();
      if (oom_judged(r->run.status) && expressed) {
        ++s.oom_judged;
        if (r->prediction.fits == (r->run.status == "Success")) ++s.oom_right;
      }
      if (expressed && std::isfinite(r->run.measured_mem_gb)) {
        mem_errs.push_back(std::abs(r->prediction.predicted_mem_gb / r->run.measured_mem_gb - 1));
      }
    }
    s.count = errs.size();
    if (!errs.empty()) {
      s.mean_abs = std::accumulate(errs.begin(), errs.end(), 0.0) / D(static_cast<I>(errs.size()));
      s.median_abs = median(errs);
      s.max_abs = *std::max_element(errs.begin(), errs.end());
    }
    s.mem_count = mem_errs.size();
    s.mem_median_abs = median(mem_errs);
    out.push_back(s);
  }
  return out;
}

std::string runs_summary(RunSet set, const std::vector<RunResult>& rows) {
  std::string out = std::string("validate ") + run_set_name(set) + "\n";
  out += "group,runs,count,mean_abs_rel_err,median_abs_rel_err,max_abs_rel_err";
  const bool nanotron = set == RunSet::Nanotron;
  out += nanotron ? ",oom_judged,oom_right,oom_accuracy,mem_count,mem_median_abs_rel_err\n" : "\n";
  std::size_t unexpressed = 0;
  for (const RunResult& r : rows) unexpressed += r.prediction.error.empty() ? 0u : 1u;
  for (const bool held_out : {true, false}) {
    for (const RunSummary& s : summarize_runs(rows, held_out)) {
      char buf[256];
      std::snprintf(buf, sizeof buf, ",%s,%zu,%.4f,%.4f,%.4f", held_out ? "held_out" : "fit", s.count, s.mean_abs,
                    s.median_abs, s.max_abs);
      out += s.group + buf;
      if (nanotron) {
        std::snprintf(buf, sizeof buf, ",%zu,%zu,%.4f,%zu,%.4f", s.oom_judged, s.oom_right,
                      s.oom_judged ? D(static_cast<I>(s.oom_right)) / D(static_cast<I>(s.oom_judged)) : 0.0,
                      s.mem_count, s.mem_count ? s.mem_median_abs : 0.0);
        out += buf;
      }
      out += "\n";
    }
  }
  if (unexpressed) {
    out += "# " + std::to_string(unexpressed) + " run(s) the model cannot express (no prediction)\n";
  }
  return out;
}

}  // namespace perfsweep::calib
