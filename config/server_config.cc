#include "config/server_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <system_error>
#include <vector>

#include "config/command_line.h"
#include "config/config_params.h"
#include "config/yaml_value.h"

namespace bloomgate {
namespace {

// yaml-cpp marks count from 0; editors count from 1.
int HumanLine(const YAML::Mark& mark) { return mark.line + 1; }
int HumanColumn(const YAML::Mark& mark) { return mark.column + 1; }

bool EqualsIgnoreCaseAscii(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// `users:` is a list of strings, each an ACL user line; the rules are the
// server's to check (config/ knows no commands), so only the shape is here.
bool UserLines(const YAML::Node& value, std::vector<std::string>* users, std::string* error) {
  users->clear();
  if (value.IsNull()) return true;
  if (!value.IsSequence()) {
    *error = "value must be a list of \"<name> <rule> ...\" strings";
    return false;
  }
  for (const YAML::Node& item : value) {
    if (!item.IsScalar() || item.Scalar().find_first_not_of(" \t") == std::string::npos) {
      *error = "each entry must be a non-empty \"<name> <rule> ...\" string";
      return false;
    }
    users->push_back(item.Scalar());
  }
  return true;
}

}  // namespace

bool YamlValueText(const ConfigParam& param, const YAML::Node& value, std::string* text,
                   std::string* error) {
  if (value.IsNull()) {
    text->clear();
    return true;
  }
  if (value.IsScalar()) {
    *text = value.Scalar();
    return true;
  }
  if (value.IsSequence() && param.type == ConfigType::kAddressList) {
    text->clear();
    for (const YAML::Node& item : value) {
      if (!item.IsScalar()) {
        *error = "list items must be plain addresses";
        return false;
      }
      if (!text->empty()) *text += ' ';
      *text += item.Scalar();
    }
    return true;
  }
  *error = param.type == ConfigType::kAddressList
               ? "value must be an address, a space-separated string of "
                 "addresses or a list of them"
               : "value must be a single value, not a list or map";
  return false;
}

bool LoadConfigFile(const std::string& path, ServerConfig* config,
                    std::string* error) {
  const std::string where = "config file " + path + ": ";
  // A directory opens fine as an ifstream on Linux and then reads as empty,
  // which would pass for an empty config; ask first.
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored)) {
    *error = where + "is a directory";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = where + "cannot open: " + std::strerror(errno);
    return false;
  }
  const std::string contents{std::istreambuf_iterator<char>(in),
                             std::istreambuf_iterator<char>()};
  if (in.bad()) {
    *error = where + "cannot read: " + std::strerror(errno);
    return false;
  }

  YAML::Node root;
  try {
    root = YAML::Load(contents);
  } catch (const YAML::Exception& e) {
    *error = where + "YAML syntax error at line " +
             std::to_string(HumanLine(e.mark)) + ", column " +
             std::to_string(HumanColumn(e.mark)) + ": " + e.msg;
    return false;
  }
  if (root.IsNull()) return true;  // empty or only comments: all defaults
  if (!root.IsMap()) {
    *error = where + "must be a map of 'key: value' lines, one per setting";
    return false;
  }

  // Work on a copy so that a bad key halfway down leaves *config untouched.
  ServerConfig staged = *config;
  // yaml-cpp keeps both entries of a repeated key; refuse them, because
  // silently taking either one hides a mistake. Keyed by the canonical
  // name, so "Port" and "port" count as the same key.
  std::map<std::string_view, int> seen_at_line;
  bool users_seen = false;
  std::string message;
  for (const auto& entry : root) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    if (!key.IsScalar()) {
      *error = where + "line " + std::to_string(HumanLine(key.Mark())) +
               ": keys must be plain setting names";
      return false;
    }
    const std::string& name = key.Scalar();
    if (EqualsIgnoreCaseAscii(name, "users")) {
      if (users_seen) {
        *error = where + "key 'users' appears twice";
        return false;
      }
      users_seen = true;
      if (!UserLines(value, &staged.users, &message)) {
        *error = where + "key 'users': " + message;
        return false;
      }
      continue;
    }
    const ConfigParam* param = FindConfigParam(name);
    if (param == nullptr) {
      // The command line's hint, over the keys a file may hold.
      std::vector<std::string_view> known = {"users"};
      for (const ConfigParam& p : AllConfigParams()) known.push_back(p.name);
      const std::string hint = SuggestClosest(name, known);
      *error = where + "unknown key '" + name + "'" +
               (hint.empty() ? "" : "; did you mean '" + hint + "'?");
      return false;
    }
    auto [previous, inserted] =
        seen_at_line.emplace(param->name, HumanLine(key.Mark()));
    if (!inserted) {
      *error = where + "key '" + name + "' appears twice (lines " +
               std::to_string(previous->second) + " and " +
               std::to_string(HumanLine(key.Mark())) + ")";
      return false;
    }
    std::string text;
    if (!YamlValueText(*param, value, &text, &message) ||
        !param->set(&staged, text, &message)) {
      *error = where + "key '" + name + "': " + message;
      return false;
    }
  }
  *config = std::move(staged);
  return true;
}

}  // namespace bloomgate
