#include "config/runtime_config.h"

#include "config/config_params.h"

namespace bloomgate {

bool RuntimeConfig::Set(const std::vector<std::pair<std::string, std::string>>& pairs,
                        std::string* error, ServerConfig* changed,
                        const Applier& apply) {
  std::unique_lock lock(mutex_);
  ServerConfig next = config_;
  for (const auto& [name, value] : pairs) {
    const ConfigParam* param = FindConfigParam(name);
    if (param == nullptr) {
      *error = "Unknown option or number of arguments for CONFIG SET - '" + name + "'";
      return false;
    }
    if (!param->runtime_settable) {
      *error = "CONFIG SET failed (possibly related to argument '" + name +
               "') - can't set immutable config";
      return false;
    }
    std::string why;
    if (!SetConfigValue(&next, name, value, &why)) {
      *error = "CONFIG SET failed (possibly related to argument '" + name + "') - " + why;
      return false;
    }
  }
  if (apply) {
    std::vector<std::string> names;
    for (const auto& pair : pairs) names.push_back(pair.first);
    std::string param, why;
    if (!apply(next, names, &param, &why)) {
      *error = "CONFIG SET failed (possibly related to argument '" + param + "') - " + why;
      return false;
    }
  }
  config_ = next;
  if (changed != nullptr) *changed = next;
  return true;
}

}  // namespace bloomgate
