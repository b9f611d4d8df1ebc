#include "io/h5.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/files.hpp"

namespace perfsweep::h5 {
namespace {

// The operating system's reason when HDF5 reports one (its file drivers write "errno = 28,
// error message = 'No space left on device'"), else the innermost description on the stack.
struct Cause {
  std::string innermost;
  std::string system;
};

herr_t collect_cause(unsigned n, const H5E_error2_t* err, void* out) {
  auto& cause = *static_cast<Cause*>(out);
  if (err == nullptr || err->desc == nullptr) return 0;
  const std::string desc = err->desc;
  if (n == 0) cause.innermost = desc;
  const auto at = desc.find("error message = '");
  if (cause.system.empty() && at != std::string::npos) {
    const auto begin = at + std::strlen("error message = '");
    const auto end = desc.find('\'', begin);
    cause.system = desc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  return 0;
}

std::string cause() {
  Cause c;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_cause, &c);
  H5Eclear2(H5E_DEFAULT);
  if (!c.system.empty()) return c.system;
  if (c.innermost.empty() && errno != 0) return std::strerror(errno);
  return c.innermost.empty() ? std::string("unknown HDF5 error") : c.innermost;
}

// HDF5 prints its error stack on stderr by default; the cause goes into H5Error instead. Its
// exit-time cleanup crashes on a file whose close failed (a full disk), so it is turned off:
// every file is closed explicitly and checked.
void quiet_errors() {
  static const bool once = [] {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

// A corrupted header can claim any element count or string size; what a read allocates is
// bounded by what the file could hold (uncompressed, as perfsweep writes it; a generous factor
// for a compressed dataset written elsewhere), so a damaged file is an H5Error naming the object,
// never an allocation failure.
void check_claimed_bytes(hid_t obj, const std::string& name, double bytes) {
  hsize_t file_bytes = 0;
  const hid_t file = H5Iget_file_id(obj);
  if (file >= 0) {
    if (H5Fget_filesize(file, &file_bytes) < 0) file_bytes = 0;
    H5Fclose(file);
  }
  const double limit = 64.0 * static_cast<double>(file_bytes) + 1048576.0;
  if (!(bytes >= 0) || bytes > limit) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.4g bytes, more than a file of %llu bytes can hold", bytes,
                  static_cast<unsigned long long>(file_bytes));
    throw H5Error("HDF5: " + name + " claims " + buf + " (a damaged file?)");
  }
}

// HDF5 copies a compact dataset's elements out of its object header without comparing the
// header's stored size with the dataspace; a damaged header would read past it. So is a
// contiguous one whose stored type is wider than the block its layout names.
void check_stored_bytes(hid_t d, hid_t stored_type, const std::string& name, hssize_t n) {
  Handle dcpl(check(H5Dget_create_plist(d), "get creation properties of " + name), H5Pclose);
  const H5D_layout_t layout = H5Pget_layout(dcpl.id());
  const hsize_t stored = H5Dget_storage_size(d);
  // a variable-length string is stored as a 16-byte reference into the global heap
  const std::size_t width = H5Tis_variable_str(stored_type) > 0 ? 16 : H5Tget_size(stored_type);
  const hsize_t needed = static_cast<hsize_t>(n) * width;
  if ((layout == H5D_COMPACT || (layout == H5D_CONTIGUOUS && stored > 0)) && stored < needed)
    throw H5Error("HDF5: dataset " + name + " claims " + std::to_string(n) + " elements of " + std::to_string(width) +
                  " bytes but stores " + std::to_string(stored) + " bytes (a damaged file?)");
}

}  // namespace

hid_t check(hid_t id, const std::string& what) {
  if (id < 0) throw H5Error("HDF5: cannot " + what + ": " + cause());
  return id;
}

void check_status(herr_t status, const std::string& what) {
  if (status < 0) throw H5Error("HDF5: cannot " + what + ": " + cause());
}

Handle::Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
Handle::~Handle() {
  if (id_ >= 0 && closer_) closer_(id_);
}
Handle::Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = o.id_;
    closer_ = o.closer_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Handle::close(const std::string& what) {
  const hid_t id = id_;
  id_ = H5I_INVALID_HID;
  if (id >= 0 && closer_) check_status(closer_(id), "close " + what);
}

Handle untimed(hid_t property_class) {
  Handle p(check(H5Pcreate(property_class), "create property list"), H5Pclose);
  check_status(H5Pset_obj_track_times(p.id(), false), "drop modification times");
  return p;
}

Handle create_file(const std::string& path) {
  quiet_errors();
  errno = 0;
  Handle fapl(check(H5Pcreate(H5P_FILE_ACCESS), "create file access list"), H5Pclose);
  check_status(H5Pset_fclose_degree(fapl.id(), H5F_CLOSE_STRONG), "set close degree");
  // Built in memory (growing by 1 MiB) and written to disk once by write_file: a hardware sweep's
  // file holds tens of thousands of small datasets, which the default driver writes piece by piece.
  check_status(H5Pset_fapl_core(fapl.id(), 1 << 20, 0), "set the in-memory driver");
  Handle fcpl = untimed(H5P_FILE_CREATE);  // the root group's
  return {check(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.id(), fapl.id()), "create " + path), H5Fclose};
}

