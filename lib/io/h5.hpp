#pragma once
// Thin RAII layer over the HDF5 C API: files, groups, attributes, 1-D datasets and text.
// Every call is checked: a failure throws H5Error (core/error.hpp) naming the object and the
// innermost cause HDF5 reported (for a full disk: the write's errno text). Every number written
// as an attribute or dataset is checked before it is written (core/published.hpp): a negative,
// infinite or NaN one is refused with an InputError naming its path in the file.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/published.hpp"

namespace perfsweep::h5 {

// Owns one hid_t and closes it with the matching H5*close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer);
  ~Handle();
  Handle(Handle&& o) noexcept;
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t id() const { return id_; }
  // Closes now and checks the result (for a file: the final flush); the destructor cannot throw
  // and so only releases.
  void close(const std::string& what);

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Creates a new file in memory, named `path`; nothing is written until write_file. Closing it
// closes every object still open in it.
Handle create_file(const std::string& path);
// Writes the file built in memory to `path` (which must not exist) at its exact size, then closes
// it: an output needs no more disk than its bytes.
void write_file(Handle& file, const std::string& path);
// The bytes of the file built in memory (what write_file writes), then closes it; `path` names it
// in errors.
std::string file_image(Handle& file, const std::string& path);
Handle open_file(const std::string& path, bool writable = false);
// An object creation property list (file, group, dataset) without modification times, so the
// same results give the same file, byte for byte.
Handle untimed(hid_t property_class);
Handle create_group(hid_t parent, const std::string& name);
Handle open_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& name);

// Throws H5Error "HDF5: cannot <what>: <cause>" when id (or status) is negative.
hid_t check(hid_t id, const std::string& what);
void check_status(herr_t status, const std::string& what);

void attr(hid_t obj, const std::string& name, std::string_view value);
// A variable-length string attribute: its bytes live in the file's heap, so it may exceed the
// 64 KiB an attribute's header holds (echoed input files).
void text_attr(hid_t obj, const std::string& name, std::string_view value);
void attr(hid_t obj, const std::string& name, double value);
void attr(hid_t obj, const std::string& name, std::int64_t value);
void attr(hid_t obj, const std::string& name, const std::vector<std::int64_t>& values);
void attr(hid_t obj, const std::string& name, const std::vector<double>& values);

// 1-D datasets (possibly empty); `units` becomes the dataset's "units" attribute when not empty.
Handle dataset(hid_t parent, const std::string& name, const std::vector<double>& values, std::string_view units = {});
Handle dataset(hid_t parent, const std::string& name, const std::vector<std::int64_t>& values,
               std::string_view units = {});
// The check every numeric attribute and dataset passes, for callers that write with the C API
// (grid_h5.cpp's 2-D and 3-D datasets, where NaN marks "nothing fits").
void check_values(hid_t parent, const std::string& name, const std::vector<double>& values,
                  NanMeans nan = NanMeans::Nonsense);
// A scalar variable-length string dataset (echoed input files).
void text(hid_t parent, const std::string& name, std::string_view value);

std::vector<double> read_doubles(hid_t parent, const std::string& name);
std::vector<std::int64_t> read_ints(hid_t parent, const std::string& name);
std::string read_text(hid_t parent, const std::string& name);
// A string attribute, fixed-length or variable-length (text_attr).
std::string read_string_attr(hid_t obj, const std::string& name);
bool has_attr(hid_t obj, const std::string& name);
// The names of an object's attributes, or of a group's members, in name order.
std::vector<std::string> attr_names(hid_t obj);
std::vector<std::string> member_names(hid_t group);
// Whether `name` in `parent` is a group (false when it is absent or a dataset).
bool is_group(hid_t parent, const std::string& name);
// A numeric attribute (scalar or 1-D) converted to double; H5Error for a string one.
std::vector<double> read_numeric_attr(hid_t obj, const std::string& name);
// Any attribute as text: a string as it is, numbers as "%.10g" joined by ", ".
std::string attr_text(hid_t obj, const std::string& name);
// Whether the attribute holds text (a string type), not numbers.
bool attr_is_text(hid_t obj, const std::string& name);

}  // namespace perfsweep::h5
