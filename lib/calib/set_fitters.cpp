#include "calib/set_fitters.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>

#include "calib/run_inputs.hpp"
#include "calib/set_validation.hpp"
#include "config/kernels_file.hpp"
#include "config/runtime_file.hpp"
#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "model/plan.hpp"

namespace perfsweep::calib {
namespace fs = std::filesystem;
namespace {
using I = std::int64_t;
constexpr double D(I v) { return static_cast<double>(v); }

double median(std::vector<double> v) {
  if (v.empty()) return kMissing;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c, d);
  return buf;
}

// The kernel calibration the scales multiply: --kernels, else the fit rows' system's own (one file).
kernels::Calibration base_calibration(const std::vector<FitRow>& rows, const FitterOptions& o) {
  if (!o.kernels.empty()) return kernels::load_calibration(o.kernels);
  const FitRow* first = nullptr;
  for (const FitRow& r : rows) {
    if (!r.fit) continue;
    if (r.request.cluster.kernel_calibration == nullptr) {
      throw InputError("row '" + r.set_row().id + "' of " + r.set->name + ": its system " + r.request.cluster.name +
                       " has no kernel calibration (`kernels:`) to scale; give --kernels");
    }
    if (first == nullptr) first = &r;
    if (r.request.cluster.kernels_file != first->request.cluster.kernels_file) {
      throw InputError("the fit rows' systems carry different kernel calibrations (" + first->request.cluster.kernels_file +
                       ", " + r.request.cluster.kernels_file + "): give the one to scale with --kernels");
    }
  }
  if (first == nullptr) throw InputError("no row of the chosen sets is in a fit part");
  return *first->request.cluster.kernel_calibration;
}

// A row's request on `cluster` (the row's own, or one with fitted parts) at the job's scale, under
// `runtime`, evaluated: its step in the row's quantity (NaN where the model refuses it).
struct Evaluated {
  double value = kMissing;
  StepParts parts;
};
Evaluated evaluate_on(const FitRow& r, const System& cluster, const Runtime& runtime) {
  EstimateRequest q = r.request;
  q.cluster = cluster;
  q.system = at_scale(cluster, q.layout.n_gpus());
  q.runtime = runtime;
  Evaluated out;
  try {
    const Evaluation ev = evaluate_request(q);
    out.value = quantity_of(r.quantity, q, ev.totals.t);
    out.parts = step_parts(q, ev);
  } catch (const ConfigError&) {
  }
  return out;
}

// ---- kernel_scales -------------------------------------------------------------------------------

FitResult fit_kernel_scales(const std::vector<FitRow>& rows, const FitterOptions& o) {
  const kernels::Calibration base = base_calibration(rows, o);
  std::vector<const FitRow*> fit_rows;
  for (const FitRow& r : rows) {
    if (r.fit && std::isfinite(r.measured)) fit_rows.push_back(&r);
  }
  const auto mean_abs = [&](const KernelScales& k) {
    const auto scaled = std::make_shared<const kernels::Calibration>(scale_calibration(base, k));
    double sum = 0;
    std::size_t n = 0;
    for (const FitRow* r : fit_rows) {
      System cluster = r->request.cluster;
      cluster.kernel_calibration = scaled;
      const double v = evaluate_on(*r, cluster, r->request.runtime).value;
      if (!std::isfinite(v)) continue;
      sum += std::abs(v / r->measured - 1);
      ++n;
    }
    if (n == 0) throw InputError("none of the fit rows can be predicted");
    return std::pair{sum / D(static_cast<I>(n)), n};
  };
  const auto [before, n] = mean_abs(KernelScales{});
  // The grid: compute 0.80, 0.81, ..., 1.40; stream launch 0, 0.05, ..., 1; ties to the first found.
  KernelScales best_scales;
  double best = std::numeric_limits<double>::infinity();
  for (int c = 80; c <= 140; ++c) {
    for (int l = 0; l <= 20; ++l) {
      const KernelScales k{c / 100.0, l / 20.0};
      const double err = mean_abs(k).first;
      if (err < best) {
        best = err;
        best_scales = k;
      }
    }
  }
  FitResult out;
  const std::string scales = format("compute x %.2f, stream launch_s x %.2f", best_scales.compute, best_scales.stream_launch);
  out.report.push_back("kernel_scales: " + scales + " (mean |error| of " + std::to_string(n) + " fit rows " +
                       format("%.4f -> %.4f)", before, best));
  const auto scaled = std::make_shared<const kernels::Calibration>(scale_calibration(base, best_scales));
  out.apply = [scaled](EstimateRequest& q, const FitRow&) {
    q.cluster.kernel_calibration = scaled;
    q.system = at_scale(q.cluster, q.layout.n_gpus());
  };
  out.write = [scaled, scales, n](const fs::path& file, const std::vector<FitRow>&, const std::string& command) {
    kernels::Calibration cal = *scaled;
    cal.source = cal.source + "; scaled (" + command + ", " + std::to_string(n) + " fit rows): " + scales;
    kernels::save_calibration(cal, file);
    return std::vector<std::string>{file.string()};
  };
  return out;
}

// ---- host_floor ----------------------------------------------------------------------------------

// The fitter's inputs of a row: its job's nodes (NVLink domains), the all-reduce bus bandwidth the
// job measured over all its GPUs (NaN where none), whether it ran before nanotron's pipeline fix.
struct ClusterInputs {
  I nodes = 1;
  double allreduce_GBps = kMissing;
  bool before_fix = false;
};
ClusterInputs cluster_inputs(const FitRow& r) {
  ClusterInputs c;
  c.nodes = r.request.layout.n_gpus() / std::max<I>(1, r.request.cluster.nvlink_size);
  const std::string bw = r.input("allreduce_bus_GBps");
  if (!bw.empty()) {
    const std::optional<double> v = parse_finite(bw);
    if (!v || !(*v > 0)) {
      throw InputError(r.set->name + " row '" + r.set_row().id + "': allreduce_bus_GBps must be a positive number, got '" +
                       bw + "'");
    }
    c.allreduce_GBps = *v;
  }
  const std::string fix = r.input("after_pipeline_fix");
  if (fix == "False" || fix == "false" || fix == "no" || fix == "0") c.before_fix = true;
  return c;
}

// The network of a cluster whose collectives slow down with the job's size, as its own bandwidth
// measurements show: per job node count, the median over the fit rows of that node count of the
// bus bandwidth of an all-reduce over all the job's GPUs (a system's network_scaling: at N nodes
// the per-GPU network bandwidth at which the model's all-reduce over N full NVLink domains reaches it).
NetworkScaling fit_network(const std::vector<FitRow>& rows, const std::vector<ClusterInputs>& inputs,
                           std::vector<std::size_t>& counts) {
  std::map<I, std::vector<double>> by_nodes;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].fit && inputs[i].nodes > 1 && std::isfinite(inputs[i].allreduce_GBps)) {
      by_nodes[inputs[i].nodes].push_back(inputs[i].allreduce_GBps);
    }
  }
  NetworkScaling net;
  for (auto& [nodes, values] : by_nodes) {
    std::sort(values.begin(), values.end());
    const std::size_t k = values.size();
    net.nodes.push_back(nodes);
    net.allreduce_bus_GBps.push_back(k % 2 ? values[k / 2] : 0.5 * (values[k / 2 - 1] + values[k / 2]));
    counts.push_back(k);
  }
  net.source = "the median all-reduce bus bandwidth the fit rows' jobs measured at each node count (validate fit host_floor)";
  return net;
}

