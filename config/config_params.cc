#include "config/config_params.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <system_error>
#include <type_traits>

#include "config/bind_address.h"
#include "config/keyspace_events.h"

namespace bloomgate {
namespace {

// --- Bounds, each with where it comes from ---------------------------------

// One io_context per thread; more threads than cores only adds context
// switches. The cap exists so that a typo (threads: 40000) fails at start-up
// instead of creating tens of thousands of threads. 1024 is above the
// largest two-socket servers sold today (2 x 192 cores with SMT = 768
// hardware threads).
constexpr uint64_t kMaxThreads = 1024;
// Redis's maxclients has no fixed top (it is limited by the fd limit); a
// million connections is far beyond what one process serves, so a larger
// value is almost certainly a typo.
constexpr uint64_t kMaxClients = 1'000'000;
// Redis: proto-max-bulk-len may not go below 1mb.
constexpr uint64_t kMinProtoMaxBulkLen = 1ull << 20;
// Redis allows up to LLONG_MAX, but a bulk string is buffered whole before a
// command runs; 4 GB is already 8x Redis's own default and far above any
// item or BF.LOADCHUNK chunk a client has reason to send.
constexpr uint64_t kMaxProtoMaxBulkLen = 4ull << 30;
// 1 KiB is what Redis's default filter and its first two expansions need
// with the textbook sizing -n*ln(p)/ln(2)^2 bits: 100 items at 1% = 120
// bytes, 200 at 0.5% = 276, 400 at 0.25% = 624; 1019 bytes in all. A lower
// cap would make ordinary use of default filters fail.
constexpr uint64_t kMinFilterMemory = 1ull << 10;
// 1 TiB: more RAM than any machine we expect to run on, so a larger cap
// can only be a slip of the unit (4096gb meant as 4096mb).
constexpr uint64_t kMaxFilterMemory = 1ull << 40;
// The output limit is compared with pending reply bytes, so any positive
// value works; below a few KiB a client would pause after nearly every
// reply, so 1 KiB is the floor. The top matches kMaxFilterMemory's reasoning.
constexpr uint64_t kMinOutputBufferLimit = 1ull << 10;
constexpr uint64_t kMaxOutputBufferLimit = 1ull << 40;
// Redis: timeout is an int of seconds.
constexpr uint64_t kMaxTimeout = std::numeric_limits<int32_t>::max();
// Redis 8 / RedisBloom src/config.c: bf-initial-size in [1, 2^30],
// bf-expansion-factor in [0, 32768], bf-error-rate in (0, 1) with anything
// above 0.25 stored as 0.25 (BF_ERROR_RATE_CAP): a Bloom filter at a 25%
// false-positive rate already has only 2 hash functions.
constexpr uint64_t kMaxBfInitialSize = 1ull << 30;
constexpr uint64_t kMaxBfExpansionFactor = 32768;
constexpr double kBfErrorRateCap = 0.25;
// A TLS handshake is two round trips and one signature (~1 ms for RSA-2048);
// 100 ms still allows a 40 ms RTT, and ten minutes is beyond any real link,
// so a larger value is a slip of the unit (seconds meant as milliseconds).
constexpr uint64_t kMinTlsHandshakeTimeoutMs = 100;
constexpr uint64_t kMaxTlsHandshakeTimeoutMs = 600'000;
// ~10 series per filter: 10,000 filters make a ~100,000-line scrape, past
// what one Prometheus target is meant to carry.
constexpr uint64_t kMaxMetricsTopFilters = 10'000;
// Redis: repl-backlog-size may not go below 16 KB (CONFIG_REPL_BACKLOG_MIN_SIZE).
constexpr uint64_t kMinReplBacklogSize = 16ull << 10;
// Redis: CONFIG_BINDADDR_MAX.
constexpr size_t kMaxBindAddresses = 16;

// spdlog's names, then Redis's (redis.conf's `loglevel`), so a redis.conf
// line or a CONFIG SET written for Redis works unchanged; LogLevelForSpdlog
// maps Redis's onto spdlog's.
constexpr std::array<std::string_view, 11> kLogLevels = {
    "trace", "debug", "info", "warn", "error", "critical", "off",
    "verbose", "notice", "warning", "nothing"};

// --- Small text helpers -----------------------------------------------------

char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

std::string RangeText(uint64_t min, uint64_t max) {
  return "between " + std::to_string(min) + " and " + std::to_string(max) +
         " inclusive";
}

// --- Parsers shared by the rows ---------------------------------------------

// Decimal digits only, like Redis's string2ll: no sign, spaces or "0x". A
// leading '-' is parsed so that "-1" gets the range message, not "must be an
// integer".
template <typename T>
bool SetInteger(std::string_view value, uint64_t min, uint64_t max, T* out,
                std::string* error) {
  static_assert(std::is_unsigned_v<T>);
  const bool negative = !value.empty() && value.front() == '-';
  std::string_view digits = negative ? value.substr(1) : value;
  uint64_t parsed = 0;
  auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), parsed);
  // from_chars itself refuses '+' and spaces; requiring it to consume
  // everything refuses trailing junk ("6379.0", "63 79").
  const bool all_digits =
      !digits.empty() && end == digits.data() + digits.size();
  if (!all_digits || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    *error = "argument must be an integer " + RangeText(min, max);
    return false;
  }
  if (negative || ec == std::errc::result_out_of_range || parsed < min ||
      parsed > max) {
    *error = "argument must be " + RangeText(min, max);
    return false;
  }
  *out = static_cast<T>(parsed);
  return true;
}

bool SetMemory(std::string_view value, uint64_t min, uint64_t max,
               uint64_t* out, std::string* error) {
  const bool bounded = min != 0 || max != std::numeric_limits<uint64_t>::max();
  std::optional<uint64_t> bytes = ParseMemoryValue(value);
  if (!bytes) {
    *error = "argument must be a memory value";
    if (bounded) error->append(" ").append(RangeText(min, max));
    return false;
  }
  if (*bytes < min || *bytes > max) {
    *error = "argument must be " + RangeText(min, max);
    return false;
  }
  *out = *bytes;
  return true;
}