std::string file_image(Handle& file, const std::string& path) {
  check_status(H5Fflush(file.id(), H5F_SCOPE_GLOBAL), "flush " + path);
  const ssize_t size = H5Fget_file_image(file.id(), nullptr, 0);
  check_status(size < 0 ? -1 : 0, "size the image of " + path);
  std::string image(static_cast<std::size_t>(size), '\0');
  check_status(H5Fget_file_image(file.id(), image.data(), image.size()) != size ? -1 : 0, "copy the image of " + path);
  file.close(path);
  return image;
}

void write_file(Handle& file, const std::string& path) { write_new_file(path, file_image(file, path)); }

Handle open_file(const std::string& path, bool writable) {
  quiet_errors();
  errno = 0;
  return {check(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path),
          H5Fclose};
}

Handle create_group(hid_t parent, const std::string& name) {
  Handle gcpl = untimed(H5P_GROUP_CREATE);
  return {check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.id(), H5P_DEFAULT), "create group " + name),
          H5Gclose};
}

Handle open_group(hid_t parent, const std::string& name) {
  return {check(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), "open group " + name), H5Gclose};
}

bool exists(hid_t parent, const std::string& name) {
  const htri_t r = H5Lexists(parent, name.c_str(), H5P_DEFAULT);
  check_status(r < 0 ? -1 : 0, "look up " + name);
  return r > 0;
}