Runtime with_floor(const Runtime& rt, const FrameworkOverhead& o, bool before_fix) {
  Runtime out = rt;
  out.host_block_s = o.layer_s;
  out.host_block_per_tp_s = o.pipelined_layer_per_tp_s;
  out.host_block_per_tp_domain_s = o.tp_domain_layer_s;
  out.host_slot_pipelined_multinode_s = before_fix ? o.before_fix_slot_s : 0;
  return out;
}

System fitted_cluster(const System& cluster, const std::shared_ptr<const kernels::Calibration>& kernels,
                      const NetworkScaling& network) {
  System s = cluster;
  s.kernel_calibration = kernels;
  if (!network.nodes.empty()) s.network_scaling = std::make_shared<const NetworkScaling>(network);
  return s;
}

bool empty(const FrameworkOverhead& o) {
  return o.layer_s == 0 && o.pipelined_layer_per_tp_s == 0 && o.tp_domain_layer_s == 0 && o.before_fix_slot_s == 0;
}

FitResult fit_host_floor(const std::vector<FitRow>& rows, const FitterOptions& options) {
  const kernels::Calibration base = base_calibration(rows, options);
  std::vector<ClusterInputs> inputs;
  for (const FitRow& r : rows) inputs.push_back(cluster_inputs(r));
  std::vector<std::size_t> network_rows;
  const NetworkScaling network = fit_network(rows, inputs, network_rows);
  const auto kernels_at = [&](double compute) {
    return std::make_shared<const kernels::Calibration>(scale_calibration(base, {compute, 1}));
  };
  const auto predict = [&](std::size_t i, double compute, const FrameworkOverhead& o) {
    const FitRow& r = rows[i];
    return evaluate_on(r, fitted_cluster(r.request.cluster, kernels_at(compute), network),
                       with_floor(r.request.runtime, o, inputs[i].before_fix));
  };
  // The compute scale minimising the median |error| of the fit rows on one node (no network in
  // their step; all the fit rows where fewer than 10 one-node rows trained), each with the host
  // floor `o`, on the grid 0.50, 0.51, ..., 1.50, ties to the first found.
  constexpr std::size_t kMinOneNodeFitRows = 10;
  struct ComputeFit {
    double compute = 1;
    std::size_t rows = 0;
    bool one_node = true;
    double before = 0, after = 0;
  };
  const auto fit_compute = [&](const FrameworkOverhead& o) {
    ComputeFit fit;
    std::vector<std::size_t> chosen, all;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].fit || !std::isfinite(rows[i].measured)) continue;
      all.push_back(i);
      if (rows[i].request.layout.n_gpus() <= rows[i].request.cluster.nvlink_size) chosen.push_back(i);
    }
    if (chosen.size() < kMinOneNodeFitRows) {
      chosen = std::move(all);
      fit.one_node = false;
    }
    const auto median_abs = [&](double compute) {
      std::vector<double> errs;
      for (const std::size_t i : chosen) {
        const double v = predict(i, compute, o).value;
        if (std::isfinite(v)) errs.push_back(std::abs(v / rows[i].measured - 1));
      }
      return std::pair{median(errs), errs.size()};
    };
    std::tie(fit.before, fit.rows) = median_abs(1);
    if (fit.rows == 0) return fit;
    fit.after = fit.before;
    for (int c = 50; c <= 150; ++c) {
      const double err = median_abs(c / 100.0).first;
      if (err < fit.after) {
        fit.after = err;
        fit.compute = c / 100.0;
      }
    }
    return fit;
  };
  // The host floor minimising the median |error| of the fit rows that trained, each row's step
  // re-formed from its parts with the floor (step_with_overhead), by coordinate descent from zero
  // over fixed grids: layer_s and tp_domain_layer_s 0 to 10 ms by 0.25 ms, pipelined_layer_per_tp_s
  // 0 to 5 ms by 0.125 ms, before_fix_slot_s 0 to 2 s by 25 ms; each coordinate in that order, a
  // strict improvement only, until a round changes none.
  struct OverheadFit {
    FrameworkOverhead overhead;
    std::size_t rows = 0;
    double before = 0, after = 0;
  };
  const auto fit_overhead = [&](const std::vector<Evaluated>& predictions) {
    std::vector<std::size_t> fit_rows;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i].fit && std::isfinite(rows[i].measured) && std::isfinite(predictions[i].value)) fit_rows.push_back(i);
    }
    OverheadFit fit;
    fit.rows = fit_rows.size();
    if (fit_rows.empty()) return fit;
    std::vector<double> errs(fit_rows.size());
    const auto median_abs = [&](const FrameworkOverhead& o) {
      for (std::size_t k = 0; k < fit_rows.size(); ++k) {
        const FitRow& r = rows[fit_rows[k]];
        const Evaluated& p = predictions[fit_rows[k]];
        const double t = empty(o) || !std::isfinite(p.parts.slot_s)
                             ? p.parts.step_s
                             : step_with_overhead(r.request, p.parts, o, inputs[fit_rows[k]].before_fix);
        errs[k] = std::abs(quantity_of(r.quantity, r.request, t) / r.measured - 1);
      }
      return median(errs);
    };
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
    fit.before = median_abs(best);
    double best_err = fit.before;
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
    fit.after = best_err;
    return fit;
  };
  // The compute scale and the floor, each fitted with the other's value of the round before (zero
  // floor at first), twice; the steps without a floor: of the fit rows in the first round, of every
  // row in the last.
  ComputeFit compute;
  OverheadFit overhead;
  std::vector<Evaluated> predictions(rows.size());
  for (int round = 0; round < 2; ++round) {
    compute = fit_compute(overhead.overhead);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (round == 1 || rows[i].fit) predictions[i] = predict(i, compute.compute, FrameworkOverhead{});
    }
    overhead = fit_overhead(predictions);
  }
  FitResult out;
  std::string line = "host_floor: network (all-reduce bus bandwidth by job nodes, median over fit rows):";
  for (std::size_t i = 0; i < network.nodes.size(); ++i) {
    line += " " + std::to_string(network.nodes[i]) + format(":%.1fGB/s", network.allreduce_bus_GBps[i]) + "(" +
            std::to_string(network_rows[i]) + ")";
  }
  out.report.push_back(line);
  out.report.push_back(format("host_floor: compute: kernel efficiencies x %.2f", compute.compute) + " (median |error| of " +
                       std::to_string(compute.rows) + (compute.one_node ? " one-node" : "") + " fit rows " +
                       format("%.4f -> %.4f)", compute.before, compute.after));
  const FrameworkOverhead o = overhead.overhead;
  out.report.push_back(
      format("host_floor: per block and micro-batch %.2f ms + tp x %.3f ms with pp > 1 + %.2f ms per further "
             "tensor-parallel node; %.0f ms per micro-batch slot before the pipeline fix",
             o.layer_s * 1e3, o.pipelined_layer_per_tp_s * 1e3, o.tp_domain_layer_s * 1e3, o.before_fix_slot_s * 1e3) +
      " (median |error| of " + std::to_string(overhead.rows) + " fit rows " +
      format("%.4f -> %.4f)", overhead.before, overhead.after));
  const auto kernels = kernels_at(compute.compute);
  const auto row_inputs = std::make_shared<const std::vector<ClusterInputs>>(inputs);
  out.apply = [kernels, network, o](EstimateRequest& q, const FitRow& r) {
    q.cluster = fitted_cluster(q.cluster, kernels, network);
    q.system = at_scale(q.cluster, q.layout.n_gpus());
    q.runtime = with_floor(q.runtime, o, cluster_inputs(r).before_fix);
  };
  out.write = [kernels, network, o](const fs::path& dir, const std::vector<FitRow>& all, const std::string& command) {
    std::vector<std::string> files;
    fs::create_directories(dir / "systems");
    fs::create_directories(dir / "runtimes");
    const std::string header = "# " + command + "\n# (validate fit host_floor: docs/validation.md, \"Validation sets\")\n";
    std::map<std::string, std::string> runtimes;  // name -> text
    std::map<std::string, std::string> systems;
    for (const FitRow& r : all) {
      const System s = fitted_cluster(r.request.cluster, kernels, network);
      const Runtime rt = with_floor(r.request.runtime, o, cluster_inputs(r).before_fix);
      const std::string text = runtime_to_yaml(rt);
      const auto [it, added] = runtimes.emplace(rt.name, text);
      if (!added && it->second != text) {
        throw InputError("rows of " + r.set->name + " name one runtime, " + rt.name +
                         ", but fit to different floors (runs before and after the pipeline fix): give each its own");
      }
      systems.emplace(s.name, "");
    }
    for (const auto& [name, unused] : systems) {
      (void)unused;
      for (const FitRow& r : all) {
        if (r.request.cluster.name != name) continue;
        System s = fitted_cluster(r.request.cluster, kernels, network);
        kernels::Calibration cal = *kernels;
        cal.source = command + " (the compute scale on " + cal.source + ")";
        s.kernel_calibration = std::make_shared<const kernels::Calibration>(cal);
        const std::string file = write_system_file(dir, s, header);
        files.push_back((dir / file).string());
        files.push_back((dir / "systems" / (fs::path(file).stem().string() + ".kernels.yaml")).string());
        break;
      }
    }
    for (const auto& [name, text] : runtimes) {
      const fs::path file = dir / "runtimes" / (name + ".yaml");
      write_text_atomically(file.string(), header + text);
      files.push_back(file.string());
    }
    return files;
  };
  return out;
}

