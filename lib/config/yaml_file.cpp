#include "config/yaml_file.hpp"

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


}  // namespace perfsweep
