// A fuzzer-chosen sequence of BF.* / CF.* / CBF.* / CMS.* / TOPK.* (and the
// windowed BF / CBF filters that WINDOW makes) / keyspace / transaction
// commands with fuzzer-chosen arguments, run through the real dispatcher on
// an in-process ServerContext (appendonly no, no saves: nothing touches a
// disk), as tests/unit/server/session.h drives it. Invariants:
//  - no crash, UB or leak (ASan, UBSan, LeakSanitizer);
//  - every reply is exactly one well-formed RESP2 value;
//  - an item whose BF.ADD / BF.MADD was acknowledged answers BF.EXISTS 1 and
//    BF.MEXISTS 1 for as long as its key exists. A model tracks that: it
//    forgets a key's items when a command may have deleted or replaced it
//    (DEL, RENAME, LOADCHUNK, FLUSHALL, EXEC) and stops checking a key that
//    may have a deadline (EXPIRE & co, RENAME, anything queued in MULTI),
//    and forgets everything when the window clock moves (a windowed
//    filter's items age out).
//
// The window clock is the harness's: it starts at kStartClockMs and moves
// only by the pseudo-command kAdvanceClock (seconds, saturating at the end
// of int64_t), so a crash replays the same turnovers.
//
// Input: a list of commands, each
//   op byte       the command (kCommands[op % size]); bit 7 set = generic
//                 arguments instead of the command's template
//   count byte    how many arguments repeat ('*' in the template; generic:
//                 the argument count, % 8)
//   per argument  one byte (generic: a kind byte first) picking a key, an
//                 item, a number, an option keyword, or the length of raw
//                 bytes that follow
// After the last command every tracked item is checked once more.

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <future>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/server_config.h"
#include "server/base/clock.h"
#include "server/clients/client_state.h"
#include "server/commands/command_dispatcher.h"
#include "server/commands/registry.h"
#include "server/context/server_context.h"
#include "server/resp/reply_builder.h"
#include "tests/fuzz/command_program.h"
#include "tests/fuzz/fuzz_support.h"

namespace bloomgate::fuzz {
namespace {

// The window clock the windowed filters age by (see the file comment).
constexpr int64_t kStartClockMs = 1'800'000'000'000;  // 2027, in Unix ms
int64_t g_window_clock_ms = kStartClockMs;
int64_t FuzzWindowClock() { return g_window_clock_ms; }

// kAdvanceClock's argument, in seconds; anything not a number moves nothing.
void AdvanceClock(const std::string& seconds_text) {
  char* end = nullptr;
  const long long seconds = std::strtoll(seconds_text.c_str(), &end, 10);
  if (seconds_text.empty() || *end != '\0' || seconds <= 0) return;
  const int64_t ms = seconds > INT64_MAX / 1000 ? INT64_MAX : int64_t{seconds} * 1000;
  g_window_clock_ms = ms > INT64_MAX - g_window_clock_ms ? INT64_MAX : g_window_clock_ms + ms;
}

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }
  // The next n bytes (fewer at the end).
  std::string Take(size_t n) {
    n = std::min(n, size_ - std::min(pos_, size_));
    std::string out(reinterpret_cast<const char*>(data_) + pos_, n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// --- replies: one RESP2 value, parsed strictly ---

struct Reply {
  char type = 0;           // + - : $ *
  std::string text;        // simple, error, bulk
  int64_t integer = 0;     // :
  bool null = false;       // $-1 or *-1
  std::vector<Reply> elements;
};

bool ParseLine(std::string_view in, size_t* pos, std::string* line) {
  const size_t end = in.find("\r\n", *pos);
  if (end == std::string_view::npos) return false;
  *line = std::string(in.substr(*pos, end - *pos));
  *pos = end + 2;
  return line->find_first_of("\r\n") == std::string::npos;
}

bool ParseInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
    if (v > (int64_t{1} << 60)) return false;
  }
  *out = s[0] == '-' ? -v : v;
  return true;
}

bool ParseReply(std::string_view in, size_t* pos, int depth, Reply* out) {
  if (*pos >= in.size() || depth > 8) return false;
  out->type = in[(*pos)++];
  std::string line;
  if (!ParseLine(in, pos, &line)) return false;
  switch (out->type) {
    case '+':
    case '-':
      out->text = line;
      return out->type == '+' || !line.empty();
    case ':':
      return ParseInt(line, &out->integer);
    case '$': {
      int64_t len = 0;
      if (!ParseInt(line, &len) || len < -1) return false;
      if (len == -1) return out->null = true;
      if (in.size() - *pos < static_cast<size_t>(len) + 2) return false;
      out->text = std::string(in.substr(*pos, len));
      *pos += len;
      if (in.substr(*pos, 2) != "\r\n") return false;
      *pos += 2;
      return true;
    }
    case '*': {
      int64_t count = 0;
      if (!ParseInt(line, &count) || count < -1) return false;
      if (count == -1) return out->null = true;
      for (int64_t i = 0; i < count; ++i) {
        out->elements.emplace_back();
        if (!ParseReply(in, pos, depth + 1, &out->elements.back())) return false;
      }
      return true;
    }
    default:
      return false;  // a RESP3 type on a RESP2 connection
  }
}

std::string Describe(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& arg : args) out += (out.empty() ? "" : " ") + arg.substr(0, 40);
  return out;
}