// ---- carried_efficiency --------------------------------------------------------------------------

// A number as carry_calibration.py writes it ("%.9g") and a reader reads it back, so the carried
// calibration in memory is the one its file holds.
double as_written(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

// `base` (another GPU's calibration) carried to a GPU of `sm_count` SMs with its tensor-core
// efficiencies (each fitted data type's GEMM passes, the attention's) times `factor`, as
// scripts/carry_calibration.py --efficiency-scale writes it.
kernels::Calibration carried(const kernels::Calibration& base, std::int64_t sm_count, double factor) {
  kernels::Calibration c = base;
  c.sm_count = sm_count;
  for (std::size_t t = 0; t < c.gemm.size(); ++t) {
    if (!c.gemm_fitted[t]) continue;
    for (kernels::GemmModel& g : c.gemm[t]) g.efficiency = as_written(g.efficiency * factor);
  }
  for (kernels::AttentionModel& a : c.attention) a.efficiency = as_written(a.efficiency * factor);
  return c;
}

FitResult fit_carried_efficiency(const std::vector<FitRow>& rows, const FitterOptions& o) {
  if (o.kernels.empty()) {
    throw InputError("carried_efficiency needs --kernels: the calibration carried (systems/calibrations/h100_kernels.yaml)");
  }
  const kernels::Calibration base = kernels::load_calibration(o.kernels);
  // The fit rows by the system they run on (one factor per GPU's system), in the rows' order.
  std::vector<std::string> systems;
  std::map<std::string, std::vector<const FitRow*>> fit_rows;
  std::map<std::string, std::int64_t> sm_counts;
  for (const FitRow& r : rows) {
    if (!r.fit || !std::isfinite(r.measured)) continue;
    const System& cluster = r.request.cluster;
    if (cluster.kernel_calibration == nullptr) {
      throw InputError("row '" + r.set_row().id + "' of " + r.set->name + ": its system " + cluster.name +
                       " has no kernel calibration (`kernels:`) whose SM count the carry takes");
    }
    if (!fit_rows.contains(cluster.name)) systems.push_back(cluster.name);
    fit_rows[cluster.name].push_back(&r);
    sm_counts[cluster.name] = cluster.kernel_calibration->sm_count;
  }
  // Mean |log(predicted / measured)| of a system's fit rows on `cal` (least absolute deviations in
  // log space: a row the table misstates moves the factor less), and their median |error|.
  struct Score {
    double mean_abs_log = 0, median_abs = 0;
    std::size_t rows = 0;
  };
  const auto score = [&](const std::string& name, const std::shared_ptr<const kernels::Calibration>& cal) {
    std::vector<double> logs, errs;
    for (const FitRow* r : fit_rows[name]) {
      System cluster = r->request.cluster;
      cluster.kernel_calibration = cal;
      const double v = evaluate_on(*r, cluster, r->request.runtime).value;
      if (!std::isfinite(v)) continue;
      logs.push_back(std::abs(std::log(v / r->measured)));
      errs.push_back(std::abs(v / r->measured - 1));
    }
    Score s;
    s.rows = logs.size();
    for (const double l : logs) s.mean_abs_log += l / D(static_cast<I>(logs.size()));
    s.median_abs = median(errs);
    return s;
  };
  FitResult out;
  auto fitted = std::make_shared<std::map<std::string, std::shared_ptr<const kernels::Calibration>>>();
  auto factors = std::make_shared<std::map<std::string, double>>();
  for (const std::string& name : systems) {
    // The grid 0.700, 0.705, ..., 1.000 (each factor the double of its decimal, as
    // carry_calibration.py reads it); ties to the smaller factor.
    double best_factor = 1, best = std::numeric_limits<double>::infinity();
    std::shared_ptr<const kernels::Calibration> best_cal;
    for (int step = 0; step <= 60; ++step) {
      const double factor = (700 + 5 * step) / 1000.0;
      auto cal = std::make_shared<const kernels::Calibration>(carried(base, sm_counts[name], factor));
      const Score s = score(name, cal);
      if (s.rows > 0 && s.mean_abs_log < best) {
        best = s.mean_abs_log;
        best_factor = factor;
        best_cal = cal;
      }
    }
    if (!best_cal) throw InputError("none of the fit rows on " + name + " can be predicted");
    const Score before = score(name, std::make_shared<const kernels::Calibration>(carried(base, sm_counts[name], 1)));
    const Score after = score(name, best_cal);
    out.report.push_back("carried_efficiency: " + name + " tensor-core efficiencies x " + format("%g", best_factor) +
                         " (" + std::to_string(after.rows) + " fit rows; carried x 1 -> x " + format("%g", best_factor) +
                         format(": mean |log error| %.3f -> %.3f, median |error| %.2f%% -> %.2f%%)", before.mean_abs_log,
                                after.mean_abs_log, 100 * before.median_abs, 100 * after.median_abs));
    (*fitted)[name] = best_cal;
    (*factors)[name] = best_factor;
  }
  out.apply = [fitted](EstimateRequest& q, const FitRow&) {
    const auto it = fitted->find(q.cluster.name);
    if (it == fitted->end()) return;  // a GPU no factor was fitted for keeps its system
    q.cluster.kernel_calibration = it->second;
    q.system = at_scale(q.cluster, q.layout.n_gpus());
  };
  const std::string base_file = o.kernels;
  out.write = [fitted, factors, base_file](const fs::path& dir, const std::vector<FitRow>& all,
                                           const std::string& command) {
    std::vector<std::string> files;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw InputError(dir.string() + ": cannot create the folder: " + ec.message());
    for (const auto& [name, cal] : *fitted) {
      for (const FitRow& r : all) {
        if (r.request.cluster.name != name) continue;
        kernels::Calibration c = *cal;
        c.source = base_file + " carried to " + name + " (" + std::to_string(c.sm_count) +
                   " SMs), its tensor-core efficiencies x " + format("%g", factors->at(name)) + " (" + command + ")";
        const fs::path file = dir / fs::path(r.request.cluster.kernels_file).filename();
        kernels::save_calibration(c, file);
        files.push_back(file.string());
        break;
      }
    }
    return files;
  };
  return out;
}

}  // namespace

