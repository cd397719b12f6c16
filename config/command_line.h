// The command line: `bloomgate [--config FILE] [--<setting> VALUE]...`.
//
// Every row of the parameter table is a flag under its own name (--port,
// --bind, --maxmemory, --bf-error-rate...), in both `--name VALUE` and
// `--name=VALUE` form, so a new setting needs no code here. Parsing only
// checks the shape of the line; values are validated when ResolveConfig
// applies them, after the config file, so the command line always wins.

#ifndef BLOOMGATE_CONFIG_COMMAND_LINE_H_
#define BLOOMGATE_CONFIG_COMMAND_LINE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/server_config.h"

namespace bloomgate {

struct CommandLine {
  std::string config_path;  // --config FILE; empty = no file
  bool show_help = false;   // -h, --help
  bool show_version = false;  // --version
};

// (canonical setting name, value) pairs in command-line order; a later pair
// for the same setting wins, as in redis-server.
using ConfigOverrides = std::vector<std::pair<std::string, std::string>>;

// Fills *cmd and *overrides (both reset first) from argv[1..argc-1]. Returns
// false with *error set for an unknown flag, a flag missing its value, a
// value given to --help/--version, a positional argument or a second
// --config. A value is taken verbatim even if it starts with '-' (a password
// may), so `--requirepass --port` sets the password to "--port".
bool ParseCommandLine(int argc, char** argv, CommandLine* cmd,
                      ConfigOverrides* overrides, std::string* error);

// Loads cmd.config_path (if set) into *config, then applies the overrides
// with SetConfigValue. On failure returns false with *error naming the file
// or the flag ("option --port: argument must be between 1 and 65535
// inclusive") and leaves *config unchanged.
bool ResolveConfig(const CommandLine& cmd, const ConfigOverrides& overrides,
                   ServerConfig* config, std::string* error);

// The --help text: usage, the fixed flags, then one line per table row with
// its value shape, description, default (from a default ServerConfig) and
// whether CONFIG SET can change it.
// `modes_usage`, if given, is shown after the usage line (the binary's
// offline sub-commands, which config/ does not know).
std::string CommandLineHelp(std::string_view modes_usage = {});

// The candidate closest to `word` in edit distance (after '_' -> '-', so
// --max_filter_memory finds max-filter-memory), or "" when none is close:
// within a third of the word's length, and at least 2 edits allowed. For
// "did you mean" hints on a mistyped option.
std::string SuggestClosest(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace bloomgate

#endif  // BLOOMGATE_CONFIG_COMMAND_LINE_H_
