#include "io/h5.hpp"

#include <stdexcept>

namespace perfsweep::h5 {
namespace {
hid_t check(hid_t id, const std::string& what) {
  if (id < 0) throw std::runtime_error("HDF5: cannot " + what);
  return id;
}
void check(herr_t status, const char* what, const std::string& name) {
  if (status < 0) throw std::runtime_error(std::string("HDF5: cannot ") + what + " " + name);
}
}  // namespace

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

Handle create_file(const std::string& path) {
  // Built in memory and written to disk once on close: a hardware sweep's file holds tens of
  // thousands of small datasets, which the default driver writes piece by piece.
  Handle fapl(check(H5Pcreate(H5P_FILE_ACCESS), "file access properties"), H5Pclose);
  H5Pset_fapl_core(fapl.id(), 16 << 20, 1);
  return {check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()), "create " + path), H5Fclose};
}

Handle open_file(const std::string& path, bool writable) {
  return {check(H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path),
          H5Fclose};
}

Handle create_group(hid_t parent, const std::string& name) {
  return {check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create group " + name),
          H5Gclose};
}

Handle open_group(hid_t parent, const std::string& name) {
  return {check(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), "open group " + name), H5Gclose};
}

bool exists(hid_t parent, const std::string& name) { return H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0; }

namespace {
Handle string_type(std::size_t size) {
  Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.id(), size == 0 ? 1 : size);
  H5Tset_strpad(t.id(), H5T_STR_NULLTERM);
  H5Tset_cset(t.id(), H5T_CSET_UTF8);
  return t;
}

template <typename T>
void numeric_attr(hid_t obj, const std::string& name, hid_t type, const T* data, hsize_t n, bool scalar) {
  Handle space(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle a(check(H5Acreate2(obj, name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT), "create attribute " + name),
           H5Aclose);
  check(H5Awrite(a.id(), type, data), "write attribute", name);
}

template <typename T>
Handle numeric_dataset(hid_t parent, const std::string& name, hid_t type, const std::vector<T>& values,
                       std::string_view units) {
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle d(check(H5Dcreate2(parent, name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 "create dataset " + name),
           H5Dclose);
  if (n > 0) check(H5Dwrite(d.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write dataset", name);
  if (!units.empty()) attr(d.id(), "units", units);
  return d;
}

template <typename T>
std::vector<T> read_numeric(hid_t parent, const std::string& name, hid_t type) {
  Handle d(check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
  Handle space(H5Dget_space(d.id()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  std::vector<T> out(static_cast<std::size_t>(n));
  if (n > 0) check(H5Dread(d.id(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read dataset", name);
  return out;
}
}  // namespace

void attr(hid_t obj, const std::string& name, std::string_view value) {
  Handle type = string_type(value.size());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(check(H5Acreate2(obj, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), "create attribute " + name),
           H5Aclose);
  const std::string buf(value);
  check(H5Awrite(a.id(), type.id(), buf.c_str()), "write attribute", name);
}

void text_attr(hid_t obj, const std::string& name, std::string_view value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.id(), H5T_VARIABLE);
  H5Tset_cset(type.id(), H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(check(H5Acreate2(obj, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT), "create attribute " + name),
           H5Aclose);
  const std::string buf(value);
  const char* data = buf.c_str();
  check(H5Awrite(a.id(), type.id(), &data), "write attribute", name);
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

void text(hid_t parent, const std::string& name, std::string_view value) {
  Handle type = string_type(value.size() + 1);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle d(check(H5Dcreate2(parent, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 "create dataset " + name),
           H5Dclose);
  const std::string buf(value);
  check(H5Dwrite(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.c_str()), "write dataset", name);
}

std::vector<double> read_doubles(hid_t parent, const std::string& name) {
  return read_numeric<double>(parent, name, H5T_NATIVE_DOUBLE);
}
std::vector<std::int64_t> read_ints(hid_t parent, const std::string& name) {
  return read_numeric<std::int64_t>(parent, name, H5T_NATIVE_INT64);
}

std::string read_text(hid_t parent, const std::string& name) {
  Handle d(check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
  Handle type(H5Dget_type(d.id()), H5Tclose);
  std::string out(H5Tget_size(type.id()), '\0');
  check(H5Dread(d.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read dataset", name);
  out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

std::string read_string_attr(hid_t obj, const std::string& name) {
  Handle a(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "open attribute " + name), H5Aclose);
  Handle type(H5Aget_type(a.id()), H5Tclose);
  std::string out(H5Tget_size(type.id()), '\0');
  check(H5Aread(a.id(), type.id(), out.data()), "read attribute", name);
  out.resize(out.find('\0') == std::string::npos ? out.size() : out.find('\0'));
  return out;
}

}  // namespace perfsweep::h5