std::string FitRow::input(const std::string& name) const {
  const auto it = set->fitter_columns.find(name);
  if (it == set->fitter_columns.end()) return "";
  return set->cell(set_row(), it->second);
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

StepParts step_parts(const EstimateRequest& q, const Evaluation& ev) {
  StepParts p;
  const Totals& x = ev.totals;
  const Layout& c = q.layout;
  // the blocks of the stage that bounds the step, in the runtime's partition
  const StageBlocks blocks = stage_blocks(q.model, c.pp, c.exec, q.runtime.mechanisms.stage_partition);
  const I stage = ev.model.time_stage;
  p.stage_blocks = stage == 0 ? blocks.first : stage == c.pp - 1 ? blocks.last : blocks.middle;
  const I micro_batches = q.global_batch / (c.dp * c.mbs);
  p.slots = D(micro_batches) + D(c.pp - 1) / D(std::max<I>(1, c.exec.interleave));
  p.outside_s = x.t_dp_comm;
  p.slot_s = (x.t - x.t_dp_comm) / p.slots;
  p.step_s = x.t;
  return p;
}

double step_with_overhead(const EstimateRequest& q, const StepParts& p, const FrameworkOverhead& o, bool before_fix) {
  const Layout& c = q.layout;
  const I domain = std::max<I>(1, q.cluster.nvlink_size);
  const I tp = c.tensor.tp1 * c.tensor.tp2;
  const I tp_domains = (tp + domain - 1) / domain;
  const double per_block = o.layer_s + (c.pp > 1 ? D(tp) * o.pipelined_layer_per_tp_s : 0) +
                           D(tp_domains - 1) * o.tp_domain_layer_s;
  double slot = std::max(p.slot_s, D(p.stage_blocks) * per_block);
  if (before_fix && c.pp > 1 && c.n_gpus() > domain) slot += o.before_fix_slot_s;
  return slot * p.slots + p.outside_s;
}

const std::vector<Fitter>& fitters() {
  static const std::vector<Fitter> kFitters{
      {"kernel_scales",
       "a kernel calibration's GEMM and flash-attention efficiencies and its memory-bound kernels' launch times, each "
       "times one scale (compute 0.80 to 1.40, launch 0 to 1), minimising the fit rows' mean |error| (--kernels: the "
       "calibration scaled; -o: the scaled calibration's YAML)",
       &fit_kernel_scales},
      {"host_floor",
       "a cluster's network from its jobs' measured all-reduce bandwidth (fitter input allreduce_bus_GBps), the "
       "kernels' compute scale on one-node rows and the framework's host floor per block and micro-batch (and per "
       "micro-batch slot before nanotron's pipeline fix: after_pipeline_fix), minimising the fit rows' median |error| "
       "(--kernels: the calibration scaled; -o: a folder of the fitted systems/ and runtimes/)",
       &fit_host_floor},
      {"carried_efficiency",
       "one factor per GPU's system on a calibration carried to it by the spec sheet (--kernels: the calibration "
       "carried, as scripts/carry_calibration.py carries it with the system's SM count): the tensor-core "
       "efficiencies (GEMM passes, attention) times 0.700 to 1.000, minimising the fit rows' mean |log error| (-o: a "
       "folder of the carried calibrations, named as the systems' kernels files)",
       &fit_carried_efficiency},
  };
  return kFitters;
}

const Fitter& find_fitter(const std::string& name) {
  std::string names;
  for (const Fitter& f : fitters()) {
    if (name == f.name) return f;
    names += std::string(names.empty() ? "" : ", ") + f.name;
  }
  throw InputError("no fitter '" + name + "' (fitters: " + names + ")");
}

}  // namespace perfsweep::calib