std::string Printable(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    if (c >= 0x20 && c < 0x7f) {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    }
  }
  return out;
}

// --- the model: what acknowledged Bloom adds promise ---

class Model {
 public:
  void Acked(const std::string& key, const std::string& item) { items_[key].insert(item); }
  // The key may be gone or hold another filter now: its items promise nothing.
  void Forget(const std::string& key) { items_.erase(key); }
  void ForgetAll() { items_.clear(); }
  // The key may expire at any moment from now on: never check it again.
  void Untrack(const std::string& key) {
    items_.erase(key);
    untracked_.insert(key);
  }
  bool tracked(const std::string& key) const { return untracked_.count(key) == 0; }
  const std::map<std::string, std::set<std::string>>& items() const { return items_; }

 private:
  std::map<std::string, std::set<std::string>> items_;
  std::set<std::string> untracked_;
};

class Harness {
 public:
  Harness() {
    ServerConfig config;
    config.appendonly = false;
    config.save = {};
    config.dir = "/nonexistent-fuzz-dir";  // never written: no saves, no log
    config.maxmemory = uint64_t{8} << 20;
    config.max_filter_memory = uint64_t{1} << 20;
    RegisterAllCommands();
    server_ = std::make_unique<ServerContext>(config, /*workers=*/1);
    client_.authenticated = true;
    g_window_clock_ms = kStartClockMs;
    SetWindowClockForTesting(&FuzzWindowClock);
  }
  ~Harness() { SetWindowClockForTesting(nullptr); }

  Reply Run(const std::vector<std::string>& args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    ReplyBuilder reply(&out);
    reply.set_resp3(false);
    while (DispatchCommand(*server_, client_, views, reply) == CommandOutcome::kParked) {
      std::promise<void> copied;
      server_->snapshot_copier.CopyInBackground(std::move(client_.parked_on),
                                                [&copied] { copied.set_value(); });
      copied.get_future().wait();
    }
    if (trace_) std::fprintf(stderr, "> %s\n< %s\n", Printable(Describe(args)).c_str(),
                             Printable(out.substr(0, 300)).c_str());
    Reply parsed;
    size_t pos = 0;
    FUZZ_CHECK(ParseReply(out, &pos, 0, &parsed) && pos == out.size(),
               "not one well-formed RESP2 reply to '%s': '%s'", Describe(args).c_str(),
               out.substr(0, 200).c_str());
    if (args[0] == "BF.SCANDUMP" || args[0] == "CF.SCANDUMP" || args[0] == "CBF.SCANDUMP" ||
        args[0] == "CMS.SCANDUMP" || args[0] == "TOPK.SCANDUMP") {
      if (parsed.elements.size() == 2 && !parsed.elements[1].text.empty()) {
        chunks_.push_back(parsed.elements[1].text);
        if (chunks_.size() > 8) chunks_.erase(chunks_.begin());
      }
    }
    return parsed;
  }

  // Runs a command and keeps the model up to date.
  void Step(const std::vector<std::string>& args) {
    if (args[0] == kAdvanceClock) {
      if (args.size() == 2) AdvanceClock(args[1]);
      model_.ForgetAll();
      return;
    }
    const Reply reply = Run(args);
    const std::string& name = args[0];
    if (reply.type == '+' && reply.text == "QUEUED") {
      // It runs at EXEC, maybe with a deadline or a delete: stop checking.
      for (const std::string& arg : args) MaybeUntrack(arg);
      return;
    }
    if (name == "BF.ADD" && args.size() == 3 && reply.type == ':') {
      Acked(args[1], args[2]);
    } else if (name == "BF.MADD" && args.size() >= 3 && reply.type == '*') {
      // As RedisBloom, the array stops at the first refusal (a full
      // non-scaling filter): one reply per item up to and including it.
      const size_t items = args.size() - 2;
      FUZZ_CHECK(!reply.elements.empty() && reply.elements.size() <= items,
                 "BF.MADD: %zu replies for %zu items", reply.elements.size(), items);
      FUZZ_CHECK(reply.elements.size() == items || reply.elements.back().type == '-',
                 "BF.MADD: %zu replies for %zu items, the last not an error",
                 reply.elements.size(), items);
      for (size_t i = 0; i < reply.elements.size(); ++i) {
        if (reply.elements[i].type == ':') Acked(args[1], args[2 + i]);
      }
    } else if (name == "DEL" || name == "UNLINK" || name == "BF.LOADCHUNK" ||
               name == "CF.LOADCHUNK" || name == "CBF.LOADCHUNK" || name == "CMS.LOADCHUNK" ||
               name == "TOPK.LOADCHUNK" || name == "BF.MERGE" || name == "CBF.MERGE") {
      for (const std::string& arg : args) model_.Forget(arg);
    } else if (name == "RENAME" || name == "RENAMENX" || name == "EXPIRE" ||
               name == "PEXPIRE" || name == "EXPIREAT" || name == "PEXPIREAT" ||
               name == "PERSIST") {
      for (const std::string& arg : args) MaybeUntrack(arg);
    } else if (name == "FLUSHALL" || name == "FLUSHDB" || name == "EXEC") {
      model_.ForgetAll();
    }
  }

