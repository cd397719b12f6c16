// Incremental parser for client requests: RESP multibulk arrays and inline
// (telnet-style) lines, with the limits and error texts of Redis's
// networking.c (processMultibulkBuffer / processInlineBuffer).
//
// The parser is a pure state machine in the style of Asio's http/server
// request_parser: it does no I/O, returns one of three results and says how
// many bytes a command used. It never allocates from a size a client claims;
// everything it stores grows with bytes that have actually arrived.

#ifndef BLOOMGATE_SERVER_RESP_PARSER_H_
#define BLOOMGATE_SERVER_RESP_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

// What an untrusted client may claim. The defaults are Redis's.
struct RespLimits {
  // proto-max-bulk-len: 512 MB in Redis.
  uint64_t max_bulk_len = 512ull * 1024 * 1024;
  // Arguments per command: 1024*1024 is the cap in Redis's
  // processMultibulkBuffer (Redis 7 raised it to INT_MAX; we keep the lower
  // one, no filter command needs more).
  uint64_t max_multibulk_len = 1024 * 1024;
  // Inline command line, bytes before the '\n': PROTO_INLINE_MAX_SIZE.
  uint64_t max_inline_len = 64 * 1024;
  // Selects the "unauthenticated ..." error texts for the two count limits.
  // The caller sets this together with the tightened limits that Redis uses
  // before AUTH (max_multibulk_len = 10, max_bulk_len = 16384).
  bool unauthenticated = false;
};

enum class ParseStatus { kCommand, kNeedMore, kError };

const char* ToString(ParseStatus status);
std::ostream& operator<<(std::ostream& os, ParseStatus status);

class RespParser {
 public:
  // A "*N" or "$len" line longer than this without its '\r' is refused:
  // PROTO_INLINE_MAX_SIZE, the same 64 KB Redis uses. A valid one is at most
  // 21 bytes ("$" and 20 digits), so this only bounds how long we wait.
  static constexpr size_t kMaxCountLineLen = 64 * 1024;

  explicit RespParser(const RespLimits& limits = {});

  // Takes effect when the next command starts; a command already partly
  // parsed finishes under the limits it started with.
  void set_limits(const RespLimits& limits);

  // Parses at most one command from `input`, which always starts at the first
  // byte the caller has not consumed yet. `args` is cleared on every call.
  //
  // kCommand: *args holds the arguments and *consumed the bytes the command
  //   used (including empty commands skipped before it). Multibulk arguments
  //   are views into `input` (valid until the caller drops those bytes);
  //   inline arguments are views into an arena owned by the parser (valid
  //   until the next Parse() or Reset()).
  // kNeedMore: *consumed = 0. The caller appends bytes and calls again with
  //   the same start. Progress is kept as offsets from that start, so no byte
  //   is scanned twice and a command arriving in many reads costs O(bytes).
  //   Bytes of empty commands skipped so far stay unconsumed until a real
  //   command completes.
  // kError: *consumed = 0 and error() holds the reply text without the
  //   leading '-'. The caller replies and closes the connection. Parse()
  //   keeps returning kError until Reset().
  //
  // Empty commands ("*0", "*-10", blank inline lines) are consumed silently
  // and parsing continues with the next command in the same call.
  ParseStatus Parse(std::string_view input, std::vector<std::string_view>* args,
                    size_t* consumed);

  const std::string& error() const { return error_; }

  // While a bulk's data is awaited: the bytes of input, from the same start,
  // that complete it (its "\r\n" included), so the caller need not grow its
  // buffer past them. 0 otherwise. A claim, checked only against
  // max_bulk_len: nothing should be allocated from it up front.
  uint64_t bytes_wanted() const {
    return state_ == State::kBulkData ? pos_ + bulk_len_ + 2 : 0;
  }

  // Heap bytes the parser holds between commands (argument offsets and the
  // inline arena), for per-client memory accounting. It grows only with bytes
  // that arrived, never with what a client claims.
  size_t memory_usage() const;

  // Forgets any partial command and the error; keeps the limits.
  void Reset();

 private:
  enum class State {
    kCommandStart,    // Nothing of the next command looked at yet.
    kMultibulkCount,  // Inside "*N\r\n".
    kBulkHeader,      // Expecting "$len\r\n".
    kBulkData,        // Expecting bulk_len_ bytes and "\r\n".
    kInline,          // Inside an inline line, looking for '\n'.
    kError,
  };
  // What one state handler did. kContinue: advanced, run the next state.
  // kDone: the command's last argument is in.
  enum class Step { kContinue, kNeedMore, kDone, kError };
  enum class LineEnd { kFound, kNeedMore, kTooLong };

  // Where one argument lies: in the caller's input for multibulk commands, in
  // arena_ for inline ones. Offsets, not views, because the caller's buffer
  // may move between calls.
  struct ArgSpan {
    size_t offset;
    size_t length;
  };

  // The fast path, tried when a multibulk starts: if the whole command is
  // in `input` with short (at most 18-digit), well-formed headers, records
  // its arguments and moves pos_ past it in one pass, without memchr or the
  // general integer parser. Otherwise changes nothing and returns false: the
  // state machine then reads the same bytes, and gives any error.
  bool TryWholeMultibulk(std::string_view input);
  Step ParseMultibulkCount(std::string_view input);
  Step ParseBulkHeader(std::string_view input);
  Step ParseBulkData(std::string_view input);
  Step ParseInline(std::string_view input);

  // Looks for `terminator` from scan_pos_ on. A line may hold at most
  // `max_len` bytes before it. On kFound, *end is the terminator's offset.
  LineEnd FindLineEnd(std::string_view input, char terminator, uint64_t max_len,
                      size_t* end);
  // Unquotes `line` into arena_ and arg_spans_ like Redis's sdssplitargs.
  // Returns false with error_ set on unbalanced quotes or too many arguments.
  bool SplitInlineArgs(std::string_view line);

  ParseStatus CompleteCommand(std::string_view base,
                              std::vector<std::string_view>* args,
                              size_t* consumed);
  Step Fail(std::string text);
  void StartLine(size_t at);

  RespLimits next_limits_;  // From set_limits(); latched at a command start.
  RespLimits limits_;       // For the command being parsed.
  State state_ = State::kCommandStart;
  size_t pos_ = 0;         // Bytes of input the state machine is done with.
  size_t line_start_ = 0;  // Start of the header or inline line being read.
  size_t scan_pos_ = 0;    // Where the search for the line's end resumes.
  uint64_t args_left_ = 0; // Bulks still expected by the current multibulk.
  uint64_t bulk_len_ = 0;  // Length of the bulk being read.
  std::vector<ArgSpan> arg_spans_;
  std::string arena_;      // Unquoted inline arguments.
  std::string error_;
};

}  // namespace bloomgate

#endif  // BLOOMGATE_SERVER_RESP_PARSER_H_
