// Argument parsing for handlers, with a latched error: a handler walks its
// options, and the first failure is remembered while later steps become
// no-ops, so the handler checks for an error once, before it changes
// anything ("parse everything, check the error once").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace bloomgate {

// Strict number parsing: the whole text must be the number, no spaces, no
// trailing bytes, no overflow.
bool ParseInt64(std::string_view text, int64_t* value);
bool ParseUint64(std::string_view text, uint64_t* value);
// Finite doubles only ("inf" and "nan" are refused).
bool ParseDouble(std::string_view text, double* value);

class ArgParser {
 public:
  ArgParser(std::span<const std::string_view> args, size_t start) : args_(args), pos_(start) {}

  bool HasNext() const { return pos_ < args_.size(); }
  size_t pos() const { return pos_; }
  std::span<const std::string_view> Rest() const { return args_.subspan(pos_); }

  // Consumes the next argument if it equals `keyword` (case-insensitive).
  bool Accept(std::string_view keyword);
  // Consumes the next argument; latches `missing` if there is none.
  std::string_view Next(std::string_view missing);

  // Consume and convert the next argument; on failure latch the text given.
  uint64_t NextUint64(std::string_view missing, std::string_view bad);
  int64_t NextInt64(std::string_view missing, std::string_view bad);
  double NextDouble(std::string_view missing, std::string_view bad);

  // Latches `text` unless an error is already latched.
  void Fail(std::string_view text) {
    if (!error_) error_ = std::string(text);
  }
  bool failed() const { return error_.has_value(); }
  const std::string& error() const { return *error_; }

 private:
  std::span<const std::string_view> args_;
  size_t pos_;
  std::optional<std::string> error_;
};

}  // namespace bloomgate
