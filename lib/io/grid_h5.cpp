#include "io/grid_h5.hpp"

#include <hdf5_hl.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/sha256.hpp"
#include "core/text.hpp"
#include "io/h5.hpp"
#include "io/hw_summary.hpp"

namespace perfsweep {

std::string xdmf_path_for(const std::string& h5_path) {
  return h5_path.substr(0, h5_path.size() - std::filesystem::path(h5_path).extension().string().size()) + ".xmf";
}

// The point arrays of the sidecar: one per metric and GPU count, each a 2-D /xdmf slice.
std::vector<std::string> xdmf_metrics(bool with_days) {
  std::vector<std::string> m{"best_throughput", "speedup"};
  if (with_days) m.push_back("days");
  return m;
}

std::string xdmf_for(const std::string& h5_name, const HardwareSweep& sweep, const std::vector<std::int64_t>& n_gpus,
                     bool with_days, const std::string& h5_sha256) {
  const std::size_t n0 = sweep.axis_size(0), n1 = sweep.axis_size(1), ng = n_gpus.size();
  const std::string x = sweep.axes.size() > 1 ? sweep.axes[1].parameters.front().name : "";
  const std::string y = sweep.axes[0].parameters.front().name;
  std::ostringstream o;
  o << "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n <Domain>\n";
  // names from files (the sweep's file name, the output's) are escaped: "x&<y>" is XML's "x&amp;&lt;y&gt;"
  const std::string h5 = xml_escaped(h5_name);
  o << "  <Grid Name=\"" << xml_escaped(sweep.name) << "\" GridType=\"Uniform\">\n";
  // Axis titles with units, for viewers (scripts/paraview_hw_sweep.py): x is axis 1, y axis 0.
  auto title = [&](const std::string& name) { return name.empty() ? std::string() : name + " (" + find_system_key(name)->unit + ")"; };
  o << "   <Information Name=\"x_axis\" Value=\"" << title(x) << "\"/>\n";
  o << "   <Information Name=\"y_axis\" Value=\"" << title(y) << "\"/>\n";
  // The .h5 this sidecar belongs to: the SHA-256 of its bytes (`sha256sum`); readers compare.
  o << "   <Information Name=\"h5_sha256\" Value=\"" << h5_sha256 << "\"/>\n";
  o << "   <Topology TopologyType=\"2DRectMesh\" Dimensions=\"" << n0 << " " << n1 << "\"/>\n";
  o << "   <Geometry GeometryType=\"VXVY\">\n";
  if (x.empty()) {
    o << "    <DataItem Dimensions=\"1\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">0</DataItem>\n";
  } else {
    o << "    <DataItem Dimensions=\"" << n1 << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5
      << ":/grid/" << x << "</DataItem>\n";
  }
  o << "    <DataItem Dimensions=\"" << n0 << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5
    << ":/grid/" << y << "</DataItem>\n";
  o << "   </Geometry>\n";
  for (const std::string& metric : xdmf_metrics(with_days)) {
  for (std::size_t k = 0; k < ng; ++k) {
    const std::string name = metric + "_" + std::to_string(n_gpus[k]) + "_gpus";
    o << "   <Attribute Name=\"" << name << "\" AttributeType=\"Scalar\" Center=\"Node\">\n";
    o << "    <DataItem Dimensions=\"" << n0 << " " << n1 << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
      << h5 << ":/xdmf/" << name << "</DataItem>\n";
    o << "   </Attribute>\n";
  }
  }
  o << "  </Grid>\n </Domain>\n</Xdmf>\n";
  return o.str();
}

void write_hw_sweep_file(const std::string& path, const RunMetadata& meta, const HardwareSweep& sweep,
                         const std::string& sweep_yaml, const std::string& base_system_yaml,
                         const std::vector<SweepTarget>& targets,
                         const std::vector<TargetResult>& results) {
  const std::size_t n0 = sweep.axis_size(0), n1 = sweep.axis_size(1), ng = meta.n_gpus.size();
  const std::size_t n_points = sweep.n_points();
  // Both files are built and written to temporaries first; publish_pair then renames them into
  // place as one unit. The sidecar records the SHA-256 of the .h5 bytes it belongs to, so a
  // reader can tell a pair that was published together from one that was not (docs/robustness.md).
  const std::filesystem::path h5path(path);
  const std::string xmf = xdmf_path_for(path);
  const bool with_days = meta.model.dataset_samples > 0;
  // sweep holds the output's journal lock
  const std::string tmp = begin_partial(path, Temporary::kLockHeld);
  const std::string xmf_tmp = begin_partial(xmf, Temporary::kLockHeld);
  track_partial(tmp, 0);
  track_partial(xmf_tmp, 1);
  auto discard = [&] {
    ::unlink(tmp.c_str());
    ::unlink(xmf_tmp.c_str());
    untrack_partial(0);
    untrack_partial(1);
  };
  try {
    std::string image;
    {
      h5::Handle file = h5::create_file(tmp);
      write_run_metadata(file.id(), meta);
      {
        h5::attr(file.id(), "sweep", std::string_view(sweep.name));
        h5::attr(file.id(), "sweep_description", std::string_view(sweep.description));
        h5::attr(file.id(), "base_system", std::string_view(sweep.base.name));
        h5::attr(file.id(), "nvs", sweep.base.nvlink_size);
        std::string axes_names;
        for (const SweepAxis& a : sweep.axes) axes_names += (axes_names.empty() ? "" : ",") + a.parameters.front().name;
        h5::attr(file.id(), "sweep_axes", std::string_view(axes_names));
        {
          h5::Handle prov = h5::open_group(file.id(), "provenance");
          h5::text(prov.id(), "sweep.yaml", sweep_yaml);
          h5::text(prov.id(), "base_system.yaml", base_system_yaml);
        }

        h5::Handle grid = h5::create_group(file.id(), "grid");
        std::vector<double> best(n0 * n1 * ng, std::numeric_limits<double>::quiet_NaN());
        for (std::size_t p = 0; p < n_points; ++p) {
          for (std::size_t k = 0; k < ng; ++k) {
            const auto& items = results[p].tops[k].items();
            if (!items.empty()) best[p * ng + k] = items.front().throughput;
          }
        }
        const hsize_t dims[3] = {n0, n1, ng};
        h5::Handle space(h5::check(H5Screate_simple(3, dims, nullptr), "create dataspace"), H5Sclose);
        auto grid_3d = [&](const char* name, const std::vector<double>& values, const char* units,
                           const char* description) {
          h5::check_values(grid.id(), name, values, NanMeans::NothingFits);
          const h5::Handle dcpl = h5::untimed(H5P_DATASET_CREATE);
          h5::Handle d(h5::check(H5Dcreate2(grid.id(), name, H5T_NATIVE_DOUBLE, space.id(), H5P_DEFAULT, dcpl.id(),
                                            H5P_DEFAULT),
                                 std::string("create dataset ") + name),
                       H5Dclose);
          h5::check_status(H5Dwrite(d.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                           std::string("write dataset ") + name);
          h5::attr(d.id(), "units", std::string_view(units));
          h5::attr(d.id(), "description", std::string_view(description));
          return d;
        };
        h5::Handle best_ds = grid_3d("best_throughput", best, "samples/s",
                                     "best throughput [axis 0][axis 1][GPU count]; NaN: nothing fits");

        // Speed-up over the base system and training days, [axis 0][axis 1][GPU count] like best_throughput.
        const HwSweepGrid derived = hw_sweep_grid(sweep, ng, results);
        std::vector<double> days(best.size());
        for (std::size_t i = 0; i < best.size(); ++i) days[i] = meta.model.dataset_samples / best[i] / 86400.0;
        std::vector<h5::Handle> derived_ds;
        derived_ds.push_back(grid_3d("speedup", derived.speedup, "1",
                                     "best_throughput over the base system's (/base) at the same GPU count; NaN where "
                                     "either fits nowhere"));
        if (with_days) {
          derived_ds.push_back(
              grid_3d("days", days, "days", "training time: /model dataset_samples / best_throughput / 86400"));
        }

        // One 2-D slice per GPU count for ParaView: its XDMF readers mis-read hyperslabs of the 3-D array.
        {
          h5::Handle xdmf = h5::create_group(file.id(), "xdmf");
          h5::attr(xdmf.id(), "description",
                   std::string_view("/grid/best_throughput, speedup and days [:, :, k] per GPU count, for the .xmf "
                                    "sidecar (ParaView)"));
          const hsize_t dims2[2] = {n0, n1};
          h5::Handle space2(h5::check(H5Screate_simple(2, dims2, nullptr), "create dataspace"), H5Sclose);
          std::vector<double> slice(n0 * n1);
          for (const std::string& metric : xdmf_metrics(with_days)) {
            const std::vector<double>& values =
                metric == "best_throughput" ? best : metric == "speedup" ? derived.speedup : days;
            const char* units = metric == "best_throughput" ? "samples/s" : metric == "speedup" ? "1" : "days";
            for (std::size_t k = 0; k < ng; ++k) {
              for (std::size_t p = 0; p < n0 * n1; ++p) slice[p] = values[p * ng + k];
              const std::string name = metric + "_" + std::to_string(meta.n_gpus[k]) + "_gpus";
              h5::check_values(xdmf.id(), name, slice, NanMeans::NothingFits);
              const h5::Handle dcpl = h5::untimed(H5P_DATASET_CREATE);
              h5::Handle d(h5::check(H5Dcreate2(xdmf.id(), name.c_str(), H5T_NATIVE_DOUBLE, space2.id(), H5P_DEFAULT,
                                                dcpl.id(), H5P_DEFAULT),
                                     "create dataset " + name),
                           H5Dclose);
              h5::check_status(H5Dwrite(d.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, slice.data()),
                               "write dataset " + name);
              h5::attr(d.id(), "units", std::string_view(units));
            }
          }
        }

        h5::Handle ng_ds = h5::dataset(grid.id(), "n_gpus", meta.n_gpus, "GPUs");
        h5::check_status(H5DSset_scale(ng_ds.id(), "n_gpus"), "make n_gpus a dimension scale");
        h5::check_status(H5DSattach_scale(best_ds.id(), ng_ds.id(), 2), "attach dimension scale n_gpus");
        for (const h5::Handle& d : derived_ds) {
          h5::check_status(H5DSattach_scale(d.id(), ng_ds.id(), 2), "attach dimension scale n_gpus");
        }
        for (std::size_t a = 0; a < sweep.axes.size(); ++a) {
          for (const SweepParameter& p : sweep.axes[a].parameters) {
            h5::Handle d = h5::dataset(grid.id(), p.name, p.values, find_system_key(p.name)->unit);
            h5::attr(d.id(), "axis", static_cast<std::int64_t>(a));
            h5::check_status(H5DSset_scale(d.id(), p.name.c_str()), "make " + p.name + " a dimension scale");
            h5::check_status(H5DSattach_scale(best_ds.id(), d.id(), static_cast<unsigned>(a)),
                             "attach dimension scale " + p.name);
            for (const h5::Handle& dd : derived_ds) {
              h5::check_status(H5DSattach_scale(dd.id(), d.id(), static_cast<unsigned>(a)),
                               "attach dimension scale " + p.name);
            }
          }
        }

        h5::Handle points = h5::create_group(file.id(), "points");
        for (std::size_t t = 0; t < targets.size(); ++t) {
          const bool is_base = t >= n_points;
          h5::Handle g = is_base ? h5::create_group(file.id(), "base") : h5::create_group(points.id(), std::to_string(t));
          write_target_group(g.id(), targets[t].problem.system, meta, results[t].tops,
                             targets[t].problem.runtime);
          if (!is_base) {
            h5::attr(g.id(), "index", static_cast<std::int64_t>(t));
            h5::attr(g.id(), "i0", static_cast<std::int64_t>(t / n1));
            h5::attr(g.id(), "i1", static_cast<std::int64_t>(t % n1));
          }
        }
      }
      image = h5::file_image(file, tmp);
    }
    write_new_file(tmp, image);
    write_new_file(xmf_tmp, xdmf_for(h5path.filename().string(), sweep, meta.n_gpus, with_days, sha256_hex(image)));
    publish_pair(tmp, path, xmf_tmp, xmf);
  } catch (const IoError& e) {
    discard();
    std::string message = "cannot write ";
    message += path;
    message += ": ";
    message += e.what();
    throw IoError(message);
  } catch (...) {
    discard();
    throw;
  }
  untrack_partial(0);
  untrack_partial(1);
}

}  // namespace perfsweep
