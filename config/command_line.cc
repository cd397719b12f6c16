#include "config/command_line.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

#include "config/config_params.h"

namespace bloomgate {

bool ParseCommandLine(int argc, char** argv, CommandLine* cmd,
                      ConfigOverrides* overrides, std::string* error) {
  *cmd = CommandLine{};
  overrides->clear();
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      cmd->show_help = true;
      continue;
    }
    if (arg == "--version") {
      cmd->show_version = true;
      continue;
    }
    if (arg.size() <= 2 || !arg.starts_with("--")) {
      *error = "unexpected argument '" + std::string(arg) +
               "' (options start with --; see --help)";
      return false;
    }
    std::string_view name = arg.substr(2);
    std::string_view value;
    const size_t equals = name.find('=');
    const bool inline_value = equals != std::string_view::npos;
    if (inline_value) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
    }
    if (name == "help" || name == "version") {
      *error = "option --" + std::string(name) + " takes no value";
      return false;
    }
    const bool is_config = name == "config";
    const ConfigParam* param = is_config ? nullptr : FindConfigParam(name);
    if (!is_config && param == nullptr) {
      std::vector<std::string_view> known = {"config", "help", "version"};
      for (const ConfigParam& p : AllConfigParams()) known.push_back(p.name);
      const std::string hint = SuggestClosest(name, known);
      *error = "unknown option '--" + std::string(name) + "'" +
               (hint.empty() ? "" : "; did you mean --" + hint + "?") + " (see --help)";
      return false;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        *error = "option --" + std::string(name) + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (is_config) {
      // Two files would need a merge rule nobody would guess; refuse.
      if (!cmd->config_path.empty()) {
        *error = "option --config given twice";
        return false;
      }
      if (value.empty()) {
        *error = "option --config needs a file name";
        return false;
      }
      cmd->config_path = std::string(value);
      continue;
    }
    overrides->emplace_back(std::string(param->name), std::string(value));
  }
  return true;
}

bool ResolveConfig(const CommandLine& cmd, const ConfigOverrides& overrides,
                   ServerConfig* config, std::string* error) {
  ServerConfig staged = *config;
  if (!cmd.config_path.empty() &&
      !LoadConfigFile(cmd.config_path, &staged, error)) {
    return false;
  }
  for (const auto& [name, value] : overrides) {
    std::string message;
    if (!SetConfigValue(&staged, name, value, &message)) {
      *error = "option --" + name + ": " + message;
      return false;
    }
  }
  *config = std::move(staged);
  return true;
}

namespace {

// A byte count as --help shows it: in the largest Redis binary unit that
// divides it exactly (4294967296 -> "4gb"), which is what a reader would
// type; plain bytes otherwise.
std::string MemoryForHumans(const std::string& bytes_text) {
  const std::optional<uint64_t> bytes = ParseMemoryValue(bytes_text);
  if (!bytes || *bytes == 0) return bytes_text;
  for (const auto& [unit, size] :
       {std::pair{"gb", 1ull << 30}, {"mb", 1ull << 20}, {"kb", 1ull << 10}}) {
    if (*bytes % size == 0) return std::to_string(*bytes / size) + unit;
  }
  return bytes_text;
}

}  // namespace

std::string SuggestClosest(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string normal(word);
  for (char& c : normal) {
    if (c == '_') c = '-';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  // Levenshtein distance, one row at a time.
  auto distance = [&normal](std::string_view other) {
    std::vector<size_t> row(other.size() + 1);
    for (size_t j = 0; j <= other.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= normal.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= other.size(); ++j) {
        size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                           diagonal + (normal[i - 1] == other[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    return row[other.size()];
  };
  const size_t allowed = std::max<size_t>(2, normal.size() / 3);
  std::string best;
  size_t best_distance = allowed + 1;
  for (std::string_view candidate : candidates) {
    size_t d = distance(candidate);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(candidate);
    }
  }
  return best;
}

std::string CommandLineHelp(std::string_view modes_usage) {
  const ServerConfig defaults;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"--config <file>",
       "YAML config file (see bloomgate.example.yaml); the options below "
       "override it"},
      {"-h, --help", "print this help and exit"},
      {"--version", "print the version and exit"},
  };
  const size_t fixed_rows = rows.size();
  for (const ConfigParam& param : AllConfigParams()) {
    std::string shown = param.get(defaults);
    if (param.type == ConfigType::kMemory) shown = MemoryForHumans(shown);
    if (shown.empty()) shown = "\"\"";
    std::string text = std::string(param.description) +
                       " (default: " + shown + ")";
    if (!param.runtime_settable) text += " [start-up only]";
    rows.emplace_back("--" + std::string(param.name) + " " +
                          std::string(param.value_hint),
                      std::move(text));
  }
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());

  std::string help =
      "Usage: bloomgate [--config <file>] [--<setting> <value> | "
      "--<setting>=<value>]...\n";
  if (!modes_usage.empty()) help += std::string(modes_usage);
  help += "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i == fixed_rows) {
      help +=
          "\nSettings: each is also a key of the config file and a CONFIG "
          "GET/SET name.\n"
          "[start-up only] settings cannot be changed with CONFIG SET.\n";
    }
    help += "  " + rows[i].first +
            std::string(width - rows[i].first.size() + 2, ' ') +
            rows[i].second + "\n";
  }
  help +=
      "\nMemory values take Redis units, case-insensitive: 1k = 1000, "
      "1kb = 1024, m/mb, g/gb.\n";
  return help;
}

}  // namespace bloomgate
