#include "calib/layer_validation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "model/block.hpp"
#include "model/roofline.hpp"

namespace perfsweep::calib {

namespace {
using kernels::kBwd;
using kernels::kFwd;

Transformer model_of(const LayerConfig& c) {
  Transformer m;
  m.name = c.id;
  m.l = c.l;
  m.e = c.e;
  m.h = c.h;
  m.f = c.f;
  m.depth = 1;
  return m;
}


struct Sample {
  KernelOp op;
  KernelShape shape;
  std::size_t pass;
  double tflop, gb, measured_s;
};

// The bf16 GEMM models a layer pass runs: fprop forward, dgrad and wgrad backward.
std::vector<std::size_t> gemm_passes_of(std::size_t pass) {
  if (pass == kFwd) return {static_cast<std::size_t>(kernels::GemmPass::Fprop)};
  return {static_cast<std::size_t>(kernels::GemmPass::Dgrad), static_cast<std::size_t>(kernels::GemmPass::Wgrad)};
}

// Seconds at efficiency 1 and no launch cost of a sample under `cal` (for the slope).
double unit_seconds(const System& s, const kernels::Calibration& cal, const Sample& x) {
  kernels::Calibration c = cal;
  for (const std::size_t g : gemm_passes_of(x.pass)) {
    c.gemm[0][g].efficiency = 1;
    c.gemm[0][g].launch_s = 0;
  }
  c.attention[x.pass].efficiency = 1;
  c.attention[x.pass].launch_s = 0;
  const KernelSeconds k = calibrated_seconds(s, c, x.op, x.shape, x.pass, 0, 0);
  if (x.op == KernelOp::Gemm || x.op == KernelOp::Attention) return k.compute;
  return x.gb / s.hbm_bandwidth;
}

}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// Minimizes sum_i w_i^2 (offset + a + b x_i - y_i)^2 with w_i = y_i^-kWeightExponent, subject to
// a >= 0 and b >= 1 (b = 1 / efficiency): the unconstrained normal equations, else the best of the
// boundary solutions. The exponent lies between relative (1) and absolute (0) errors: the long
// kernels, which make a block's time, weigh more than with relative errors, the short ones still
// count (docs/validation.md).
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, double offset) {
  std::vector<double> w(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) w[i] = std::pow(y[i], -kWeightExponent);
  const auto score = [&](double a, double b) {
    double s = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double r = w[i] * (offset + a + b * x[i] - y[i]);
      s += r * r;
    }
    return s;
  };
  // Features u = w and v = w x, target t = w (y - offset).
  double suu = 0, suv = 0, svv = 0, sut = 0, svt = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = w[i], v = w[i] * x[i], t = w[i] * (y[i] - offset);
    suu += u * u;
    suv += u * v;
    svv += v * v;
    sut += u * t;
    svt += v * t;
  }
  LineFit best;
  const auto consider = [&](double a, double b) {
    if (!(a >= 0) || !(b >= 1) || !std::isfinite(a) || !std::isfinite(b)) return;
    const double s = score(a, b);
    if (s < best.score) best = {a, b, s};
  };
  const double det = suu * svv - suv * suv;
  if (det > 0) consider((sut * svv - svt * suv) / det, (suu * svt - suv * sut) / det);
  if (svv > 0) consider(0, svt / svv);                                // a = 0
  if (suu > 0) consider(std::max((sut - suv) / suu, 0.0), 1);         // b = 1
  consider(0, 1);
  return best;
}

std::vector<LayerCost> measured_layer_costs(const System& system, const LayerConfig& config) {
  const Transformer m = model_of(config);
  const AttentionMode flash{};
  const TensorSplit split{config.tp, 1, config.tp, 1, 1};
  std::vector<LayerCost> out;
  for (const BlockLayer& y : describe_block(m, flash)) {
    LayerCost c = shard_layer(system, Strategy::OneD, y, config.b, m, split, flash);
    c.comm_fwd = CommSet{};
    c.comm_fwd.count = 0;
    c.comm_bwd = c.comm_fwd;
    out.push_back(c);
  }
  return out;
}