namespace {
Handle string_type(std::size_t size) {
  Handle t(check(H5Tcopy(H5T_C_S1), "copy string type"), H5Tclose);
  check_status(H5Tset_size(t.id(), size == 0 ? 1 : size), "size string type");
  check_status(H5Tset_strpad(t.id(), H5T_STR_NULLTERM), "pad string type");
  check_status(H5Tset_cset(t.id(), H5T_CSET_UTF8), "set string type's character set");
  return t;
}

Handle scalar_space() { return {check(H5Screate(H5S_SCALAR), "create scalar dataspace"), H5Sclose}; }
Handle simple_space(hsize_t n) { return {check(H5Screate_simple(1, &n, nullptr), "create dataspace"), H5Sclose}; }

// The path of `name` under `parent` ("/A100-NVS8/top/t"; an attribute's as "/A100-NVS8@nvs"), for
// messages.
std::string object_path(hid_t parent, const std::string& name, char separator) {
  char buf[1024];
  const ssize_t n = H5Iget_name(parent, buf, sizeof buf);
  std::string path = n > 0 ? std::string(buf, std::min(static_cast<std::size_t>(n), sizeof buf - 1)) : std::string();
  if (separator == '/' && (path.empty() || path.back() != '/')) path += '/';
  if (separator == '@') path += '@';
  path += name;
  return path;
}

template <typename T>
void check_numbers(hid_t parent, const std::string& name, const T* data, std::size_t n, NanMeans nan, char separator) {
  for (std::size_t i = 0; i < n; ++i) {
    if (publishable(data[i], nan)) continue;
    std::string field = object_path(parent, name, separator);
    if (n > 1) {
      field += '[';
      field += std::to_string(i);
      field += ']';
    }
    check_published(data[i], field, nan);
  }
}

template <typename T>
void numeric_attr(hid_t obj, const std::string& name, hid_t type, const T* data, hsize_t n, bool scalar) {
  check_numbers(obj, name, data, n, NanMeans::Nonsense, '@');
  Handle space = scalar ? scalar_space() : simple_space(n);
  Handle a(check(H5Acreate2(obj, name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT), "create attribute " + name),
           H5Aclose);
  check_status(H5Awrite(a.id(), type, data), "write attribute " + name);
  a.close("attribute " + name);
}

template <typename T>
Handle numeric_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<T>& values,
                       std::string_view units) {
  check_numbers(parent, name, values.data(), values.size(), NanMeans::Nonsense, '/');
  const hsize_t n = values.size();
  Handle space = simple_space(n);
  // Small datasets (most of a sweep's) live in their object header: one allocation, not two.
  Handle dcpl = untimed(H5P_DATASET_CREATE);
  if (n * sizeof(T) <= 16384) check_status(H5Pset_layout(dcpl.id(), H5D_COMPACT), "set compact layout");
  Handle d(check(H5Dcreate2(parent, name.c_str(), type, space.id(), H5P_DEFAULT, dcpl.id(), H5P_DEFAULT),
                 "create dataset " + name),
           H5Dclose);
  if (n > 0) check_status(H5Dwrite(d.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write dataset " + name);
  if (!units.empty()) attr(d.id(), "units", units);
  return d;
}

template <typename T>
std::vector<T> read_numeric(hid_t parent, const std::string& name, hid_t type) {
  Handle d(check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
  Handle space(check(H5Dget_space(d.id()), "get dataspace of " + name), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  check_status(n < 0 ? -1 : 0, "count elements of " + name);
  check_claimed_bytes(d.id(), "dataset " + name, static_cast<double>(n) * sizeof(T));
  Handle stored_type(check(H5Dget_type(d.id()), "get type of " + name), H5Tclose);
  const H5T_class_t cls = H5Tget_class(stored_type.id());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) throw H5Error("HDF5: dataset " + name + " is not numeric");
  check_stored_bytes(d.id(), stored_type.id(), name, n);
  std::vector<T> out(static_cast<std::size_t>(n));
  if (n > 0) check_status(H5Dread(d.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read dataset " + name);
  return out;
}
}  // namespace

void attr(hid_t obj, const std::string& name, std::string_view value) {
  Handle type = string_type(value.size());
  Handle space = scalar_space();
  Handle a(check(H5Acreate2(obj, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), "create attribute " + name),
           H5Aclose);
  const std::string buf(value);
  check_status(H5Awrite(a.id(), type.id(), buf.c_str()), "write attribute " + name);
  a.close("attribute " + name);
}

void text_attr(hid_t obj, const std::string& name, std::string_view value) {
  Handle type(check(H5Tcopy(H5T_C_S1), "copy string type"), H5Tclose);
  check_status(H5Tset_size(type.id(), H5T_VARIABLE), "size string type");
  check_status(H5Tset_cset(type.id(), H5T_CSET_UTF8), "set string type's character set");
  Handle space = scalar_space();
  Handle a(check(H5Acreate2(obj, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), "create attribute " + name),
           H5Aclose);
  const std::string buf(value);
  const char* data = buf.c_str();
  check_status(H5Awrite(a.id(), type.id(), &data), "write attribute " + name);
  a.close("attribute " + name);
}

void attr(hid_t obj, const std::string& name, double value) {
  numeric_attr(obj, name, H5T_NATIVE_DOUBLE, &value, 1, true);
}
void attr(hid_t obj, const std::string& name, std::int64_t value) {
  numeric_attr(obj, name, H5T_NATIVE_INT64, &value, 1, true);
}
void attr(hid_t obj, const std::string& name, const std::vector<std::int64_t>& values) {
  numeric_attr(obj, name, H5T_NATIVE_INT64, values.data(), values.size(), false);
}
void attr(hid_t obj, const std::string& name, const std::vector<double>& values) {
  numeric_attr(obj, name, H5T_NATIVE_DOUBLE, values.data(), values.size(), false);
}

Handle dataset(hid_t parent, const std::string& name, const std::vector<double>& values, std::string_view units) {
  return numeric_dataset(parent, name, H5T_NATIVE_DOUBLE, values, units);
}
Handle dataset(hid_t parent, const std::string& name, const std::vector<std::int64_t>& values,
               std::string_view units) {
  return numeric_dataset(parent, name, H5T_NATIVE_INT64, values, units);
}

Handle dataset(hid_t parent, const std::string& name, const std::vector<std::string>& values,
               std::string_view units) {
  std::size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size() + 1);
  std::string buf(width * values.size(), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) buf.replace(i * width, values[i].size(), values[i]);
  Handle type = string_type(width);
  const hsize_t n = values.size();
  Handle space = simple_space(n);
  Handle dcpl = untimed(H5P_DATASET_CREATE);
  if (buf.size() <= 16384) check_status(H5Pset_layout(dcpl.id(), H5D_COMPACT), "set compact layout");
  Handle d(check(H5Dcreate2(parent, name.c_str(), type.id(), space.id(), H5P_DEFAULT, dcpl.id(), H5P_DEFAULT),
                 "create dataset " + name),
           H5Dclose);
  if (n > 0) check_status(H5Dwrite(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), "write dataset " + name);
  if (!units.empty()) attr(d.id(), "units", units);
  return d;
}

void check_values(hid_t parent, const std::string& name, const std::vector<double>& values, NanMeans nan) {
  check_numbers(parent, name, values.data(), values.size(), nan, '/');
}

void text(hid_t parent, const std::string& name, std::string_view value) {
  Handle type = string_type(value.size() + 1);
  Handle space = scalar_space();
  Handle dcpl = untimed(H5P_DATASET_CREATE);
  Handle d(check(H5Dcreate2(parent, name.c_str(), type.id(), space.id(), H5P_DEFAULT, dcpl.id(), H5P_DEFAULT),
                 "create dataset " + name),
           H5Dclose);
  const std::string buf(value);
  check_status(H5Dwrite(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.c_str()), "write dataset " + name);
  d.close("dataset " + name);
}

std::vector<double> read_doubles(hid_t parent, const std::string& name) {
  return read_numeric<double>(parent, name, H5T_NATIVE_DOUBLE);
}
std::vector<std::int64_t> read_ints(hid_t parent, const std::string& name) {
  return read_numeric<std::int64_t>(parent, name, H5T_NATIVE_INT64);
}

std::string read_text(hid_t parent, const std::string& name) {
  Handle d(check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
  Handle type(check(H5Dget_type(d.id()), "get type of " + name), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_STRING || H5Tis_variable_str(type.id()) > 0)
    throw H5Error("HDF5: dataset " + name + " is not a fixed-length string");
  Handle space(check(H5Dget_space(d.id()), "get dataspace of " + name), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.id()) != 1) throw H5Error("HDF5: dataset " + name + " is not one string");
  check_claimed_bytes(d.id(), "dataset " + name, static_cast<double>(H5Tget_size(type.id())));
  check_stored_bytes(d.id(), type.id(), name, 1);
  std::string out(H5Tget_size(type.id()), '\0');
  check_status(H5Dread(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read dataset " + name);
  out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

bool is_text_dataset(hid_t parent, const std::string& name) {
  Handle d(check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
  Handle type(check(H5Dget_type(d.id()), "get type of " + name), H5Tclose);
  return H5Tget_class(type.id()) == H5T_STRING;
}

std::vector<std::string> read_strings(hid_t parent, const std::string& name) {
  Handle d(check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
  Handle type(check(H5Dget_type(d.id()), "get type of " + name), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_STRING) throw H5Error("HDF5: dataset " + name + " does not hold strings");
  Handle space(check(H5Dget_space(d.id()), "get dataspace of " + name), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  check_status(n < 0 ? -1 : 0, "count elements of " + name);
  std::vector<std::string> out;
  if (n <= 0) return out;
  const auto count = static_cast<std::size_t>(n);
  const bool variable = H5Tis_variable_str(type.id()) > 0;
  check_claimed_bytes(d.id(), "dataset " + name,
                      static_cast<double>(n) * static_cast<double>(variable ? sizeof(char*) : H5Tget_size(type.id())));
  check_stored_bytes(d.id(), type.id(), name, n);
  if (variable) {
    std::vector<char*> data(count, nullptr);
    check_status(H5Dread(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), "read dataset " + name);
    for (char* p : data) out.emplace_back(p == nullptr ? "" : p);
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(type.id(), space.id(), H5P_DEFAULT, data.data());
#else
    H5Dvlen_reclaim(type.id(), space.id(), H5P_DEFAULT, data.data());
#endif
    return out;
  }
  const std::size_t width = H5Tget_size(type.id());
  std::string buf(width * count, '\0');
  check_status(H5Dread(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), "read dataset " + name);
  for (std::size_t i = 0; i < count; ++i) {
    std::string v = buf.substr(i * width, width);
    v.resize(v.find('\0') == std::string::npos ? v.size() : v.find('\0'));
    out.push_back(std::move(v));
  }
  return out;
}

std::string read_string_attr(hid_t obj, const std::string& name) {
  Handle a(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "open attribute " + name), H5Aclose);
  Handle type(check(H5Aget_type(a.id()), "get type of " + name), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_STRING) throw H5Error("HDF5: attribute " + name + " is not a string");
  // one string, whatever its kind: a damaged dataspace of several would be read past `data`
  Handle space(check(H5Aget_space(a.id()), "get dataspace of " + name), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.id()) != 1) throw H5Error("HDF5: attribute " + name + " is not one string");
  if (H5Tis_variable_str(type.id()) > 0) {
    char* data = nullptr;
    check_status(H5Aread(a.id(), type.id(), &data), "read attribute " + name);
    std::string out = data == nullptr ? std::string() : std::string(data);
    H5free_memory(data);
    return out;
  }
  check_claimed_bytes(a.id(), "attribute " + name, static_cast<double>(H5Tget_size(type.id())));
  if (H5Aget_storage_size(a.id()) < H5Tget_size(type.id()))
    throw H5Error("HDF5: attribute " + name + " stores fewer bytes than its type claims (a damaged file?)");
  std::string out(H5Tget_size(type.id()), '\0');
  check_status(H5Aread(a.id(), type.id(), out.data()), "read attribute " + name);
  out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

bool has_attr(hid_t obj, const std::string& name) {
  const htri_t e = H5Aexists(obj, name.c_str());
  check_status(e < 0 ? -1 : 0, "look up attribute " + name);
  return e > 0;
}

namespace {
herr_t collect_name(hid_t, const char* name, const void*, void* out) {
  static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}
herr_t collect_attr_name(hid_t, const char* name, const H5A_info_t*, void* out) { return collect_name(0, name, nullptr, out); }
herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* out) { return collect_name(0, name, nullptr, out); }
}  // namespace

std::vector<std::string> attr_names(hid_t obj) {
  std::vector<std::string> out;
  hsize_t at = 0;
  check_status(H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &at, collect_attr_name, &out), "list attributes");
  return out;
}

std::vector<std::string> member_names(hid_t group) {
  std::vector<std::string> out;
  hsize_t at = 0;
  check_status(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &at, collect_link_name, &out), "list group members");
  return out;
}

bool is_group(hid_t parent, const std::string& name) {
  if (!exists(parent, name)) return false;
  Handle o(check(H5Oopen(parent, name.c_str(), H5P_DEFAULT), "open " + name), H5Oclose);
  return H5Iget_type(o.id()) == H5I_GROUP;
}

std::vector<double> read_numeric_attr(hid_t obj, const std::string& name) {
  Handle a(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "open attribute " + name), H5Aclose);
  Handle type(check(H5Aget_type(a.id()), "get type of " + name), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.id());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) throw H5Error("HDF5: attribute " + name + " is not numeric");
  Handle space(check(H5Aget_space(a.id()), "get dataspace of " + name), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  check_status(n < 0 ? -1 : 0, "count elements of " + name);
  check_claimed_bytes(a.id(), "attribute " + name, static_cast<double>(n) * sizeof(double));
  const hsize_t stored = H5Aget_storage_size(a.id());
  if (stored < static_cast<hsize_t>(n) * H5Tget_size(type.id()))
    throw H5Error("HDF5: attribute " + name + " claims " + std::to_string(n) + " elements but stores " +
                  std::to_string(stored) + " bytes (a damaged file?)");
  std::vector<double> out(static_cast<std::size_t>(n));
  if (n > 0) check_status(H5Aread(a.id(), H5T_NATIVE_DOUBLE, out.data()), "read attribute " + name);
  return out;
}

bool attr_is_text(hid_t obj, const std::string& name) {
  Handle a(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "open attribute " + name), H5Aclose);
  Handle type(check(H5Aget_type(a.id()), "get type of " + name), H5Tclose);
  return H5Tget_class(type.id()) == H5T_STRING;
}

std::string attr_text(hid_t obj, const std::string& name) {
  if (attr_is_text(obj, name)) return read_string_attr(obj, name);
  std::string out;
  for (const double v : read_numeric_attr(obj, name)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

}  // namespace perfsweep::h5
