// The arguments of every command, as COMMAND DOCS reports them (Redis 7's
// schema), derived from one syntax line per command.
//
// A syntax line is written as redis-cli prints it in `help` and in its
// argument hints, e.g. "key error_rate capacity [EXPANSION expansion]
// [NONSCALING]":
//   lower-case word       a named argument (type string unless the line's
//                         types say integer, double, unix-time or key; the
//                         name "key" is always a key)
//   UPPER word            a token: of the argument right after it if that is
//                         a named argument ("EXPANSION expansion"), else a
//                         pure-token ("NONSCALING")
//   [ ... ]               optional; several arguments inside make a block
//   a|b|c                 one of (inside [ ], or inside < > when required:
//                         "<ON|OFF>", which redis-cli prints as "ON|OFF")
//   x [x ...]             x repeated ("multiple"); "TOKEN x [TOKEN x ...]"
//                         repeats the token too ("multiple_token")
// The table lives in command_syntax.cc, one line per command, so that
// adding a command touches one line here rather than every command row; a
// filter family's rows carry their own line instead (CommandSpec::syntax):
// the lines its family record declares (FilterFamily::syntax) and SCANDUMP
// and LOADCHUNK's (commands/family_shared/family_rows.h), so a family's
// commands are declared in its own folder. command_syntax_test checks both
// ways (every row has a line, every line a row) and that each line reads
// back as written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

enum class ArgType : uint8_t {
  kKey, kString, kInteger, kDouble, kUnixTime, kPureToken, kOneOf, kBlock
};

// Redis's name for the type: "key", "pure-token", "oneof", ...
std::string_view ArgTypeName(ArgType type);

struct CommandArgument {
  std::string name;
  ArgType type = ArgType::kString;
  std::string token;           // empty: none
  bool optional = false;
  bool multiple = false;
  bool multiple_token = false;
  int key_spec_index = -1;     // keys only: which of COMMAND INFO's key specs
  std::vector<CommandArgument> children;  // oneof / block
};

struct CommandSyntax {
  std::string_view command;  // full name: "bf.reserve", "client|setname"
  std::string_view line;     // the arguments after the command's name
  std::string_view types;    // "name:type ..." for arguments that are not strings
};

// Every syntax line, in one table.
const std::vector<CommandSyntax>& CommandSyntaxTable();

// The line for `full_name`, or null.
const CommandSyntax* FindCommandSyntax(std::string_view full_name);

// Parses a syntax line into arguments. Keys get key_spec_index 0, 1, ... in
// order of appearance, capped at key_specs - 1 (COMMAND INFO describes a
// command's keys with one range spec, plus one for keys named by a count).
// On a malformed line returns false and says why in *error.
bool ParseCommandSyntax(const CommandSyntax& syntax, int key_specs,
                        std::vector<CommandArgument>* out, std::string* error);

// The arguments printed back as redis-cli 7 prints them (its hint and
// `help` line): the inverse of ParseCommandSyntax for a well-written line.
std::string RenderArguments(const std::vector<CommandArgument>& arguments);

}  // namespace bloomgate