double alone_seconds(const System& system, const LayerCost& y, double stream_s, std::size_t p) {
  const kernels::Calibration* cal = system.kernel_calibration.get();
  if (cal == nullptr) return stream_s;
  double alone = stream_s + cal->isolated_call_s[p];
  if ((y.op == KernelOp::Norm || y.op == KernelOp::RmsNorm) && calibrated_op(*cal, y.op, y.shape)) {
    alone -= calibrated_seconds(system, *cal, y.op, y.shape, p, p == kFwd ? y.flops_fwd : y.flops_bwd,
                                p == kFwd ? y.mem_fwd : y.mem_bwd)
                 .glue;
  }
  return alone;
}

std::vector<ValidationRow> validate_layers(const System& system, const std::vector<LayerConfig>& configs) {
  std::vector<ValidationRow> rows;
  for (const LayerConfig& c : configs) {
    const std::vector<LayerCost> costs = measured_layer_costs(system, c);
    double block[2] = {0, 0};
    for (std::size_t i = 0; i < costs.size(); ++i) {
      const LayerCost& y = costs[i];
      const LayerResult r = time_layer(system, y);
      const double t[2] = {r.fwd.t, r.bwd.t};
      for (std::size_t p = 0; p < 2; ++p) {
        block[p] += t[p];
        rows.push_back({c.id, c.layer_names[i], kernels::kPassNames[p], c.layer_s[i][p],
                        alone_seconds(system, y, t[p], p), ""});
      }
    }
    // The block timed as one call: its layers' stream times and one call's overhead.
    const kernels::Calibration* cal = system.kernel_calibration.get();
    for (std::size_t p = 0; p < 2; ++p) {
      const double call = cal != nullptr ? cal->isolated_call_s[p] : 0.0;
      rows.push_back({c.id, "block", kernels::kPassNames[p], c.block_s[p], block[p] + call, ""});
    }
  }
  return rows;
}

std::string validation_csv(const std::vector<ValidationRow>& rows) {
  const bool timed = std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return !r.timing.empty(); });
  std::string out = std::string("id,layer,pass,measured_s,predicted_s,rel_err") + (timed ? ",timing" : "") + "\n";
  char buf[160];
  for (const ValidationRow& r : rows) {
    std::snprintf(buf, sizeof buf, ",%.9g,%.9g,%.6f", r.measured_s, r.predicted_s, r.rel_err());
    out += r.id + "," + r.layer + "," + r.pass + buf + (timed ? "," + r.timing : "") + "\n";
  }
  return out;
}

std::string validation_summary(const std::vector<ValidationRow>& rows) {
  std::map<std::string, std::vector<double>> groups;
  std::vector<std::string> order;
  const auto add = [&](const std::string& key, double v) {
    if (!groups.contains(key)) order.push_back(key);
    groups[key].push_back(v);
  };
  const bool timed = std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return !r.timing.empty(); });
  const bool stream = std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return r.timing == "stream"; });
  const bool both = stream && std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) {
    return r.timing == "isolated";
  });
  std::map<std::string, std::pair<double, double>> block_total;  // id -> (measured, predicted)
  std::vector<double> all, all_isolated;
  for (const ValidationRow& r : rows) {
    const double err = std::abs(r.rel_err());
    const bool isolated = r.timing == "isolated";
    add(r.layer + " " + r.pass + (both && isolated ? " isolated" : ""), err);
    if (r.layer == "block") {
      block_total[r.id].first += r.measured_s;
      block_total[r.id].second += r.predicted_s;
    } else {
      (both && isolated ? all_isolated : all).push_back(err);
    }
  }
  const std::string total = timed ? "all kernel passes" : "all layer passes";
  order.push_back(total);
  groups[total] = all;
  if (!all_isolated.empty()) {
    order.push_back(total + " isolated");
    groups[total + " isolated"] = all_isolated;
  }
  for (const auto& [id, mp] : block_total) add("block fwd+bwd", std::abs(mp.second / mp.first - 1));
  std::string out = "group,count,median_abs_rel_err,p90_abs_rel_err,max_abs_rel_err\n";
  char buf[160];
  for (const std::string& key : order) {
    const std::vector<double>& v = groups[key];
    if (v.empty()) continue;
    std::snprintf(buf, sizeof buf, ",%zu,%.4f,%.4f,%.4f\n", v.size(), quantile(v, 0.5), quantile(v, 0.9),
                  *std::max_element(v.begin(), v.end()));
    out += key + buf;
  }
  return out;
}

