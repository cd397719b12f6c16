// The text a YAML value of the config file stands for, shared by the loader
// (server_config.cc) and CONFIG REWRITE (config_rewrite.cc), so the two read
// a line alike. Private to config/: it includes yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/config_params.h"

namespace bloomgate {

// A null (`logfile:` or `logfile: ~`) is empty, which is what "empty =
// stderr" / "empty = no AUTH" want; a list is joined with spaces, the form
// redis.conf uses for bind (accepted for kAddressList alone). False with
// *error set for any other shape.
bool YamlValueText(const ConfigParam& param, const YAML::Node& value, std::string* text,
                   std::string* error);

}  // namespace bloomgate
