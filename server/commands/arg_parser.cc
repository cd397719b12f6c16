#include "server/commands/arg_parser.h"

#include <charconv>
#include <cmath>

#include "server/catalogue/command_table.h"

namespace bloomgate {

bool ParseInt64(std::string_view text, int64_t* value) {
  if (text.empty() || text.size() > 20) return false;
  const char* begin = text.data();
  if (*begin == '+') return false;
  auto [end, ec] = std::from_chars(begin, text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseUint64(std::string_view text, uint64_t* value) {
  if (text.empty() || text.size() > 20 || text[0] == '-' || text[0] == '+') return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseDouble(std::string_view text, double* value) {
  if (text.empty() || text.size() > 64) return false;
  // from_chars rejects a leading '+', which strtod-based parsers accept.
  if (text[0] == '+') text.remove_prefix(1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(*value);
}

bool ArgParser::Accept(std::string_view keyword) {
  if (error_ || pos_ >= args_.size() || !EqualsIgnoreCase(args_[pos_], keyword)) return false;
  ++pos_;
  return true;
}

std::string_view ArgParser::Next(std::string_view missing) {
  if (error_) return {};
  if (pos_ >= args_.size()) {
    Fail(missing);
    return {};
  }
  return args_[pos_++];
}

uint64_t ArgParser::NextUint64(std::string_view missing, std::string_view bad) {
  std::string_view text = Next(missing);
  uint64_t value = 0;
  if (!error_ && !ParseUint64(text, &value)) Fail(bad);
  return value;
}

int64_t ArgParser::NextInt64(std::string_view missing, std::string_view bad) {
  std::string_view text = Next(missing);
  int64_t value = 0;
  if (!error_ && !ParseInt64(text, &value)) Fail(bad);
  return value;
}

double ArgParser::NextDouble(std::string_view missing, std::string_view bad) {
  std::string_view text = Next(missing);
  double value = 0;
  if (!error_ && !ParseDouble(text, &value)) Fail(bad);
  return value;
}

}  // namespace bloomgate