  // Every acknowledged item of every key still tracked answers 1.
  void CheckAll() {
    for (const auto& [key, items] : model_.items()) {
      std::vector<std::string> mexists = {"BF.MEXISTS", key};
      for (const std::string& item : items) {
        const Reply one = Run({"BF.EXISTS", key, item});
        FUZZ_CHECK(one.type == ':' && one.integer == 1,
                   "BF.EXISTS %s <%zu-byte item> after its BF.ADD was acknowledged: '%c%s%lld'",
                   key.c_str(), item.size(), one.type, one.text.c_str(),
                   static_cast<long long>(one.integer));
        mexists.push_back(item);
      }
      const Reply all = Run(mexists);
      FUZZ_CHECK(all.type == '*' && all.elements.size() == items.size(),
                 "BF.MEXISTS %s: not an array of %zu", key.c_str(), items.size());
      for (const Reply& element : all.elements) {
        FUZZ_CHECK(element.type == ':' && element.integer == 1,
                   "BF.MEXISTS %s: an acknowledged item answers not 1", key.c_str());
      }
    }
  }

  bool in_multi() const { return client_.in_multi; }
  const std::vector<std::string>& chunks() const { return chunks_; }

 private:
  void Acked(const std::string& key, const std::string& item) {
    if (model_.tracked(key)) model_.Acked(key, item);
  }
  // Any argument may be a key: generic arguments put numbers, options and
  // items in key positions too.
  void MaybeUntrack(const std::string& arg) { model_.Untrack(arg); }

  // BLOOMGATE_FUZZ_TRACE=1 prints every command and reply (to replay a crash).
  const bool trace_ = std::getenv("BLOOMGATE_FUZZ_TRACE") != nullptr;
  std::unique_ptr<ServerContext> server_;
  ClientState client_;
  Model model_;
  std::vector<std::string> chunks_;  // recent SCANDUMP chunks, for LOADCHUNK
};

std::string Argument(char letter, Bytes* in, const Harness& harness) {
  const uint8_t b = in->Next();
  switch (letter) {
    case 'k':
      return kKeys[b % kKeyCount];
    case 'i':
      return b < 240 ? "i" + std::to_string(b % 48) : in->Take(in->Next() % 25);
    case 'n':
      return kNumbers[b % (sizeof(kNumbers) / sizeof(kNumbers[0]))];
    case 'f':
      return kFloats[b % (sizeof(kFloats) / sizeof(kFloats[0]))];
    case 'o':
      return kOptions[b % (sizeof(kOptions) / sizeof(kOptions[0]))];
    case 'p':
      return b < 128 ? kOptions[b % (sizeof(kOptions) / sizeof(kOptions[0]))]
                     : kNumbers[(b & 0x7f) % (sizeof(kNumbers) / sizeof(kNumbers[0]))];
    case 'c':
      if (!harness.chunks().empty() && b < 224) {
        return harness.chunks()[b % harness.chunks().size()];
      }
      return in->Take(in->Next() % 65);
    default:  // 'r': the byte is the length
      return in->Take(b % 17);
  }
}

}  // namespace
}  // namespace bloomgate::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate::fuzz;
  Bytes in(data, size);
  Harness harness;
  for (int commands = 0; !in.empty() && commands < 256; ++commands) {
    const uint8_t op = in.Next();
    const CommandShape& command = kCommands[(op & 0x7f) % kCommandCount];
    const size_t repeat = in.Next() % 8;
    std::vector<std::string> args = {command.name};
    if (op & 0x80) {
      static constexpr char kLetters[] = "kinfoprc";
      for (size_t i = 0; i < repeat; ++i) {
        args.push_back(Argument(kLetters[in.Next() % 8], &in, harness));
      }
    } else {
      const std::string_view shape = command.shape;
      for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == '*') continue;
        const size_t times = i + 1 < shape.size() && shape[i + 1] == '*' ? repeat : 1;
        for (size_t t = 0; t < times; ++t) args.push_back(Argument(shape[i], &in, harness));
      }
    }
    harness.Step(args);
  }
  if (harness.in_multi()) harness.Step({"DISCARD"});
  harness.CheckAll();
  return 0;
}
