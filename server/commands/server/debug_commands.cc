// DEBUG, with the one subcommand tools rely on: DIGEST-VALUE key [key ...],
// which `redis-cli --cluster` uses to compare a key on two nodes before it
// retries a MIGRATE with REPLACE. Redis's reply: an array of 40-hex status
// lines, forty zeros for a missing key.
//
// A filter's digest is the first 160 bits of SHA-256 over its DUMP payload
// (persistence/dump_payload.h: kind, codec header with every parameter and
// seed, contents, checksum): equal filters give equal digests on any two
// nodes, and any difference in contents or parameters changes it. Its
// deadline is not part of it (a MIGRATE'd key's TTL is a few ms shorter on
// the target).
//
// Gated as Redis 7 gates DEBUG (enable-debug-command: no, the default;
// local: connections from 127.0.0.1 or ::1; yes), with Redis's refusal.
#include <cstdio>
#include <string>
#include <vector>

#include "persistence/dump_payload.h"
#include "server/access/sha256.h"
#include "server/catalogue/command_table.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/server/container_help.h"

namespace bloomgate {
namespace {

// Redis's connIsLocal for TCP: exactly 127.0.0.1 and ::1 (also mapped).
bool IsLocalAddress(std::string_view addr) {
  return addr.starts_with("127.0.0.1:") || addr.starts_with("[::1]:") ||
         addr.starts_with("[::ffff:127.0.0.1]:");
}

bool DebugAllowedOrFail(CommandContext& ctx) {
  const std::string setting = ctx.server.config.Get().enable_debug_command;
  const bool allowed =
      setting == "yes" ||
      (setting == "local" && ctx.client.info != nullptr && IsLocalAddress(ctx.client.info->addr));
  if (!allowed) ctx.Fail(errors::kDebugNotAllowed);
  return allowed;
}

std::string DigestHex(const KeyEntry* entry) {
  if (entry == nullptr) return std::string(40, '0');
  const std::array<uint8_t, 32> digest = Sha256(EncodeDumpPayload(entry->filter()));
  std::string hex(40, '0');
  for (size_t i = 0; i < 20; ++i) std::snprintf(&hex[2 * i], 3, "%02x", digest[i]);
  return hex;
}

// DEBUG DIGEST-VALUE key [key ...]. Its row holds the keys exclusively, so
// no write (a Bloom add either) runs while a filter is encoded. As Redis,
// a logically expired key still has its digest.
void CmdDebugDigestValue(CommandContext& ctx) {
  if (!DebugAllowedOrFail(ctx)) return;
  ctx.reply.ArrayHeader(ctx.args.size() - 2);
  for (size_t i = 2; i < ctx.args.size(); ++i) {
    const EntryPtr entry = ctx.server.keyspace.Peek(ctx.Key(ctx.args[i]), /*now_ms=*/0);
    ctx.reply.SimpleString(DigestHex(entry.get()));
  }
}

}  // namespace

std::vector<CommandSpec> DebugCommands() {
  return {
      {.name = "debug", .arity = -2, .summary = "A container for debugging commands",
       .group = "server", .since = "1.0.0",
       .subcommands = {
           // At least one key (Redis takes none and answers an empty array):
           // a key position must lie within the arity.
           {.name = "digest-value", .arity = -3,
            .flags = kCmdAdmin | kCmdNoScript | kCmdLoading | kCmdStale | kCmdReadOnly |
                     kCmdExclusiveKeys,
            .first_key = 2, .last_key = -1, .key_step = 1, .handler = CmdDebugDigestValue,
            .summary = "Returns a digest of the value of each key", .group = "server",
            .since = "1.0.0"},
           HelpSubcommand("server", "1.0.0"),
       }},
  };
}

}  // namespace bloomgate