namespace {
// Every layer pass of the configurations, in order (config, layer, pass).
std::vector<Sample> layer_samples(const System& system, const std::vector<LayerConfig>& configs) {
  std::vector<Sample> samples;
  for (const LayerConfig& c : configs) {
    const std::vector<LayerCost> costs = measured_layer_costs(system, c);
    for (std::size_t i = 0; i < costs.size(); ++i) {
      const LayerCost& y = costs[i];
      samples.push_back({y.op, y.shape, kFwd, y.flops_fwd, y.mem_fwd, c.layer_s[i][kFwd]});
      samples.push_back({y.op, y.shape, kBwd, y.flops_bwd, y.mem_bwd, c.layer_s[i][kBwd]});
    }
  }
  return samples;
}

// GB at full bandwidth per byte of residual glue of a configuration's norms (s per byte).
double glue_seconds_per_byte(const System& system, const LayerConfig& c) {
  double x = 0;
  for (const LayerCost& y : measured_layer_costs(system, c)) {
    if (y.op == KernelOp::Norm) {
      x += static_cast<double>(y.shape.rows) * static_cast<double>(y.shape.depth) * 1e-9 / system.hbm_bandwidth;
    }
  }
  return x;
}
}  // namespace

kernels::Calibration fit_kernels(const System& system, const std::vector<LayerConfig>& configs, std::int64_t sm_count) {
  if (configs.empty()) throw InputError("fit-kernels: no measurements");
  const std::vector<Sample> samples = layer_samples(system, configs);
  kernels::Calibration cal;
  cal.sm_count = sm_count;
  // isolated_call_s and residual_glue_bytes first, from the measurements alone: a block, timed as
  // one call, runs its layers without each one's isolated-call overhead but its own, plus the
  // residual-stream kernels, so per configuration c, block_c = sum_c - (layers - 1) x isolated +
  // glue x X_c (X_c: the norms' residual elements in GB at full bandwidth, s per byte of glue);
  // least squares of the relative error, both >= 0. The kernels' own parameters are then fitted
  // to the layer times less the overhead.
  for (std::size_t p = 0; p < 2; ++p) {
    std::vector<double> fp, fq, ft;  // features -layers / block, X / block; target (block - sum) / block
    for (const LayerConfig& c : configs) {
      double sum = 0;
      for (const auto& t : c.layer_s) sum += t[p];
      const double x = glue_seconds_per_byte(system, c);
      const double block = c.block_s[p];
      fp.push_back(-static_cast<double>(c.layer_s.size() - 1) / block);  // 14 calls alone, the block one
      fq.push_back(x / block);
      ft.push_back((block - sum) / block);
    }
    const auto score = [&](double iso, double glue) {
      double total = 0;
      for (std::size_t i = 0; i < fp.size(); ++i) {
        const double r = fp[i] * iso + fq[i] * glue - ft[i];
        total += r * r;
      }
      return total;
    };
    double spp = 0, spq = 0, sqq = 0, spt = 0, sqt = 0;
    for (std::size_t i = 0; i < fp.size(); ++i) {
      spp += fp[i] * fp[i];
      spq += fp[i] * fq[i];
      sqq += fq[i] * fq[i];
      spt += fp[i] * ft[i];
      sqt += fq[i] * ft[i];
    }
    double best_iso = 0, best_glue = 0, best = score(0, 0);
    const auto consider = [&](double iso, double glue) {
      if (!(iso >= 0) || !(glue >= 0) || !std::isfinite(iso) || !std::isfinite(glue)) return;
      const double sc = score(iso, glue);
      if (sc < best) {
        best = sc;
        best_iso = iso;
        best_glue = glue;
      }
    };
    const double det = spp * sqq - spq * spq;
    if (det > 0) consider((spt * sqq - sqt * spq) / det, (spp * sqt - spq * spt) / det);
    if (spp > 0) consider(spt / spp, 0);
    if (sqq > 0) consider(0, sqt / sqq);
    cal.isolated_call_s[p] = best_iso;
    cal.residual_glue_bytes[p] = best_glue;
  }
  // The line of one group: x = seconds at efficiency 1 without launch, y = measured.
  const auto group_line = [&](const kernels::Calibration& trial, std::size_t pass, auto&& in_group) {
    std::vector<double> x, y;
    for (const Sample& s : samples) {
      if (s.pass != pass || !in_group(s)) continue;
      x.push_back(unit_seconds(system, trial, s));
      y.push_back(s.measured_s);
    }
    return x.empty() ? LineFit{0, 1, 0} : fit_line(x, y, trial.isolated_call_s[pass]);
  };
  for (std::size_t p = 0; p < 2; ++p) {
    // GEMM: tiles are the shapes cuBLAS uses on Hopper; k_half in steps of 16.
    LineFit best;
    for (const double tm : {64.0, 128.0, 256.0}) {
      for (const double tn : {64.0, 128.0, 192.0, 256.0}) {
        for (int k = 0; k <= 32; ++k) {
          kernels::Calibration trial = cal;
          const std::vector<std::size_t> gemms = gemm_passes_of(p);
          for (const std::size_t g : gemms) trial.gemm[0][g] = {1, tm, tn, 16.0 * k, 0};
          const LineFit f = group_line(trial, p, [](const Sample& s) { return s.op == KernelOp::Gemm; });
          if (f.score < best.score) {
            best = f;
            // the backward's launch shared by its two GEMMs
            for (const std::size_t g : gemms) {
              cal.gemm[0][g] = {1 / f.b, tm, tn, 16.0 * k, f.a / static_cast<double>(gemms.size())};
            }
          }
        }
      }
    }
    best = LineFit{};
    for (int d = 0; d <= 64; ++d) {
      kernels::Calibration trial = cal;
      trial.attention[p] = {1, 4.0 * d, 0};
      const LineFit f = group_line(trial, p, [](const Sample& s) { return s.op == KernelOp::Attention; });
      if (f.score < best.score) {
        best = f;
        cal.attention[p] = {1 / f.b, 4.0 * d, f.a};
      }
    }
    for (std::size_t k = 0; k < kernels::kLayerStreamKinds; ++k) {
      const LineFit f = group_line(cal, p, [k](const Sample& s) {
        return s.op != KernelOp::Gemm && s.op != KernelOp::Attention &&
               static_cast<std::size_t>(kernels::stream_kind(s.op)) == k;
      });
      cal.stream[k][p] = {1 / f.b, f.a};
    }
  }
  return cal;
}

