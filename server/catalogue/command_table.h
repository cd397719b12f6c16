// The command table: every command Bloomgate answers is one row here.
//
// A row declares the command's shape (arity, optional maximum, flags, key
// positions) and its handler. Everything that needs to know about commands
// reads these rows: the dispatcher's arity and existence checks, COMMAND
// (INFO / DOCS / COUNT / LIST / GETKEYS), INFO commandstats, the key locks a
// transaction takes, and the README's command list. Handlers therefore never
// check argument counts for shape.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/catalogue/command_syntax.h"

namespace bloomgate {

struct CommandContext;
using CommandHandler = void (*)(CommandContext& ctx);

// Flags, named as Redis names them in COMMAND INFO.
enum CommandFlag : uint32_t {
  kCmdWrite = 1u << 0,
  kCmdReadOnly = 1u << 1,
  kCmdFast = 1u << 2,
  kCmdDenyOom = 1u << 3,
  kCmdAdmin = 1u << 4,
  kCmdNoAuth = 1u << 5,      // allowed before AUTH (AUTH, HELLO, QUIT)
  kCmdLoading = 1u << 6,     // allowed while a snapshot is loading
  kCmdStale = 1u << 7,
  kCmdNoMulti = 1u << 8,     // not queued inside MULTI (the transaction verbs)
  kCmdAllKeys = 1u << 9,     // touches the whole keyspace (FLUSHALL, KEYS, SCAN)
  kCmdNoScript = 1u << 10,
  // Ours: a write whose effects commute with those of every other command
  // with this flag (Bloom adds only set bits), so several may run on one key
  // at once. Every other write holds its keys' locks exclusively, so writes
  // to one key reach the append-only log in the order they took effect.
  kCmdOrderFree = 1u << 11,
  // Ours: a read that holds its keys exclusively, so that no kCmdOrderFree
  // write runs beside it: BF.SCANDUMP copies a filter's header and bits,
  // which must be of one moment.
  kCmdExclusiveKeys = 1u << 12,
  // Ours: the arguments carry a secret (AUTH's and HELLO's password), so
  // SLOWLOG and MONITOR show them as "(redacted)", as Redis does.
  kCmdRedactArgs = 1u << 13,
  // Ours, no COMMAND INFO flag: in ACL's @dangerous though neither admin
  // nor a write to the whole keyspace, as Redis puts it per command: a
  // payload that builds any value (RESTORE and its kin), a key sent to
  // another server (MIGRATE), every key name (KEYS), the server's state
  // (INFO). A user made with -@dangerous must not reach them.
  kCmdDangerous = 1u << 14,
};

// Which arguments of a row name pub/sub channels, for ACL channel rules
// (Redis's CHANNEL key-spec flags): every argument after the name
// (SUBSCRIBE), every one as a pattern (PSUBSCRIBE: matched literally
// against the user's patterns), or the first (PUBLISH).
enum class ChannelArgs : uint8_t { kNone, kAll, kAllPatterns, kFirst };

struct CommandSpec {
  std::string_view name;     // lower case; a subcommand's own word, e.g. "setname"
  // Redis's convention, counting the command name (and for a subcommand, the
  // container's name too): N > 0 means exactly N, N < 0 means at least -N.
  int arity = 0;
  // Largest argument count accepted, counting the name; 0 = no maximum.
  int max_args = 0;
  uint32_t flags = 0;
  // Key positions: first key index, last key index (-1 = the last argument),
  // step between keys; all 0 for keyless commands.
  int first_key = 0;
  int last_key = 0;
  int key_step = 0;
  // Keys named by a count (CMS.MERGE dest numkeys src...): when > 0,
  // args[numkeys_index] is a count N and the N arguments after it are keys
  // too. A count that is not an integer in [1, what follows] names none
  // (the handler refuses such a command before touching any key).
  int numkeys_index = 0;
  // MIGRATE's extended form: when > 0 and args[first_key] is empty, the keys
  // are every argument after the first KEYS word found from this index on
  // (AUTH's one value and AUTH2's two skipped), as Redis's migrateGetKeys.
  int keys_keyword_from = 0;
  ChannelArgs channel_args = ChannelArgs::kNone;
  CommandHandler handler = nullptr;   // null only for containers
  std::string_view summary;
  std::string_view group;             // COMMAND DOCS group: "bf", "generic", ...
  std::string_view since;             // the Redis / RedisBloom version it follows
  // The row's own syntax line (command_syntax.h), for rows written alike
  // for every family (commands/family_shared/family_rows.h: SCANDUMP, LOADCHUNK); null:
  // the command's line in catalogue/command_syntax.cc.
  const CommandSyntax* syntax = nullptr;
  std::vector<CommandSpec> subcommands;