bool SetLogLevel(ServerConfig* config, std::string_view value,
                 std::string* error) {
  for (std::string_view level : kLogLevels) {
    if (EqualsIgnoreCase(value, level)) {
      config->loglevel = std::string(level);
      return true;
    }
  }
  std::string allowed;
  for (std::string_view level : kLogLevels) {
    if (!allowed.empty()) allowed += ", ";
    allowed += level;
  }
  *error = "invalid loglevel '" + std::string(value) + "': must be one of " +
           allowed;
  return false;
}

// A signed decimal in [min, max], for the settings where -1 means "off"
// (slowlog-log-slower-than). Redis's wording for an out-of-range value.
bool SetSignedInteger(std::string_view value, int64_t min, int64_t max, int64_t* out,
                      std::string* error) {
  int64_t parsed = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || end != value.data() + value.size() ||
      (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    *error = "argument couldn't be parsed into an integer";
    return false;
  }
  if (ec == std::errc::result_out_of_range || parsed < min || parsed > max) {
    *error = "argument must be between " + std::to_string(min) + " and " +
             std::to_string(max) + " inclusive";
    return false;
  }
  *out = parsed;
  return true;
}

bool SetBfErrorRate(ServerConfig* config, std::string_view value,
                    std::string* error) {
  double rate = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(),
                                   rate, std::chars_format::general);
  if (value.empty() || ec != std::errc() ||
      end != value.data() + value.size()) {
    *error = "argument must be a number between 0 and 1 exclusive";
    return false;
  }
  // Written as !(in range) so that NaN, which compares false, is refused.
  if (!(rate > 0.0 && rate < 1.0)) {
    *error = "argument must be between 0 and 1 exclusive";
    return false;
  }
  config->bf_error_rate = rate > kBfErrorRateCap ? kBfErrorRateCap : rate;
  return true;
}

// Redis's bind words (config/bind_address.h: IP literals, *, ::*, localhost,
// a leading - for an optional one), checked here so a typo fails when the
// file is read rather than when the listener opens.
bool SetBind(ServerConfig* config, std::string_view value,
             std::string* error) {
  std::vector<std::string> addresses;
  size_t pos = 0;
  while (pos < value.size()) {
    const size_t start = value.find_first_not_of(" \t,", pos);
    if (start == std::string_view::npos) break;
    size_t stop = value.find_first_of(" \t,", start);
    if (stop == std::string_view::npos) stop = value.size();
    addresses.emplace_back(value.substr(start, stop - start));
    pos = stop;
  }
  if (addresses.empty()) {
    *error = "argument must list at least one address";
    return false;
  }
  if (addresses.size() > kMaxBindAddresses) {
    *error = "argument must list at most " +
             std::to_string(kMaxBindAddresses) + " addresses";
    return false;
  }
  for (const std::string& address : addresses) {
    if (!ExpandBindAddress(address)) {
      *error = "invalid bind address '" + address +
               "': must be an IPv4 or IPv6 address, *, ::* or localhost, optionally "
               "after a - (skipped where the host lacks it)";
      return false;
    }
  }
  config->bind = std::move(addresses);
  return true;
}

// The words of `value` between runs of spaces and tabs.
std::vector<std::string_view> SpaceSeparatedWords(std::string_view value) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < value.size()) {
    const size_t start = value.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    size_t stop = value.find_first_of(" \t", start);
    if (stop == std::string_view::npos) stop = value.size();
    words.push_back(value.substr(start, stop - start));
    pos = stop;
  }
  return words;
}

// latency-tracking-info-percentiles: numbers in [0, 100] separated by
// spaces, "" for none, as Redis 7 takes them.
bool SetPercentiles(ServerConfig* config, std::string_view value, std::string* error) {
  std::vector<double> percentiles;
  for (std::string_view word : SpaceSeparatedWords(value)) {
    double percentile = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), percentile,
                                     std::chars_format::fixed);
    // Written as !(in range) so that NaN is refused too.
    if (ec != std::errc() || end != word.data() + word.size() ||
        !(percentile >= 0.0 && percentile <= 100.0)) {
      *error = "argument must be percentiles between 0 and 100 separated by spaces";
      return false;
    }
    percentiles.push_back(percentile);
  }
  config->latency_tracking_info_percentiles = std::move(percentiles);
  return true;
}

// Redis's "save" syntax: pairs of "<seconds> <changes>", or "" for none.
bool SetSavePoints(ServerConfig* config, std::string_view value, std::string* error) {
  const std::vector<std::string_view> words = SpaceSeparatedWords(value);
  if (words.size() % 2 != 0) {
    *error = "Invalid save parameters";
    return false;
  }
  std::vector<ServerConfig::SavePoint> points;
  for (size_t i = 0; i < words.size(); i += 2) {
    ServerConfig::SavePoint point;
    std::string ignored;
    if (!SetInteger(words[i], 1, kMaxTimeout, &point.seconds, &ignored) ||
        !SetInteger(words[i + 1], 1, std::numeric_limits<int64_t>::max(), &point.changes,
                    &ignored)) {
      *error = "Invalid save parameters";
      return false;
    }
    points.push_back(point);
  }
  config->save = std::move(points);
  return true;
}

std::string FormatSavePoints(const std::vector<ServerConfig::SavePoint>& points) {
  std::string text;
  for (const ServerConfig::SavePoint& point : points) {
    if (!text.empty()) text += ' ';
    text += std::to_string(point.seconds) + " " + std::to_string(point.changes);
  }
  return text;
}

bool SetYesNo(std::string_view value, bool* out, std::string* error) {
  if (EqualsIgnoreCase(value, "yes")) {
    *out = true;
  } else if (EqualsIgnoreCase(value, "no")) {
    *out = false;
  } else {
    *error = "argument must be 'yes' or 'no'";
    return false;
  }
  return true;
}

