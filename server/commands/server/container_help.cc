#include "server/commands/server/container_help.h"

#include <algorithm>
#include <cctype>

#include "server/catalogue/command_syntax.h"
#include "server/commands/command_context.h"

namespace bloomgate {
namespace {

void CmdContainerHelp(CommandContext& ctx) {
  const std::vector<std::string> lines = ContainerHelpLines(*ctx.spec.parent);
  ctx.reply.ArrayHeader(lines.size());
  for (const std::string& line : lines) ctx.reply.SimpleString(line);
}

}  // namespace

std::vector<std::string> ContainerHelpLines(const CommandSpec& container) {
  std::vector<std::string> lines;
  // Names are lower-case ASCII (command_table.h); HELP shows them as Redis does.
  auto upper = [](std::string_view name) {
    std::string out(name);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return out;
  };
  lines.push_back(upper(container.name) +
                  " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (const CommandSpec& sub : container.subcommands) {
    if (sub.name == "help") continue;  // last, in Redis's words
    std::string line = upper(sub.name);
    if (sub.arguments != nullptr && !sub.arguments->empty()) {
      line += " " + RenderArguments(*sub.arguments);
    }
    lines.push_back(std::move(line));
    lines.push_back("    " + std::string(sub.summary) + ".");
  }
  lines.push_back("HELP");
  lines.push_back("    Print this help.");
  return lines;
}

CommandSpec HelpSubcommand(std::string_view group, std::string_view since) {
  return CommandSpec{.name = "help", .arity = 2, .flags = kCmdLoading | kCmdStale,
                     .handler = CmdContainerHelp,
                     .summary = "Returns helpful text about the different subcommands",
                     .group = group, .since = since};
}

}  // namespace bloomgate
