// The parameter table: one row per setting of ServerConfig, Redis style.
//
// A row's name is at once the YAML key, the CONFIG GET/SET name and the
// --flag, so the three can never disagree. The config-file loader, the
// command line, --help, CONFIG GET/SET and the example file's test all walk
// this table; adding a setting means adding a field to ServerConfig and one
// row here (and a line in bloomgate.example.yaml, which a test enforces).

#ifndef BLOOMGATE_CONFIG_CONFIG_PARAMS_H_
#define BLOOMGATE_CONFIG_CONFIG_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/server_config.h"

namespace bloomgate {

// What kind of text a parameter takes. Only the loader needs it today (a
// YAML list is accepted for kAddressList alone), but it also tells a reader
// of the table which parser a row uses.
enum class ConfigType {
  kInteger,      // decimal digits, range-checked
  kMemory,       // bytes with an optional Redis unit: 1k, 1kb, 1m, 1mb, 1g, 1gb
  kRatio,        // a decimal number, range-checked
  kEnum,         // one of a fixed list of words, case-insensitive
  kString,       // any text, stored as given
  kAddressList,  // IP literals separated by spaces and/or commas
};

struct ConfigParam {
  // Lowercase, dash-separated; the YAML key, CONFIG name and --flag.
  std::string_view name;
  // One line for --help; the default is not repeated here but printed from
  // a default-constructed ServerConfig, so the two cannot drift apart.
  std::string_view description;
  // False for settings the server only reads at start-up (listening sockets,
  // thread pool, log sink): CONFIG SET must refuse them. The file and the
  // command line may set every row.
  bool runtime_settable;
  ConfigType type;
  // Shape of the value in --help, e.g. "<1-65535>".
  std::string_view value_hint;
  // Parses `value` and stores it. On failure returns false, leaves *config
  // untouched and sets *error to a Redis-style message without the name
  // (the caller adds the name, as CONFIG SET and the loader word it
  // differently).
  bool (*set)(ServerConfig* config, std::string_view value, std::string* error);
  // The current value as CONFIG GET shows it; set(get(c)) changes nothing.
  std::string (*get)(const ServerConfig& config);
};

// Every row, in the order --help and CONFIG GET * list them.
const std::vector<ConfigParam>& AllConfigParams();

// The row called `name`, ignoring ASCII case; nullptr if there is none.
const ConfigParam* FindConfigParam(std::string_view name);

// Validates and applies one textual value. On failure returns false, sets
// *error and leaves *config unchanged. The messages are Redis's where Redis
// has one, without the "CONFIG SET failed (possibly related to argument
// 'x') - " prefix that the server adds:
//   "argument must be between 1 and 1000000 inclusive"
//   "argument must be an integer between 1 and 65535 inclusive"
//   "argument must be a memory value" (+ " between A and B inclusive" when
//       the setting has bounds)
//   "argument must be a number between 0 and 1 exclusive"
//   "invalid loglevel 'x': must be one of trace, debug, info, warn, error, critical, off,
//       verbose, notice, warning, nothing"
//   "unknown config parameter 'x'"
// Every row may be set here, start-up-only ones included (the loader and the
// command line use this too); refusing those at runtime is the server's job,
// through ConfigParam::runtime_settable.
bool SetConfigValue(ServerConfig* config, std::string_view name,
                    std::string_view value, std::string* error);

// The value in Redis's CONFIG GET form: memory as a plain byte count, bind
// space-separated, doubles in their shortest round-trip form ("0.01").
// Returns "" for an unknown name; call FindConfigParam first to tell an
// unknown name from an empty value.
std::string GetConfigValue(const ServerConfig& config, std::string_view name);

// Parses a Redis memory value: decimal digits with an optional unit, ASCII
// case ignored: b = 1, k = 1000, kb = 1024, m = 1000^2, mb = 1024^2,
// g = 1000^3, gb = 1024^3. nullopt for anything else (a sign, a fraction,
// spaces, an unknown unit) and for results that overflow 64 bits.
std::optional<uint64_t> ParseMemoryValue(std::string_view text);

// The spdlog level name for a `loglevel` value: spdlog's own names pass
// through; Redis's verbose -> debug, notice -> info, warning -> warn,
// nothing -> off.
std::string_view LogLevelForSpdlog(std::string_view loglevel);
// tls-protocols: a bit per protocol version a TLS listener accepts.
enum TlsProtocol : unsigned {
  kTlsV1 = 1u << 0,
  kTlsV1_1 = 1u << 1,
  kTlsV1_2 = 1u << 2,
  kTlsV1_3 = 1u << 3,
};
// Parses tls-protocols: protocol names separated by spaces, ASCII case
// ignored; empty = TLSv1.2 and TLSv1.3 (Redis's default). nullopt for an
// unknown name.
std::optional<unsigned> ParseTlsProtocols(std::string_view text);

// appendfsync as CONFIG GET and INFO show it: "always", "everysec", "no".
std::string FormatAppendFsync(ServerConfig::AppendFsync mode);
std::string FormatIoBackend(ServerConfig::IoBackend backend);

}  // namespace bloomgate

#endif  // BLOOMGATE_CONFIG_CONFIG_PARAMS_H_
