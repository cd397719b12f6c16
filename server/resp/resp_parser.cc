#include "server/resp/resp_parser.h"

#include <cassert>
#include <cstring>
#include <limits>
#include <ostream>
#include <utility>

namespace bloomgate {
namespace {

// Reply texts, verbatim from Redis's networking.c unless marked otherwise.
// Clients and Redis's own tests/unit/protocol.tcl match on them.
constexpr std::string_view kTooBigMultibulkCount =
    "ERR Protocol error: too big mbulk count string";
constexpr std::string_view kInvalidMultibulkLength =
    "ERR Protocol error: invalid multibulk length";
constexpr std::string_view kUnauthenticatedMultibulkLength =
    "ERR Protocol error: unauthenticated multibulk length";
constexpr std::string_view kTooBigBulkCount =
    "ERR Protocol error: too big bulk count string";
constexpr std::string_view kInvalidBulkLength =
    "ERR Protocol error: invalid bulk length";
constexpr std::string_view kUnauthenticatedBulkLength =
    "ERR Protocol error: unauthenticated bulk length";
constexpr std::string_view kTooBigInline =
    "ERR Protocol error: too big inline request";
constexpr std::string_view kUnbalancedQuotes =
    "ERR Protocol error: unbalanced quotes in request";
// Ours: Redis skips the two bytes after a bulk without looking at them, so a
// wrong length silently desynchronises the stream. We refuse instead.
constexpr std::string_view kExpectedCrlfAfterBulk =
    "ERR Protocol error: expected CRLF after bulk data";
// Ours: Redis does not cap inline argument counts (a 64 KB line holds at most
// 32K of them). The unauthenticated case reuses Redis's text for the same
// policy, "too many arguments before AUTH".
constexpr std::string_view kTooManyInlineArgs =
    "ERR Protocol error: too many arguments in inline request";

// Keep at most this much capacity between commands, so one big command does
// not pin memory for the rest of a connection's life: 1024 spans is 16 KB,
// the same 1024 Redis starts argv with.
constexpr size_t kRetainedArgSpans = 1024;
constexpr size_t kRetainedArenaBytes = size_t{4} * 1024;

// Redis's string2ll(): optional '-', no '+', no leading zeros, no spaces,
// "-0" refused, the whole of int64 accepted, overflow refused.
bool ParseRedisInteger(std::string_view text, int64_t* value) {
  if (text.empty()) return false;
  if (text == "0") {
    *value = 0;
    return true;
  }
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  if (i == text.size() || text[i] < '1' || text[i] > '9') return false;
  // |INT64_MIN| = INT64_MAX + 1 is the largest magnitude we accept.
  const uint64_t max_magnitude =
      static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) +
      (negative ? 1 : 0);
  uint64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (magnitude > (max_magnitude - digit) / 10) return false;
    magnitude = magnitude * 10 + digit;
  }
  if (!negative) {
    *value = static_cast<int64_t>(magnitude);
  } else {
    // Written so that INT64_MIN does not overflow on the way.
    *value = -static_cast<int64_t>(magnitude - 1) - 1;
  }
  return true;
}

// isspace() in the C locale, which is what sdssplitargs uses between tokens
// and after a closing quote.
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

}  // namespace

namespace {
// Reads a decimal of 1 to 18 digits and its "\r\n" at *p: no sign, no
// leading zero except "0" itself (string2ll's rules), so anything this
// accepts ParseRedisInteger accepts with the same value. 18 digits cannot
// overflow. On false nothing is decided: the caller falls back.
inline bool ReadShortLength(const char** p, const char* end, uint64_t* value) {
  const char* at = *p;
  constexpr int kMaxDigits = 18;
  if (at == end || *at < '0' || *at > '9') return false;
  uint64_t n = static_cast<uint64_t>(*at - '0');
  ++at;
  if (n == 0) {
    // Only "0" itself; "01" is refused by the general parser.
  } else {
    for (int digits = 1; at != end && *at >= '0' && *at <= '9'; ++at, ++digits) {
      if (digits == kMaxDigits) return false;
      n = n * 10 + static_cast<uint64_t>(*at - '0');
    }
  }
  if (end - at < 2 || at[0] != '\r' || at[1] != '\n') return false;
  *p = at + 2;
  *value = n;
  return true;
}
}  // namespace