// "" (a primary) or "<host> <port>", the port in [1, 65535].
bool SetReplicaOf(std::string_view value, std::string* out, std::string* error) {
  if (value.empty()) {
    out->clear();
    return true;
  }
  const size_t space = value.find(' ');
  uint16_t port = 0;
  std::string port_error;
  if (space == 0 || space == std::string_view::npos ||
      !SetInteger(value.substr(space + 1), 1, 65535, &port, &port_error)) {
    *error = "argument must be \"<host> <port>\" with a port between 1 and 65535";
    return false;
  }
  *out = std::string(value);
  return true;
}

bool SetIoBackend(ServerConfig* config, std::string_view value, std::string* error) {
  using B = ServerConfig::IoBackend;
  if (EqualsIgnoreCase(value, "auto")) {
    config->io_backend = B::kAuto;
  } else if (EqualsIgnoreCase(value, "epoll")) {
    config->io_backend = B::kEpoll;
  } else if (EqualsIgnoreCase(value, "io_uring")) {
    config->io_backend = B::kIoUring;
  } else {
    *error = "argument(s) must be one of the following: auto, epoll, io_uring";
    return false;
  }
  return true;
}

bool SetAppendFsync(ServerConfig* config, std::string_view value, std::string* error) {
  using F = ServerConfig::AppendFsync;
  if (EqualsIgnoreCase(value, "always")) {
    config->appendfsync = F::kAlways;
  } else if (EqualsIgnoreCase(value, "everysec")) {
    config->appendfsync = F::kEverySec;
  } else if (EqualsIgnoreCase(value, "no")) {
    config->appendfsync = F::kNo;
  } else {
    *error = "argument(s) must be one of the following: always, everysec, no";
    return false;
  }
  return true;
}

bool SetTlsAuthClients(ServerConfig* config, std::string_view value, std::string* error) {
  using A = ServerConfig::TlsAuthClients;
  if (EqualsIgnoreCase(value, "yes")) {
    config->tls_auth_clients = A::kYes;
  } else if (EqualsIgnoreCase(value, "no")) {
    config->tls_auth_clients = A::kNo;
  } else if (EqualsIgnoreCase(value, "optional")) {
    config->tls_auth_clients = A::kOptional;
  } else {
    *error = "argument(s) must be one of the following: no, yes, optional";
    return false;
  }
  return true;
}

std::string FormatTlsAuthClients(ServerConfig::TlsAuthClients mode) {
  switch (mode) {
    case ServerConfig::TlsAuthClients::kNo:
      return "no";
    case ServerConfig::TlsAuthClients::kYes:
      return "yes";
    case ServerConfig::TlsAuthClients::kOptional:
      return "optional";
  }
  return "yes";
}

// Checked here, not only when the TLS context is built, so that a typo in
// the file or on the command line fails at start-up even with TLS off.
bool SetTlsProtocols(ServerConfig* config, std::string_view value, std::string* error) {
  if (!ParseTlsProtocols(value)) {
    *error = "argument must list protocols among TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3";
    return false;
  }
  config->tls_protocols = std::string(value);
  return true;
}

}  // namespace

std::optional<unsigned> ParseTlsProtocols(std::string_view text) {
  unsigned protocols = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = text.find_first_not_of(' ', pos);
    if (start == std::string_view::npos) break;
    size_t stop = text.find(' ', start);
    if (stop == std::string_view::npos) stop = text.size();
    const std::string_view word = text.substr(start, stop - start);
    if (EqualsIgnoreCase(word, "TLSv1")) {
      protocols |= kTlsV1;
    } else if (EqualsIgnoreCase(word, "TLSv1.1")) {
      protocols |= kTlsV1_1;
    } else if (EqualsIgnoreCase(word, "TLSv1.2")) {
      protocols |= kTlsV1_2;
    } else if (EqualsIgnoreCase(word, "TLSv1.3")) {
      protocols |= kTlsV1_3;
    } else {
      return std::nullopt;
    }
    pos = stop;
  }
  return protocols == 0 ? (kTlsV1_2 | kTlsV1_3) : protocols;
}

std::string FormatIoBackend(ServerConfig::IoBackend backend) {
  switch (backend) {
    case ServerConfig::IoBackend::kAuto:
      return "auto";
    case ServerConfig::IoBackend::kEpoll:
      return "epoll";
    case ServerConfig::IoBackend::kIoUring:
      return "io_uring";
  }
  return "auto";
}

std::string FormatAppendFsync(ServerConfig::AppendFsync mode) {
  switch (mode) {
    case ServerConfig::AppendFsync::kAlways:
      return "always";
    case ServerConfig::AppendFsync::kEverySec:
      return "everysec";
    case ServerConfig::AppendFsync::kNo:
      return "no";
  }
  return "everysec";
}

