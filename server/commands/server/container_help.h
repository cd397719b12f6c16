// <CONTAINER> HELP for container commands (CONFIG, CLIENT, ACL, COMMAND,
// MODULE), generated from the container's rows: Redis's format, an array
// of status lines,
//   "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
//   "GET pattern [pattern ...]"            a subcommand and its syntax line
//   "    Returns the effective values ..." its summary
//   ...
//   "HELP" / "    Print this help."
// so the help lists exactly the subcommands the table has.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/catalogue/command_table.h"

namespace bloomgate {

struct CommandContext;

// The lines of `container`'s HELP.
std::vector<std::string> ContainerHelpLines(const CommandSpec& container);

// The row of a container's HELP subcommand (its group and the Redis version
// its HELP appeared in); the handler finds its container through the row's
// parent.
CommandSpec HelpSubcommand(std::string_view group, std::string_view since);

}  // namespace bloomgate
