#include "server/resp/reply_builder.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace bloomgate {
namespace {

void AppendInt(std::string* out, int64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  out->append(digits, end);
}

}  // namespace

void ReplyBuilder::Header(char type, int64_t value) {
  out_->push_back(type);
  AppendInt(out_, value);
  out_->append("\r\n", 2);
}

void ReplyBuilder::SimpleString(std::string_view text) {
  out_->push_back('+');
  for (char c : text) out_->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out_->append("\r\n", 2);
}

void ReplyBuilder::Error(std::string_view text) {
  ++errors_written_;
  if (error_observer_ != nullptr) error_observer_->OnErrorReply(text);
  out_->push_back('-');
  for (char c : text) out_->push_back(c == '\r' || c == '\n' ? ' ' : c);
  out_->append("\r\n", 2);
}

void ReplyBuilder::ErrorWithErrPrefix(std::string_view message) {
  // An error code is an upper-case first word ("WRONGTYPE", "NOAUTH", ...).
  size_t code_end = message.find(' ');
  bool has_code = code_end != std::string_view::npos && code_end > 0;
  for (size_t i = 0; has_code && i < code_end; ++i) {
    if (message[i] < 'A' || message[i] > 'Z') has_code = false;
  }
  if (has_code) {
    Error(message);
  } else {
    std::string text = "ERR ";
    text.append(message);
    Error(text);
  }
}

void ReplyBuilder::Integer(int64_t value) { Header(':', value); }

void ReplyBuilder::Bulk(std::string_view data) {
  Header('$', static_cast<int64_t>(data.size()));
  out_->append(data);
  out_->append("\r\n", 2);
}

void ReplyBuilder::Null() {
  if (resp3_) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("$-1\r\n", 5);
  }
}

void ReplyBuilder::NullArray() {
  if (resp3_) {
    out_->append("_\r\n", 3);
  } else {
    out_->append("*-1\r\n", 5);
  }
}

void ReplyBuilder::Bool(bool value) {
  if (resp3_) {
    out_->append(value ? "#t\r\n" : "#f\r\n", 4);
  } else {
    out_->append(value ? ":1\r\n" : ":0\r\n", 4);
  }
}

void ReplyBuilder::Bools(const std::vector<bool>& values) {
  const char* yes = resp3_ ? "#t\r\n" : ":1\r\n";
  const char* no = resp3_ ? "#f\r\n" : ":0\r\n";
  const size_t at = out_->size();
  out_->resize(at + 4 * values.size());
  char* to = out_->data() + at;
  for (const bool value : values) {
    std::memcpy(to, value ? yes : no, 4);
    to += 4;
  }
}

void ReplyBuilder::Double(double value) {
  char digits[64];
  std::string_view text;
  if (std::isinf(value)) {
    text = value > 0 ? "inf" : "-inf";
  } else if (std::isnan(value)) {
    text = "nan";
  } else {
    // Shortest text that reads back to the same double, as Redis 7 does.
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
    text = std::string_view(digits, end - digits);
  }
  if (resp3_) {
    out_->push_back(',');
    out_->append(text);
    out_->append("\r\n", 2);
  } else {
    Bulk(text);
  }
}

void ReplyBuilder::ArrayHeader(size_t count) {
  Header('*', static_cast<int64_t>(count));
}

void ReplyBuilder::PushHeader(size_t count) {
  Header(resp3_ ? '>' : '*', static_cast<int64_t>(count));
}

void ReplyBuilder::MapHeader(size_t pairs) {
  if (resp3_) {
    Header('%', static_cast<int64_t>(pairs));
  } else {
    Header('*', static_cast<int64_t>(pairs * 2));
  }
}

void ReplyBuilder::SetHeader(size_t count) {
  Header(resp3_ ? '~' : '*', static_cast<int64_t>(count));
}

void ReplyBuilder::Verbatim(std::string_view text) {
  if (!resp3_) {
    Bulk(text);
    return;
  }
  Header('=', static_cast<int64_t>(text.size() + 4));
  out_->append("txt:", 4);
  out_->append(text);
  out_->append("\r\n", 2);
}

}  // namespace bloomgate