namespace {

// A file name inside `dir`: no directory part, so a CONFIG SET can never
// make the server write outside its data directory (Redis 7 refuses
// path separators in dbfilename for the same reason).
// A path setting never holds a control byte: a NUL would cut the name short
// where the operating system reads it (CONFIG SET dbfilename "dump.bgs\0x"
// saved to dump.bgs while INFO and CONFIG GET named another file), and CR or
// LF would break every log line and reply that shows it.
bool HasControlByte(std::string_view value) {
  return std::any_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

bool SetPath(std::string_view value, std::string* out, std::string* error) {
  if (HasControlByte(value)) {
    *error = "path can't contain control characters";
    return false;
  }
  *out = std::string(value);
  return true;
}

bool SetFileName(std::string_view value, std::string* out, std::string* error) {
  if (HasControlByte(value)) {
    *error = "path can't contain control characters";
    return false;
  }
  if (value.empty() || value.find('/') != std::string_view::npos || value == "." ||
      value == "..") {
    *error = "dbfilename can't be a path, just a filename";
    return false;
  }
  *out = std::string(value);
  return true;
}

// --- Formatters --------------------------------------------------------------

std::string FormatDouble(double value) {
  // The shortest digits that read back to the same double, written without
  // an exponent as CONFIG GET users expect: 0.01 -> "0.01" (not
  // "0.010000000000000000208"), 0.0001 -> "0.0001" (not "1e-04"). The
  // longest such text is 326 chars ("0.", 323 zeros and "5" for the smallest
  // subnormal); DBL_MAX needs 309.
  std::array<char, 400> buffer;
  const std::to_chars_result result =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                    std::chars_format::fixed);
  return std::string(buffer.data(), result.ptr);
}

std::string FormatPercentiles(const std::vector<double>& percentiles) {
  std::string text;
  for (double percentile : percentiles) {
    if (!text.empty()) text += ' ';
    text += FormatDouble(percentile);
  }
  return text;
}

std::string JoinBind(const std::vector<std::string>& addresses) {
  std::string joined;
  for (const std::string& address : addresses) {
    if (!joined.empty()) joined += ' ';
    joined += address;
  }
  return joined;
}

const std::vector<ConfigParam>& BuildTable() {
  using C = ServerConfig;
  using S = std::string;
  using V = std::string_view;
  static const std::vector<ConfigParam> kTable = {
      {"bind",
       "addresses to listen on, space- or comma-separated: IP literals, *, ::*, localhost; "
       "-addr = optional",
       /*runtime_settable=*/false, ConfigType::kAddressList, "<addr[,addr...]>",
       [](C* c, V v, S* e) { return SetBind(c, v, e); },
       [](const C& c) { return JoinBind(c.bind); }},
      {"port", "TCP port to listen on; 0 = no plain TCP (serve TLS only)",
       /*runtime_settable=*/false, ConfigType::kInteger, "<0-65535>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, 65535, &c->port, e); },
       [](const C& c) { return std::to_string(c.port); }},
      // One keyspace, database 0 (SELECT refuses any other index): 1 rather
      // than Redis's 16, so tools that walk db0..db<databases-1> (the
      // Prometheus exporter's per-database series) see no empty ones.
      {"databases", "databases served: 1 (database 0; SELECT takes only 0)",
       /*runtime_settable=*/false, ConfigType::kInteger, "1",
       [](C*, V v, S* e) {
         if (v == "1") return true;
         *e = "argument must be 1: Bloomgate serves database 0 only";
         return false;
       },
       [](const C&) { return std::string("1"); }},
      {"threads", "I/O threads, one event loop each; 0 = one per core",
       /*runtime_settable=*/false, ConfigType::kInteger, "<0-1024>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, kMaxThreads, &c->threads, e);
       },
       [](const C& c) { return std::to_string(c.threads); }},
      {"io-backend", "socket I/O of the event loops: auto, epoll or io_uring",
       /*runtime_settable=*/false, ConfigType::kEnum, "<auto|epoll|io_uring>",
       [](C* c, V v, S* e) { return SetIoBackend(c, v, e); },
       [](const C& c) { return FormatIoBackend(c.io_backend); }},
      {"loglevel",
       "log verbosity: trace, debug, info, warn, error, critical or off",
       /*runtime_settable=*/true, ConfigType::kEnum, "<level>",
       [](C* c, V v, S* e) { return SetLogLevel(c, v, e); },
       [](const C& c) { return c.loglevel; }},
      {"logfile", "file to append the log to; empty = stderr",
       /*runtime_settable=*/false, ConfigType::kString, "<path>",
       [](C* c, V v, S* e) { return SetPath(v, &c->logfile, e); },
       [](const C& c) { return c.logfile; }},
      {"requirepass", "password clients must AUTH with; empty = no AUTH",
       /*runtime_settable=*/true, ConfigType::kString, "<password>",
       [](C* c, V v, S*) {
         c->requirepass = std::string(v);
         return true;
       },
       [](const C& c) { return c.requirepass; }},
      // Redis 7's setting and its refusal text.
      {"acl-pubsub-default", "channels a new ACL user starts with: resetchannels (none) or "
       "allchannels", /*runtime_settable=*/true, ConfigType::kEnum, "<allchannels|resetchannels>",
       [](C* c, V v, S* e) {
         if (EqualsIgnoreCase(v, "allchannels") || EqualsIgnoreCase(v, "resetchannels")) {
           c->acl_pubsub_default_all_channels = EqualsIgnoreCase(v, "allchannels");
           return true;
         }
         *e = "argument(s) must be one of the following: allchannels, resetchannels";
         return false;
       },
       [](const C& c) {
         return std::string(c.acl_pubsub_default_all_channels ? "allchannels" : "resetchannels");
       }},
      {"acllog-max-len", "entries ACL LOG keeps; CONFIG SET drops the oldest beyond it",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-2147483647>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, kMaxTimeout, &c->acllog_max_len, e); },
       [](const C& c) { return std::to_string(c.acllog_max_len); }},
      // Redis 7's setting, immutable as there.
      {"enable-debug-command", "who may run DEBUG: no, local (127.0.0.1 and ::1) or yes",
       /*runtime_settable=*/false, ConfigType::kEnum, "no|local|yes",
       [](C* c, V v, S* e) {
         for (std::string_view allowed : {"no", "local", "yes"}) {
           if (EqualsIgnoreCase(v, allowed)) {
             c->enable_debug_command = std::string(allowed);
             return true;
           }
         }
         *e = "argument(s) must be one of the following: no, yes, local";
         return false;
       },
       [](const C& c) { return c.enable_debug_command; }},
      {"protected-mode",
       "without a password, serve only clients connecting from 127.0.0.1 or ::1",
       /*runtime_settable=*/true, ConfigType::kEnum, "yes|no",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->protected_mode, e); },
       [](const C& c) { return std::string(c.protected_mode ? "yes" : "no"); }},
      {"maxclients", "most clients connected at once; more are refused",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-1000000>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 1, kMaxClients, &c->maxclients, e);
       },
       [](const C& c) { return std::to_string(c.maxclients); }},
      {"maxmemory",
       "bytes all filters together may use; 0 = 3/4 of physical RAM",
       /*runtime_settable=*/true, ConfigType::kMemory, "<bytes>",
       [](C* c, V v, S* e) {
         return SetMemory(v, 0, std::numeric_limits<uint64_t>::max(),
                          &c->maxmemory, e);
       },
       [](const C& c) { return std::to_string(c.maxmemory); }},
      // What a filter server can answer for Redis's memory policy: a write
      // past maxmemory is refused with -OOM, a filter is never evicted.
      {"maxmemory-policy", "what happens at maxmemory: noeviction (writes refused with -OOM)",
       /*runtime_settable=*/true, ConfigType::kEnum, "noeviction",
       [](C*, V v, S* e) {
         if (EqualsIgnoreCase(v, "noeviction")) return true;
         *e = "argument must be 'noeviction': filters are never evicted, a write past "
              "maxmemory is refused with -OOM";
         return false;
       },
       [](const C&) { return std::string("noeviction"); }},
      {"max-filter-memory", "bytes one filter may grow to, all layers counted",
       /*runtime_settable=*/true, ConfigType::kMemory, "<1kb-1024gb>",
       [](C* c, V v, S* e) {
         return SetMemory(v, kMinFilterMemory, kMaxFilterMemory,
                          &c->max_filter_memory, e);
       },
       [](const C& c) { return std::to_string(c.max_filter_memory); }},
      {"proto-max-bulk-len", "largest bulk string a client may send",
       /*runtime_settable=*/true, ConfigType::kMemory, "<1mb-4gb>",
       [](C* c, V v, S* e) {
         return SetMemory(v, kMinProtoMaxBulkLen, kMaxProtoMaxBulkLen,
                          &c->proto_max_bulk_len, e);
       },
       [](const C& c) { return std::to_string(c.proto_max_bulk_len); }},
      {"client-output-buffer-limit",
       "pending reply bytes after which a client is not read until they drain",
       /*runtime_settable=*/true, ConfigType::kMemory, "<1kb-1024gb>",
       [](C* c, V v, S* e) {
         return SetMemory(v, kMinOutputBufferLimit, kMaxOutputBufferLimit,
                          &c->client_output_buffer_limit, e);
       },
       [](const C& c) { return std::to_string(c.client_output_buffer_limit); }},
      // Redis's class letters (config/keyspace_events.h) and its error text.
      {"notify-keyspace-events",
       "keyspace events published on __keyspace@0__ / __keyevent@0__; \"\" = none",
       /*runtime_settable=*/true, ConfigType::kString, "<K|E|A|g|$|l|s|h|z|x|e|t|m|d|n...>",
       [](C* c, V v, S* e) {
         std::optional<uint32_t> classes = ParseKeyspaceEvents(v);
         if (!classes) {
           *e = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
           return false;
         }
         c->notify_keyspace_events = *classes;
         return true;
       },
       [](const C& c) { return KeyspaceEventsText(c.notify_keyspace_events); }},
      {"timeout", "seconds an idle client is kept; 0 = forever",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-2147483647>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, kMaxTimeout, &c->timeout, e);
       },
       [](const C& c) { return std::to_string(c.timeout); }},
      // Redis's three observability settings, with its ranges and defaults.
      {"slowlog-log-slower-than",
       "commands taking at least this many microseconds enter SLOWLOG; -1 = none, 0 = all",
       /*runtime_settable=*/true, ConfigType::kInteger, "<-1-9223372036854775807>",
       [](C* c, V v, S* e) {
         return SetSignedInteger(v, -1, std::numeric_limits<int64_t>::max(),
                                 &c->slowlog_log_slower_than, e);
       },
       [](const C& c) { return std::to_string(c.slowlog_log_slower_than); }},
      {"slowlog-max-len", "entries SLOWLOG keeps; the oldest go first",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-9223372036854775807>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, std::numeric_limits<int64_t>::max(), &c->slowlog_max_len, e);
       },
       [](const C& c) { return std::to_string(c.slowlog_max_len); }},
      {"latency-monitor-threshold",
       "events taking at least this many milliseconds enter LATENCY; 0 = off",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-9223372036854775807>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, std::numeric_limits<int64_t>::max(),
                           &c->latency_monitor_threshold, e);
       },
       [](const C& c) { return std::to_string(c.latency_monitor_threshold); }},
      {"latency-tracking", "keep each command's latency histogram for INFO latencystats",
       /*runtime_settable=*/true, ConfigType::kEnum, "yes|no",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->latency_tracking, e); },
       [](const C& c) { return std::string(c.latency_tracking ? "yes" : "no"); }},
      {"latency-tracking-info-percentiles",
       "the percentiles INFO latencystats shows, space-separated; empty = none",
       /*runtime_settable=*/true, ConfigType::kString, "<p [p ...]>",
       [](C* c, V v, S* e) { return SetPercentiles(c, v, e); },
       [](const C& c) { return FormatPercentiles(c.latency_tracking_info_percentiles); }},
      {"bf-error-rate",
       "false-positive rate of filters created implicitly; above 0.25 is "
       "stored as 0.25",
       /*runtime_settable=*/true, ConfigType::kRatio, "<rate in (0,1)>",
       [](C* c, V v, S* e) { return SetBfErrorRate(c, v, e); },
       [](const C& c) { return FormatDouble(c.bf_error_rate); }},
      {"bf-initial-size", "capacity of filters created implicitly",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-1073741824>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 1, kMaxBfInitialSize, &c->bf_initial_size, e);
       },
       [](const C& c) { return std::to_string(c.bf_initial_size); }},
      {"bf-expansion-factor",
       "growth factor of filters created implicitly; 0 = non-scaling",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-32768>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, kMaxBfExpansionFactor,
                           &c->bf_expansion_factor, e);
       },
       [](const C& c) { return std::to_string(c.bf_expansion_factor); }},
      {"cbf-counter-bits", "counter width of counting Bloom filters created implicitly",
       /*runtime_settable=*/true, ConfigType::kEnum, "<4|8>",
       [](C* c, V v, S* e) {
         if (v != "4" && v != "8") {
           *e = "argument must be 4 or 8";
           return false;
         }
         c->cbf_counter_bits = v == "4" ? 4 : 8;
         return true;
       },
       [](const C& c) { return std::to_string(c.cbf_counter_bits); }},
      {"cf-bucket-size", "fingerprints per bucket of cuckoo filters created implicitly",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-255>",
       [](C* c, V v, S* e) { return SetInteger(v, 1, 255, &c->cf_bucket_size, e); },
       [](const C& c) { return std::to_string(c.cf_bucket_size); }},
      {"cf-initial-size", "capacity of cuckoo filters created implicitly",
       /*runtime_settable=*/true, ConfigType::kInteger, "<2-1073741824>",
       [](C* c, V v, S* e) { return SetInteger(v, 2, kMaxBfInitialSize, &c->cf_initial_size, e); },
       [](const C& c) { return std::to_string(c.cf_initial_size); }},
      {"cf-max-iterations", "cuckoo kicks before a cuckoo filter grows",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-65535>",
       [](C* c, V v, S* e) { return SetInteger(v, 1, 65535, &c->cf_max_iterations, e); },
       [](const C& c) { return std::to_string(c.cf_max_iterations); }},
      {"cf-expansion-factor",
       "growth factor of cuckoo filters created implicitly; 0 = non-scaling",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-32768>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, kMaxBfExpansionFactor, &c->cf_expansion_factor, e);
       },
       [](const C& c) { return std::to_string(c.cf_expansion_factor); }},
      {"cf-max-expansions", "sub-filters a cuckoo filter may have",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-65536>",
       [](C* c, V v, S* e) { return SetInteger(v, 1, 65536, &c->cf_max_expansions, e); },
       [](const C& c) { return std::to_string(c.cf_max_expansions); }},
      {"dir", "directory of the snapshot and the append-only log",
       /*runtime_settable=*/false, ConfigType::kString, "<path>",
       [](C* c, V v, S* e) {
         if (v.empty()) {
           *e = "argument must be a directory";
           return false;
         }
         return SetPath(v, &c->dir, e);
       },
       [](const C& c) { return c.dir; }},
      {"dbfilename", "snapshot file name inside dir",
       /*runtime_settable=*/true, ConfigType::kString, "<name>",
       [](C* c, V v, S* e) { return SetFileName(v, &c->dbfilename, e); },
       [](const C& c) { return c.dbfilename; }},
      {"save", "snapshot after <seconds> if <changes> writes, as pairs; \"\" = never",
       /*runtime_settable=*/true, ConfigType::kString, "\"<seconds> <changes> ...\"",
       [](C* c, V v, S* e) { return SetSavePoints(c, v, e); },
       [](const C& c) { return FormatSavePoints(c.save); }},
      {"appendonly", "log every acknowledged write to the append-only log",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->appendonly, e); },
       [](const C& c) { return std::string(c.appendonly ? "yes" : "no"); }},
      {"appendfsync", "when the log is fsynced: always, everysec or no",
       /*runtime_settable=*/true, ConfigType::kEnum, "<always|everysec|no>",
       [](C* c, V v, S* e) { return SetAppendFsync(c, v, e); },
       [](const C& c) { return FormatAppendFsync(c.appendfsync); }},
      {"appendfilename", "base name of the append-only log files inside dir",
       /*runtime_settable=*/false, ConfigType::kString, "<name>",
       [](C* c, V v, S* e) { return SetFileName(v, &c->appendfilename, e); },
       [](const C& c) { return c.appendfilename; }},
      {"tls-port", "TLS port to listen on; 0 = no TLS",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-65535>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, 65535, &c->tls_port, e); },
       [](const C& c) { return std::to_string(c.tls_port); }},
      {"tls-cert-file", "PEM certificate chain the server presents",
       /*runtime_settable=*/true, ConfigType::kString, "<path>",
       [](C* c, V v, S* e) { return SetPath(v, &c->tls_cert_file, e); },
       [](const C& c) { return c.tls_cert_file; }},
      {"tls-key-file", "PEM private key of tls-cert-file",
       /*runtime_settable=*/true, ConfigType::kString, "<path>",
       [](C* c, V v, S* e) { return SetPath(v, &c->tls_key_file, e); },
       [](const C& c) { return c.tls_key_file; }},
      {"tls-key-file-pass", "passphrase of tls-key-file, if it is encrypted",
       /*runtime_settable=*/true, ConfigType::kString, "<passphrase>",
       [](C* c, V v, S*) {
         c->tls_key_file_pass = std::string(v);
         return true;
       },
       [](const C& c) { return c.tls_key_file_pass; }},
      {"tls-ca-cert-file", "PEM file of the CAs client certificates must chain to",
       /*runtime_settable=*/true, ConfigType::kString, "<path>",
       [](C* c, V v, S* e) { return SetPath(v, &c->tls_ca_cert_file, e); },
       [](const C& c) { return c.tls_ca_cert_file; }},
      {"tls-ca-cert-dir", "directory of CA certificates (c_rehash layout)",
       /*runtime_settable=*/true, ConfigType::kString, "<path>",
       [](C* c, V v, S* e) { return SetPath(v, &c->tls_ca_cert_dir, e); },
       [](const C& c) { return c.tls_ca_cert_dir; }},
      {"tls-auth-clients", "client certificates: yes = required, optional, no = not asked",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no|optional>",
       [](C* c, V v, S* e) { return SetTlsAuthClients(c, v, e); },
       [](const C& c) { return FormatTlsAuthClients(c.tls_auth_clients); }},
      {"tls-protocols", "TLS versions accepted; \"\" = \"TLSv1.2 TLSv1.3\"",
       /*runtime_settable=*/true, ConfigType::kString, "\"<TLSv1.2 TLSv1.3 ...>\"",
       [](C* c, V v, S* e) { return SetTlsProtocols(c, v, e); },
       [](const C& c) { return c.tls_protocols; }},
      {"tls-ciphers", "OpenSSL cipher list for TLSv1.2 and below; \"\" = OpenSSL's",
       /*runtime_settable=*/true, ConfigType::kString, "<ciphers>",
       [](C* c, V v, S*) {
         c->tls_ciphers = std::string(v);
         return true;
       },
       [](const C& c) { return c.tls_ciphers; }},
      {"tls-ciphersuites", "OpenSSL ciphersuites for TLSv1.3; \"\" = OpenSSL's",
       /*runtime_settable=*/true, ConfigType::kString, "<ciphersuites>",
       [](C* c, V v, S*) {
         c->tls_ciphersuites = std::string(v);
         return true;
       },
       [](const C& c) { return c.tls_ciphersuites; }},
      {"tls-prefer-server-ciphers", "pick the cipher by the server's preference",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->tls_prefer_server_ciphers, e); },
       [](const C& c) { return std::string(c.tls_prefer_server_ciphers ? "yes" : "no"); }},
      {"tls-handshake-timeout", "milliseconds a TLS client has to finish its handshake",
       /*runtime_settable=*/true, ConfigType::kInteger, "<100-600000>",
       [](C* c, V v, S* e) {
         return SetInteger(v, kMinTlsHandshakeTimeoutMs, kMaxTlsHandshakeTimeoutMs,
                           &c->tls_handshake_timeout_ms, e);
       },
       [](const C& c) { return std::to_string(c.tls_handshake_timeout_ms); }},
      {"metrics-port", "HTTP port of the Prometheus endpoint (GET /metrics); 0 = off",
       /*runtime_settable=*/false, ConfigType::kInteger, "<0-65535>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, 65535, &c->metrics_port, e); },
       [](const C& c) { return std::to_string(c.metrics_port); }},
      {"metrics-top-filters", "filters (largest by memory) given per-filter metrics",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-10000>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, kMaxMetricsTopFilters, &c->metrics_top_filters, e); },
       [](const C& c) { return std::to_string(c.metrics_top_filters); }},
      {"replicaof", "\"<host> <port>\" of the primary this server follows (REPLICAOF sets it); \"\" = a primary",
       /*runtime_settable=*/false, ConfigType::kString, "\"<host> <port>\"",
       [](C* c, V v, S* e) { return SetReplicaOf(v, &c->replicaof, e); },
       [](const C& c) { return c.replicaof; }},
      {"masterauth", "password a replica AUTHs with at its primary",
       /*runtime_settable=*/true, ConfigType::kString, "<password>",
       [](C* c, V v, S*) {
         c->masterauth = std::string(v);
         return true;
       },
       [](const C& c) { return c.masterauth; }},
      {"masteruser", "ACL user a replica AUTHs as at its primary; \"\" = AUTH <password>",
       /*runtime_settable=*/true, ConfigType::kString, "<user>",
       [](C* c, V v, S*) {
         c->masteruser = std::string(v);
         return true;
       },
       [](const C& c) { return c.masteruser; }},
      {"replica-read-only", "a replica refuses writes from its clients with -READONLY",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->replica_read_only, e); },
       [](const C& c) { return std::string(c.replica_read_only ? "yes" : "no"); }},
      {"repl-backlog-size", "bytes of the stream kept for replicas that reconnect (PSYNC)",
       /*runtime_settable=*/true, ConfigType::kMemory, "<16kb-1024gb>",
       [](C* c, V v, S* e) {
         return SetMemory(v, kMinReplBacklogSize, kMaxFilterMemory, &c->repl_backlog_size, e);
       },
       [](const C& c) { return std::to_string(c.repl_backlog_size); }},
      {"repl-timeout", "seconds a replication link may stay silent before it is dropped",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-2147483647>",
       [](C* c, V v, S* e) { return SetInteger(v, 1, kMaxTimeout, &c->repl_timeout, e); },
       [](const C& c) { return std::to_string(c.repl_timeout); }},
      {"repl-ping-replica-period", "seconds between a primary's PINGs to its replicas",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-2147483647>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 1, kMaxTimeout, &c->repl_ping_replica_period, e);
       },
       [](const C& c) { return std::to_string(c.repl_ping_replica_period); }},
      {"replica-priority", "Sentinel promotes the lowest first; 0 = never promoted",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-2147483647>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, kMaxTimeout, &c->replica_priority, e); },
       [](const C& c) { return std::to_string(c.replica_priority); }},
      {"replica-announce-ip", "address a replica tells its primary; \"\" = the link's own",
       /*runtime_settable=*/true, ConfigType::kString, "<ip>",
       [](C* c, V v, S*) {
         c->replica_announce_ip = std::string(v);
         return true;
       },
       [](const C& c) { return c.replica_announce_ip; }},
      {"replica-announce-port", "port a replica tells its primary; 0 = its own port",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-65535>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, 65535, &c->replica_announce_port, e); },
       [](const C& c) { return std::to_string(c.replica_announce_port); }},
      {"replica-announced", "Sentinel lists this replica (INFO replica_announced)",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->replica_announced, e); },
       [](const C& c) { return std::string(c.replica_announced ? "yes" : "no"); }},
      {"min-replicas-to-write", "writes need this many replicas acked recently; 0 = off",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-2147483647>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, kMaxTimeout, &c->min_replicas_to_write, e); },
       [](const C& c) { return std::to_string(c.min_replicas_to_write); }},
      {"min-replicas-max-lag", "seconds since a replica's last ack that still count it",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-2147483647>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, kMaxTimeout, &c->min_replicas_max_lag, e); },
       [](const C& c) { return std::to_string(c.min_replicas_max_lag); }},
      {"cluster-enabled", "serve as a Redis Cluster node (hash slots, CLUSTER, redirects)",
       /*runtime_settable=*/false, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->cluster_enabled, e); },
       [](const C& c) { return std::string(c.cluster_enabled ? "yes" : "no"); }},
      {"cluster-config-file", "file inside dir holding this node's id and view of the cluster",
       /*runtime_settable=*/false, ConfigType::kString, "<name>",
       [](C* c, V v, S* e) { return SetFileName(v, &c->cluster_config_file, e); },
       [](const C& c) { return c.cluster_config_file; }},
      {"cluster-port", "cluster bus port; 0 = port + 10000",
       /*runtime_settable=*/false, ConfigType::kInteger, "<0-65535>",
       [](C* c, V v, S* e) { return SetInteger(v, 0, 65535, &c->cluster_port, e); },
       [](const C& c) { return std::to_string(c.cluster_port); }},
      {"cluster-node-timeout", "milliseconds a silent node may take before it is suspected",
       /*runtime_settable=*/true, ConfigType::kInteger, "<1-9223372036854775807>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 1, std::numeric_limits<int64_t>::max(), &c->cluster_node_timeout,
                           e);
       },
       [](const C& c) { return std::to_string(c.cluster_node_timeout); }},
      {"cluster-announce-ip", "address this node gives the cluster; \"\" = what peers see",
       /*runtime_settable=*/false, ConfigType::kString, "<ip>",
       [](C* c, V v, S*) {
         c->cluster_announce_ip = std::string(v);
         return true;
       },
       [](const C& c) { return c.cluster_announce_ip; }},
      {"cluster-require-full-coverage", "refuse keys with -CLUSTERDOWN while a slot has no owner",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->cluster_require_full_coverage, e); },
       [](const C& c) { return std::string(c.cluster_require_full_coverage ? "yes" : "no"); }},
      {"cluster-replica-validity-factor",
       "a replica cut off longer than node-timeout x this (+ ping period) never fails over; "
       "0 = always may",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-2147483647>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, kMaxTimeout, &c->cluster_replica_validity_factor, e);
       },
       [](const C& c) { return std::to_string(c.cluster_replica_validity_factor); }},
      {"cluster-replica-no-failover", "this replica never fails its master over by itself",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->cluster_replica_no_failover, e); },
       [](const C& c) { return std::string(c.cluster_replica_no_failover ? "yes" : "no"); }},
      {"cluster-allow-reads-when-down", "serve read-only commands while the cluster state is fail",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->cluster_allow_reads_when_down, e); },
       [](const C& c) { return std::string(c.cluster_allow_reads_when_down ? "yes" : "no"); }},
      {"cluster-migration-barrier", "replicas a master keeps before one migrates to an orphaned master",
       /*runtime_settable=*/true, ConfigType::kInteger, "<0-2147483647>",
       [](C* c, V v, S* e) {
         return SetInteger(v, 0, std::numeric_limits<int32_t>::max(), &c->cluster_migration_barrier,
                           e);
       },
       [](const C& c) { return std::to_string(c.cluster_migration_barrier); }},
      {"cluster-allow-replica-migration", "replicas may migrate to masters left without one",
       /*runtime_settable=*/true, ConfigType::kEnum, "<yes|no>",
       [](C* c, V v, S* e) { return SetYesNo(v, &c->cluster_allow_replica_migration, e); },
       [](const C& c) { return std::string(c.cluster_allow_replica_migration ? "yes" : "no"); }},
  };
  return kTable;
}

}  // namespace