  // Filled in by CommandTable: "client|setname", a dense index used by
  // per-thread statistics and ACL permission bits, and the row's ACL
  // categories (catalogue/acl_categories.h, derived from the fields above).
  std::string full_name;
  size_t id = 0;
  const CommandSpec* parent = nullptr;
  uint64_t acl_categories = 0;
  // COMMAND DOCS's arguments, parsed from the command's line (SyntaxOf);
  // empty when it has none (or no line).
  const std::vector<CommandArgument>* arguments = nullptr;
};

// The rows of one command group (connection, keyspace, ...), defined in the
// group's file in commands/. The catalogue names no group: the rooms above
// register theirs at start-up (commands/registry.cc is the one list), before
// the first CommandTable is built and before any thread starts; the list
// never changes afterwards, so threads read it without locks.
using CommandRows = std::vector<CommandSpec> (*)();
void RegisterCommandGroup(CommandRows rows);
std::span<const CommandRows> RegisteredCommandGroups();

// The row's syntax line: its own, else its command's in command_syntax.cc;
// null when it has neither (command_syntax_test refuses that). Needs the
// row's full_name, which the table fills in.
const CommandSyntax* SyntaxOf(const CommandSpec& spec);

// FNV-1a over ASCII case-folded bytes: the command table hashes the
// client's bytes where they lie instead of lower-casing a copy first.
uint64_t AsciiCaseHash(std::string_view text);

class CommandTable {
 public:
  // Builds the table from the registered command groups and filter
  // families; the rows are immutable afterwards,
  // so worker threads read it without locks.
  CommandTable();

  // Case-insensitive lookup of a top-level command.
  const CommandSpec* Find(std::string_view name) const;
  // Case-insensitive lookup of a subcommand of a container.
  static const CommandSpec* FindSubcommand(const CommandSpec& container,
                                           std::string_view name);
  const std::vector<CommandSpec>& commands() const { return commands_; }
  // Every row, containers and their subcommands, indexed by CommandSpec::id.
  const std::vector<const CommandSpec*>& all() const { return all_; }

  // Indices into `args` (args[0] = command name) that name keys.
  static void KeyIndices(const CommandSpec& spec, size_t argc,
                         std::vector<size_t>* out);
  // The same, plus the keys a numkeys_index count names in `args`.
  static void KeyIndices(const CommandSpec& spec, std::span<const std::string_view> args,
                         std::vector<size_t>* out);
  // Calls visit(index) for each index the span overload of KeyIndices
  // gives, in its order, without building a vector (the request path's
  // lookup; no allocation per command).
  template <typename Visit>
  static void ForEachKeyIndex(const CommandSpec& spec, std::span<const std::string_view> args,
                              Visit&& visit);
  // Where the keys after a KEYS word start (see keys_keyword_from), or 0
  // when the row has no such form or `args` does not use it.
  static size_t KeysAfterKeyword(const CommandSpec& spec, std::span<const std::string_view> args);
  // The key count at spec.numkeys_index if it is valid for `args` (see
  // numkeys_index), else 0.
  static size_t NumKeys(const CommandSpec& spec, std::span<const std::string_view> args);
  // How many key specs COMMAND INFO gives the row: one for its key range,
  // one more for keys named by a count.
  static int KeySpecCount(const CommandSpec& spec) {
    return (spec.first_key > 0 ? 1 : 0) + (spec.numkeys_index > 0 ? 1 : 0);
  }
  // Whether `argc` fits the row's arity and maximum.
  static bool ArityMatches(const CommandSpec& spec, size_t argc);

 private:
  std::vector<CommandSpec> commands_;
  std::vector<const CommandSpec*> all_;
  std::vector<std::vector<CommandArgument>> arguments_;  // one per row of all_
  // Top-level rows by name: open addressing over a power-of-two array at
  // most 1/4 full, probed linearly, each slot holding the name's hash so a
  // miss compares no bytes. Under callgrind a lookup of "BF.EXISTS" costs
  // ~60 instructions; the unordered_map it replaced cost ~170 with its
  // AsciiLower copy, and ~600 with a transparent case-folding hash.
  struct NameSlot {
    uint64_t hash = 0;
    const CommandSpec* spec = nullptr;
  };
  std::vector<NameSlot> by_name_;
  size_t by_name_mask_ = 0;
};

template <typename Visit>
void CommandTable::ForEachKeyIndex(const CommandSpec& spec, std::span<const std::string_view> args,
                                   Visit&& visit) {
  const size_t argc = args.size();
  if (spec.keys_keyword_from > 0) {
    if (const size_t after_keyword = KeysAfterKeyword(spec, args); after_keyword != 0) {
      for (size_t i = after_keyword; i < argc; ++i) visit(i);
      return;
    }
  }
  if (spec.first_key > 0 && spec.key_step > 0 && argc > 0) {
    const size_t first = static_cast<size_t>(spec.first_key);
    size_t last = spec.last_key < 0 ? (argc + static_cast<size_t>(spec.last_key + 1)) - 1
                                    : static_cast<size_t>(spec.last_key);
    last = std::min(last, argc - 1);
    for (size_t i = first; i <= last; i += static_cast<size_t>(spec.key_step)) visit(i);
  }
  if (spec.numkeys_index > 0) {
    const size_t count = NumKeys(spec, args);
    for (size_t i = 0; i < count; ++i) visit(static_cast<size_t>(spec.numkeys_index) + 1 + i);
  }
}

// Lower-cases ASCII; command names and option keywords are case-insensitive.
std::string AsciiLower(std::string_view text);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace bloomgate