bool RespParser::TryWholeMultibulk(std::string_view input) {
  const char* const base = input.data();
  const char* const end = base + input.size();
  const char* p = base + pos_ + 1;  // past the '*'
  uint64_t count = 0;
  if (!ReadShortLength(&p, end, &count) || count == 0 || count > limits_.max_multibulk_len) {
    return false;
  }
  // Each argument needs at least "$0\r\n\r\n": a count the bytes present
  // cannot hold is left to the state machine (which waits for them).
  if (count > static_cast<uint64_t>(end - p) / 6) return false;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t length = 0;
    if (p == end || *p != '$') break;
    ++p;
    if (!ReadShortLength(&p, end, &length) || length > limits_.max_bulk_len ||
        static_cast<uint64_t>(end - p) < length + 2 || p[length] != '\r' ||
        p[length + 1] != '\n') {
      break;
    }
    arg_spans_.push_back({static_cast<size_t>(p - base), static_cast<size_t>(length)});
    p += length + 2;
    if (i + 1 == count) {
      pos_ = static_cast<size_t>(p - base);
      return true;
    }
  }
  arg_spans_.clear();
  return false;
}

const char* ToString(ParseStatus status) {
  switch (status) {
    case ParseStatus::kCommand:
      return "command";
    case ParseStatus::kNeedMore:
      return "need-more";
    case ParseStatus::kError:
      return "error";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, ParseStatus status) {
  return os << ToString(status);
}

RespParser::RespParser(const RespLimits& limits)
    : next_limits_(limits), limits_(limits) {}

void RespParser::set_limits(const RespLimits& limits) { next_limits_ = limits; }

size_t RespParser::memory_usage() const {
  return arg_spans_.capacity() * sizeof(ArgSpan) + arena_.capacity();
}

void RespParser::Reset() {
  state_ = State::kCommandStart;
  pos_ = 0;
  line_start_ = 0;
  scan_pos_ = 0;
  args_left_ = 0;
  bulk_len_ = 0;
  arg_spans_.clear();
  arena_.clear();
  error_.clear();
}

ParseStatus RespParser::Parse(std::string_view input,
                              std::vector<std::string_view>* args,
                              size_t* consumed) {
  args->clear();
  *consumed = 0;
  // The previous inline command's arguments are released here, as promised.
  if (arena_.capacity() > kRetainedArenaBytes) {
    std::string().swap(arena_);
  } else {
    arena_.clear();
  }
  if (state_ == State::kError) return ParseStatus::kError;

  // The caller must pass at least the bytes it passed last time. If it did
  // not (a bug), start the command over rather than read out of bounds.
  assert(input.size() >= pos_ && input.size() >= scan_pos_);
  if (input.size() < pos_ || input.size() < scan_pos_) Reset();

  for (;;) {
    Step step = Step::kNeedMore;
    switch (state_) {
      case State::kCommandStart:
        if (pos_ == input.size()) return ParseStatus::kNeedMore;
        limits_ = next_limits_;
        arg_spans_.clear();
        StartLine(pos_);
        // As in Redis: '*' starts a multibulk, any other byte an inline line.
        if (input[pos_] == '*') {
          // A whole pipelined command is the common case: ~250 instructions
          // per BF.EXISTS less than the state machine's (callgrind).
          if (TryWholeMultibulk(input)) return CompleteCommand(input, args, consumed);
          state_ = State::kMultibulkCount;
        } else {
          state_ = State::kInline;
        }
        step = Step::kContinue;
        break;
      case State::kMultibulkCount:
        step = ParseMultibulkCount(input);
        break;
      case State::kBulkHeader:
        step = ParseBulkHeader(input);
        break;
      case State::kBulkData:
        step = ParseBulkData(input);
        break;
      case State::kInline:
        step = ParseInline(input);
        break;
      case State::kError:
        step = Step::kError;
        break;
    }
    switch (step) {
      case Step::kContinue:
        continue;
      case Step::kNeedMore:
        return ParseStatus::kNeedMore;
      case Step::kError:
        return ParseStatus::kError;
      case Step::kDone:
        // Inline arguments were unquoted into the arena; bulks are in input.
        return CompleteCommand(state_ == State::kInline ? arena_ : input, args,
                               consumed);
    }
  }
}

void RespParser::StartLine(size_t at) {
  line_start_ = at;
  scan_pos_ = at;
}

RespParser::LineEnd RespParser::FindLineEnd(std::string_view input,
                                            char terminator, uint64_t max_len,
                                            size_t* end) {
  const size_t unscanned = input.size() - scan_pos_;
  const void* hit =
      unscanned == 0
          ? nullptr
          : std::memchr(input.data() + scan_pos_, terminator, unscanned);
  if (hit == nullptr) {
    scan_pos_ = input.size();
    // Everything from line_start_ on belongs to the line, so it is already
    // longer than allowed: fail now instead of waiting for the terminator.
    return input.size() - line_start_ > max_len ? LineEnd::kTooLong
                                                : LineEnd::kNeedMore;
  }
  *end = static_cast<size_t>(static_cast<const char*>(hit) - input.data());
  // Stay on the terminator: if the '\n' after a '\r' has not arrived yet,
  // the next call finds the '\r' again in O(1).
  scan_pos_ = *end;
  // Judged on length even when the terminator is present, so the verdict
  // does not depend on how the bytes were split into reads (Redis checks
  // only while the terminator is missing).
  return *end - line_start_ > max_len ? LineEnd::kTooLong : LineEnd::kFound;
}

RespParser::Step RespParser::ParseMultibulkCount(std::string_view input) {
  size_t cr = 0;
  switch (FindLineEnd(input, '\r', kMaxCountLineLen, &cr)) {
    case LineEnd::kNeedMore:
      return Step::kNeedMore;
    case LineEnd::kTooLong:
      return Fail(std::string(kTooBigMultibulkCount));
    case LineEnd::kFound:
      break;
  }
  if (cr + 1 == input.size()) return Step::kNeedMore;
  int64_t count = 0;
  // Redis skips whatever byte follows the '\r' unseen; we refuse a '\r' not
  // followed by '\n' as an unreadable length.
  if (input[cr + 1] != '\n' ||
      !ParseRedisInteger(input.substr(line_start_ + 1, cr - line_start_ - 1),
                         &count)) {
    return Fail(std::string(kInvalidMultibulkLength));
  }
  if (count > 0 && static_cast<uint64_t>(count) > limits_.max_multibulk_len) {
    return Fail(std::string(limits_.unauthenticated
                                ? kUnauthenticatedMultibulkLength
                                : kInvalidMultibulkLength));
  }
  pos_ = cr + 2;
  if (count <= 0) {
    // "*0" and "*-1" are empty commands, skipped as Redis does.
    state_ = State::kCommandStart;
    return Step::kContinue;
  }
  // No reserve(count): the count is a claim; spans grow as bulks arrive.
  args_left_ = static_cast<uint64_t>(count);
  StartLine(pos_);
  state_ = State::kBulkHeader;
  return Step::kContinue;
}

RespParser::Step RespParser::ParseBulkHeader(std::string_view input) {
  if (line_start_ == input.size()) return Step::kNeedMore;
  // Checked on the first byte rather than once the whole line is in (as
  // Redis does), so garbage is refused at once instead of after 64 KB.
  const char marker = input[line_start_];
  if (marker != '$') {
    std::string text = "ERR Protocol error: expected '$', got ' '";
    // CR or LF would break the reply line; Redis's addReplyError turns them
    // into spaces as well.
    if (marker != '\r' && marker != '\n') text[text.size() - 2] = marker;
    return Fail(std::move(text));
  }
  size_t cr = 0;
  switch (FindLineEnd(input, '\r', kMaxCountLineLen, &cr)) {
    case LineEnd::kNeedMore:
      return Step::kNeedMore;
    case LineEnd::kTooLong:
      return Fail(std::string(kTooBigBulkCount));
    case LineEnd::kFound:
      break;
  }
  if (cr + 1 == input.size()) return Step::kNeedMore;
  int64_t length = 0;
  if (input[cr + 1] != '\n' ||
      !ParseRedisInteger(input.substr(line_start_ + 1, cr - line_start_ - 1),
                         &length) ||
      length < 0) {
    return Fail(std::string(kInvalidBulkLength));
  }
  if (static_cast<uint64_t>(length) > limits_.max_bulk_len) {
    return Fail(std::string(limits_.unauthenticated ? kUnauthenticatedBulkLength
                                                    : kInvalidBulkLength));
  }
  bulk_len_ = static_cast<uint64_t>(length);
  pos_ = cr + 2;
  state_ = State::kBulkData;
  return Step::kContinue;
}

RespParser::Step RespParser::ParseBulkData(std::string_view input) {
  // O(1) per call while a large bulk trickles in: nothing is rescanned.
  // bulk_len_ was parsed as a non-negative int64, so the + 2 cannot wrap.
  if (static_cast<uint64_t>(input.size() - pos_) < bulk_len_ + 2) {
    return Step::kNeedMore;
  }
  const size_t end = pos_ + static_cast<size_t>(bulk_len_);
  if (input[end] != '\r' || input[end + 1] != '\n') {
    return Fail(std::string(kExpectedCrlfAfterBulk));
  }
  arg_spans_.push_back({pos_, static_cast<size_t>(bulk_len_)});
  pos_ = end + 2;
  if (--args_left_ == 0) return Step::kDone;
  StartLine(pos_);
  state_ = State::kBulkHeader;
  return Step::kContinue;
}

RespParser::Step RespParser::ParseInline(std::string_view input) {
  size_t newline = 0;
  switch (FindLineEnd(input, '\n', limits_.max_inline_len, &newline)) {
    case LineEnd::kNeedMore:
      return Step::kNeedMore;
    case LineEnd::kTooLong:
      return Fail(std::string(kTooBigInline));
    case LineEnd::kFound:
      break;
  }
  // "\r\n" and a bare "\n" both end a line, as in processInlineBuffer.
  size_t line_end = newline;
  if (line_end > line_start_ && input[line_end - 1] == '\r') --line_end;
  if (!SplitInlineArgs(input.substr(line_start_, line_end - line_start_))) {
    return Step::kError;
  }
  pos_ = newline + 1;
  if (!arg_spans_.empty()) return Step::kDone;
  // A blank line is an empty command: skipped.
  state_ = State::kCommandStart;
  return Step::kContinue;
}

// A port of Redis's sdssplitargs() (sds.c). Differences: the line is
// length-delimited, so a NUL byte is an ordinary character (Redis's C-string
// scan stops at it), and the argument count is capped by max_multibulk_len.
bool RespParser::SplitInlineArgs(std::string_view line) {
  arena_.clear();
  arg_spans_.clear();
  // Unquoting only shrinks, so reserving the (already received) line length
  // means the arena never reallocates while spans point into it.
  arena_.reserve(line.size());
  const size_t n = line.size();
  size_t i = 0;
  for (;;) {
    while (i < n && IsSpace(line[i])) ++i;
    if (i == n) return true;
    if (arg_spans_.size() >= limits_.max_multibulk_len) {
      Fail(std::string(limits_.unauthenticated ? kUnauthenticatedMultibulkLength
                                               : kTooManyInlineArgs));
      return false;
    }
    const size_t start = arena_.size();
    bool in_double = false;
    bool in_single = false;
    bool done = false;
    bool balanced = true;
    while (!done) {
      if (in_double) {
        if (i == n) {
          balanced = false;
          break;
        }
        const char c = line[i];
        if (c == '\\' && i + 3 < n && line[i + 1] == 'x' &&
            IsHexDigit(line[i + 2]) && IsHexDigit(line[i + 3])) {
          arena_.push_back(static_cast<char>(HexValue(line[i + 2]) * 16 +
                                             HexValue(line[i + 3])));
          i += 4;
        } else if (c == '\\' && i + 1 < n) {
          char unescaped = line[i + 1];
          switch (unescaped) {
            case 'n': unescaped = '\n'; break;
            case 'r': unescaped = '\r'; break;
            case 't': unescaped = '\t'; break;
            case 'b': unescaped = '\b'; break;
            case 'a': unescaped = '\a'; break;
            default: break;  // \\ \" and any other byte stand for themselves.
          }
          arena_.push_back(unescaped);
          i += 2;
        } else if (c == '"') {
          // A closing quote must be followed by whitespace or the end.
          if (i + 1 < n && !IsSpace(line[i + 1])) {
            balanced = false;
            break;
          }
          ++i;
          done = true;
        } else {
          arena_.push_back(c);
          ++i;
        }
      } else if (in_single) {
        if (i == n) {
          balanced = false;
          break;
        }
        const char c = line[i];
        if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          arena_.push_back('\'');
          i += 2;
        } else if (c == '\'') {
          if (i + 1 < n && !IsSpace(line[i + 1])) {
            balanced = false;
            break;
          }
          ++i;
          done = true;
        } else {
          arena_.push_back(c);
          ++i;
        }
      } else if (i == n) {
        done = true;
      } else {
        switch (line[i]) {
          // Only these end a bare token; '\v' and '\f' are skipped between
          // tokens but kept inside one, as in sdssplitargs.
          case ' ':
          case '\n':
          case '\r':
          case '\t':
            done = true;
            break;
          // A quote may open mid-token: a"b c" is the one argument "ab c".
          case '"':
            in_double = true;
            break;
          case '\'':
            in_single = true;
            break;
          default:
            arena_.push_back(line[i]);
            break;
        }
        ++i;
      }
    }
    if (!balanced) {
      Fail(std::string(kUnbalancedQuotes));
      return false;
    }
    arg_spans_.push_back({start, arena_.size() - start});
  }
}

ParseStatus RespParser::CompleteCommand(std::string_view base,
                                        std::vector<std::string_view>* args,
                                        size_t* consumed) {
  args->reserve(arg_spans_.size());
  for (const ArgSpan& span : arg_spans_) {
    args->emplace_back(base.data() + span.offset, span.length);
  }
  *consumed = pos_;
  state_ = State::kCommandStart;
  pos_ = 0;
  StartLine(0);
  if (arg_spans_.capacity() > kRetainedArgSpans) {
    std::vector<ArgSpan>().swap(arg_spans_);
  } else {
    arg_spans_.clear();
  }
  return ParseStatus::kCommand;
}

RespParser::Step RespParser::Fail(std::string text) {
  error_ = std::move(text);
  state_ = State::kError;
  return Step::kError;
}

}  // namespace bloomgate