const std::vector<ConfigParam>& AllConfigParams() { return BuildTable(); }

std::string_view LogLevelForSpdlog(std::string_view loglevel) {
  // Redis's debug < verbose < notice < warning; spdlog has no level between
  // debug and info, so verbose logs what debug does.
  if (loglevel == "verbose") return "debug";
  if (loglevel == "notice") return "info";
  if (loglevel == "warning") return "warn";
  if (loglevel == "nothing") return "off";
  return loglevel;
}

const ConfigParam* FindConfigParam(std::string_view name) {
  // A linear scan of a few dozen rows: lookups happen at start-up and on CONFIG
  // GET/SET, never per data command, so a map would buy nothing.
  for (const ConfigParam& param : AllConfigParams()) {
    if (EqualsIgnoreCase(param.name, name)) return &param;
  }
  return nullptr;
}

bool SetConfigValue(ServerConfig* config, std::string_view name,
                    std::string_view value, std::string* error) {
  const ConfigParam* param = FindConfigParam(name);
  if (param == nullptr) {
    *error = "unknown config parameter '" + std::string(name) + "'";
    return false;
  }
  // Each setter parses into a local and assigns only on success, which is
  // what keeps *config unchanged on failure.
  return param->set(config, value, error);
}

std::string GetConfigValue(const ServerConfig& config, std::string_view name) {
  const ConfigParam* param = FindConfigParam(name);
  return param == nullptr ? std::string() : param->get(config);
}

std::optional<uint64_t> ParseMemoryValue(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc()) return std::nullopt;  // more than 64 bits of digits

  // Redis's memtoull units: a bare letter is a power of 1000, with "b" a
  // power of 1024.
  struct Unit {
    std::string_view suffix;
    uint64_t multiplier;
  };
  static constexpr std::array<Unit, 8> kUnits = {{
      {"", 1},
      {"b", 1},
      {"k", 1000},
      {"kb", 1024},
      {"m", 1000 * 1000},
      {"mb", 1024 * 1024},
      {"g", 1000ull * 1000 * 1000},
      {"gb", 1024ull * 1024 * 1024},
  }};
  const std::string_view suffix = text.substr(digits);
  uint64_t multiplier = 0;
  for (const Unit& unit : kUnits) {
    if (EqualsIgnoreCase(suffix, unit.suffix)) multiplier = unit.multiplier;
  }
  if (multiplier == 0) return std::nullopt;
  if (number > std::numeric_limits<uint64_t>::max() / multiplier) {
    return std::nullopt;
  }
  return number * multiplier;
}

}  // namespace bloomgate
