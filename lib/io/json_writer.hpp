#pragma once
// A minimal streaming JSON writer: objects, arrays, strings, integers, and doubles printed with 17
// significant digits so that they read back bit-identical. Every number is checked as it is
// written (core/published.hpp): a negative, infinite or NaN one throws an InputError naming its
// key path ("totals.t"), so no report is printed with one.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace perfsweep {

class JsonWriter {
 public:
  explicit JsonWriter(int indent = 1) : indent_(indent) {}
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(double v);
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(bool v);
  JsonWriter& value(std::string_view v);
  const std::string& str() const { return out_; }

 private:
  void before_value();
  void write_string(std::string_view v);
  void newline();
  std::string out_;
  // The key path of the value being written, for messages.
  std::string field() const;
  std::vector<bool> first_;  // per open container: nothing written yet
  std::vector<std::string> keys_;  // per open container: the key it was written under ("" in an array)
  std::string key_;  // the last key written
  bool after_key_ = false;
  int indent_;
};

std::string format_double(double v);  // shortest-safe "%.17g"; NaN and infinities as null

}  // namespace perfsweep
