// The result of a persistence step: ok, or an error with a message that
// names what failed (the file, the record, the step, expected and actual
// checksums). Errors stay values until the server logs them or turns them
// into a RESP error.
#pragma once

#include <string>
#include <utility>

namespace bloomgate {

class [[nodiscard]] Status {
 public:
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with context ("snapshot dump.bgs: " + ...).
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(context + message_);
  }

 private:
  Status() = default;
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}

  bool failed_ = false;
  std::string message_;
};

}  // namespace bloomgate
