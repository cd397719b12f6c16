// The RESP parser must not care how reads split the stream: the input parsed
// whole, split once at a fuzzer-chosen offset, and fed one byte at a time
// must yield the same commands, the same final state (need more or error)
// and the same error text. Any difference aborts.
//
// Input: byte 0 picks the limits (bits 0-1) and the split offset (the rest,
// scaled to the input); the remaining bytes are the client's stream.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/resp/resp_parser.h"
#include "tests/fuzz/fuzz_support.h"

namespace bloomgate::fuzz {
namespace {

struct Outcome {
  std::vector<std::vector<std::string>> commands;
  ParseStatus last = ParseStatus::kNeedMore;
  std::string error;
  std::string unconsumed;
};

RespLimits LimitsFor(uint8_t selector) {
  switch (selector & 3) {
    case 1:  // Redis's limits before AUTH (networking.c)
      return RespLimits{.max_bulk_len = 16 * 1024, .max_multibulk_len = 10,
                        .max_inline_len = 64 * 1024, .unauthenticated = true};
    case 2:  // tiny limits, so every limit's edge is reachable with short inputs
      return RespLimits{.max_bulk_len = 16, .max_multibulk_len = 4, .max_inline_len = 24};
    default:
      return RespLimits{};
  }
}

// Plays the connection: appends each read to a buffer, takes out every
// complete command and drops the bytes it consumed. Every Parse call sees the
// unconsumed bytes at a fresh address (the connection's buffer may move
// between reads), so a view kept across calls is caught by ASan.
class Feeder {
 public:
  explicit Feeder(const RespLimits& limits) : parser_(limits) {}

  void Feed(std::string_view bytes) {
    if (out_.last == ParseStatus::kError) return;
    buffer_.append(bytes);
    for (;;) {
      const std::string input = buffer_;  // a new allocation every call
      std::vector<std::string_view> args;
      size_t consumed = 12345;
      out_.last = parser_.Parse(input, &args, &consumed);
      if (out_.last != ParseStatus::kCommand) {
        FUZZ_CHECK(consumed == 0, "consumed %zu with status %s", consumed,
                   ToString(out_.last));
        FUZZ_CHECK(args.empty(), "args left with status %s", ToString(out_.last));
        if (out_.last == ParseStatus::kError) {
          out_.error = parser_.error();
          FUZZ_CHECK(!out_.error.empty(), "an error without a text");
          FUZZ_CHECK(out_.error.find_first_of("\r\n") == std::string::npos,
                     "an error text with CR or LF would break the reply");
        }
        return;
      }
      FUZZ_CHECK(consumed > 0 && consumed <= input.size(), "consumed %zu of %zu", consumed,
                 input.size());
      FUZZ_CHECK(!args.empty(), "a command without arguments");
      std::vector<std::string> command(args.begin(), args.end());
      out_.commands.push_back(std::move(command));
      buffer_.erase(0, consumed);
    }
  }

  Outcome Finish() {
    out_.unconsumed = buffer_;
    return out_;
  }

 private:
  RespParser parser_;
  std::string buffer_;
  Outcome out_;
};

void ExpectSame(const Outcome& a, const Outcome& b, const char* how) {
  FUZZ_CHECK(a.commands == b.commands, "%s: %zu commands whole, %zu %s", how,
             a.commands.size(), b.commands.size(), how);
  FUZZ_CHECK(a.last == b.last, "%s: status %s whole, %s %s", how, ToString(a.last),
             ToString(b.last), how);
  FUZZ_CHECK(a.error == b.error, "%s: error '%s' whole, '%s' %s", how, a.error.c_str(),
             b.error.c_str(), how);
  // After an error the connection closes, so what is left over is moot.
  if (a.last != ParseStatus::kError) {
    FUZZ_CHECK(a.unconsumed == b.unconsumed, "%s: %zu bytes left whole, %zu %s", how,
               a.unconsumed.size(), b.unconsumed.size(), how);
  }
}

}  // namespace
}  // namespace bloomgate::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate;
  using namespace bloomgate::fuzz;
  if (size < 1) return 0;
  const RespLimits limits = LimitsFor(data[0]);
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t split = stream.empty() ? 0 : (data[0] >> 2) * stream.size() / 63;

  Feeder whole(limits);
  whole.Feed(stream);
  const Outcome expected = whole.Finish();

  Feeder two(limits);
  two.Feed(stream.substr(0, split));
  two.Feed(stream.substr(split));
  ExpectSame(expected, two.Finish(), "split in two");

  Feeder bytewise(limits);
  for (size_t i = 0; i < stream.size(); ++i) bytewise.Feed(stream.substr(i, 1));
  ExpectSame(expected, bytewise.Finish(), "byte by byte");
  return 0;
}