void refit_block_glue(const System& system, kernels::Calibration& cal, const std::vector<LayerConfig>& configs) {
  if (configs.empty()) return;
  const std::vector<Sample> samples = layer_samples(system, configs);
  // In-stream times without the residual glue.
  kernels::Calibration bare = cal;
  bare.residual_glue_bytes = {0, 0};
  const auto stream_s = [&](const Sample& x) {
    const double tflop = x.tflop;
    return calibrated_seconds(system, bare, x.op, x.shape, x.pass, tflop, x.gb).total();
  };
  for (std::size_t p = 0; p < 2; ++p) {
    // glue: (block - sum of in-stream layers) / block = glue x X / block
    double sxx = 0, sxy = 0;
    std::size_t i = 0;
    for (const LayerConfig& c : configs) {
      double sum = 0;
      for (std::size_t l = 0; l < c.layer_s.size(); ++l, i += 2) sum += stream_s(samples[i + p]);
      const double block = c.block_s[p] - cal.isolated_call_s[p];  // its call's overhead aside
      const double xg = glue_seconds_per_byte(system, c) / block;
      sxx += xg * xg;
      sxy += xg * (block - sum) / block;
    }
    cal.residual_glue_bytes[p] = sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
  }
}

}  // namespace perfsweep::calib
