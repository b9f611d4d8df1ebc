#include "config/yaml_file.hpp"

#include <fstream>

#include "core/error.hpp"

namespace perfsweep {

YAML::Node load_yaml_file(const std::filesystem::path& file) {
  const std::string f = file.string();
  try {
    return YAML::LoadFile(f);
  } catch (const YAML::BadFile&) {
    throw InputError(f + ": cannot open (no such file, or unreadable)");
  } catch (const YAML::Exception& e) {
    throw InputError(f + ": malformed YAML: " + e.what());
  }
}

void write_file_atomically(const std::filesystem::path& file, const std::string& text) {
  const std::filesystem::path tmp = file.string() + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw InputError(file.string() + ": cannot write");
    f << text;
    if (!f) throw InputError(file.string() + ": write failed");
  }
  std::filesystem::rename(tmp, file);
}

}  // namespace perfsweep
