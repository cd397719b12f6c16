// RESTORE-CHUNK key offset chunk [COMMIT ttl [REPLACE]]
//
// Ours, what MIGRATE sends a Bloomgate target for a DUMP payload over one
// chunk (4 MiB, migrate_transfer.h), the only way past the 512 MiB a RESTORE
// argument may have: the payload in order, in chunks of at most 64 MiB, each
// at the offset of its first byte;
// the last one with COMMIT, which creates the key as RESTORE-ASKING would
// (ttl in milliseconds, 0 for none; BUSYKEY unless REPLACE). Each chunk is
// one command, so a cluster node importing the key's slot takes it after
// ASKING, as it takes RESTORE-ASKING.
//
// The chunks are staged on the connection (ClientState::restore_chunk),
// straight into the filter being built (dump_payload_assembly.h): memory is
// the filter's own, charged to the memory budget and held to
// max-filter-memory from the first chunk whose bytes complete the header;
// no reader sees the key before COMMIT; a dropped connection drops it.
// Offset 0 starts a payload (and drops one staged before); a chunk at any
// other offset than the bytes staged so far (a repeat, a gap, another key)
// is refused and leaves the staging as it was; a chunk whose bytes are
// refused (damage, budget, limit) drops the staging. COMMIT is journaled
// as one unit (the DEL it replaces, the filter whole, its PEXPIREAT), so a
// replica and the log get the key whole or not at all; a filter past the
// log's 4 GiB record is refused (kTooLargeToLog) and not created. Refused
// inside MULTI (at EXEC): the unit would be EXEC's.
#include <memory>
#include <string>
#include <vector>

#include "persistence/append_log.h"
#include "persistence/dump_payload_assembly.h"
#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/keys/dump_payload_reply.h"

namespace bloomgate {
namespace {

// Sixteen of the 4 MiB chunks MIGRATE sends, with room: bounds what one
// argument makes the connection buffer before it is staged.
constexpr uint64_t kMaxChunkBytes = uint64_t{64} << 20;

// Creates the key from the complete staged payload; the staging is spent.
void Commit(CommandContext& ctx, std::unique_ptr<DumpPayloadAssembly> staged, int64_t ttl_ms,
            bool replace) {
  const std::string_view name = ctx.args[1];
  const KeyRef key = ctx.Key(name);
  Keyspace& keyspace = ctx.server.keyspace;
  AnyFilter filter;
  const DumpPayloadError finished = staged->Finish(&filter);
  staged.reset();
  if (finished != DumpPayloadError::kNone) {
    ctx.Fail(DumpPayloadErrorText(finished));
    return;
  }
  if (!ctx.server.journal.CanTake(
          ctx.client.journal,
          FilterRecordBodyBytes(name, DescribeFilter(filter), /*has_payload=*/true))) {
    ctx.Fail(errors::kTooLargeToLog);
    return;
  }
  Journal& journal = ctx.server.journal;
  journal.BeginUnit(ctx.client.journal);
  if (replace && keyspace.Erase(key, ctx.now_ms)) {
    const std::string_view del[] = {"DEL", name};
    journal.RecordCommand(ctx.client.journal, ctx.now_ms, del);
  }
  bool inserted = false;
  keyspace.Insert(key, std::make_shared<KeyEntry>(std::move(filter)), ctx.now_ms, &inserted,
                  [&](const std::string& inserted_name, const KeyEntry& created) {
                    journal.RecordFilter(ctx.client.journal, ctx.now_ms, inserted_name,
                                         created.filter(), /*with_payload=*/true);
                  });
  // The key is held exclusively and was free (or just erased).
  if (ttl_ms != 0) {
    const int64_t at_ms = ctx.now_ms + ttl_ms;
    keyspace.SetExpire(key, at_ms, ctx.now_ms);
    const std::string at = std::to_string(at_ms);
    const std::string_view expire[] = {"PEXPIREAT", name, at};
    journal.RecordCommand(ctx.client.journal, ctx.now_ms, expire);
  }
  journal.EndUnit(ctx.client.journal, ctx.now_ms);
  ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "restore", name);
  ctx.reply.Ok();
}

void CmdRestoreChunk(CommandContext& ctx) {
  ctx.skip_journal = true;  // COMMIT journals the filter itself
  if (ctx.client.in_exec) {
    // COMMIT's journal unit would be EXEC's, and a chunk is no transaction.
    ctx.Fail(errors::kRestoreChunkInMulti);
    return;
  }
  const auto& args = ctx.args;
  int64_t offset = 0;
  if (!ParseInt64(args[2], &offset) || offset < 0) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  bool commit = false;
  bool replace = false;
  int64_t ttl_ms = 0;
  if (args.size() > 4) {
    if (!EqualsIgnoreCase(args[4], "COMMIT") || args.size() < 6 || args.size() > 7 ||
        (args.size() == 7 && !EqualsIgnoreCase(args[6], "REPLACE"))) {
      ctx.Fail(errors::kSyntax);
      return;
    }
    commit = true;
    replace = args.size() == 7;
    if (!ParseInt64(args[5], &ttl_ms)) {
      ctx.Fail(errors::kNotInteger);
      return;
    }
    if (ttl_ms < 0 || ttl_ms > INT64_MAX / 2) {
      ctx.Fail(errors::kInvalidTtl);
      return;
    }
  }
  const std::string_view chunk = args[3];
  if (chunk.size() > kMaxChunkBytes) {
    ctx.Fail(errors::kRestoreChunkTooLarge);
    return;
  }
  ClientState& client = ctx.client;
  const bool staged_here = client.restore_chunk != nullptr && client.restore_chunk_key == args[1];
  if (offset != 0) {
    if (!staged_here) {
      ctx.Fail(errors::kRestoreChunkNothingStaged);
      return;
    }
    if (static_cast<uint64_t>(offset) != client.restore_chunk->received()) {
      ctx.Fail(errors::RestoreChunkOutOfOrder(offset, client.restore_chunk->received()));
      return;
    }
  }
  if (commit && !replace && ctx.server.keyspace.Find(ctx.Key(args[1]), ctx.now_ms) != nullptr) {
    ctx.Fail(errors::kBusyKey);  // checked first: the staging stays as it was
    return;
  }
  std::unique_ptr<DumpPayloadAssembly> staged =
      offset == 0 ? std::make_unique<DumpPayloadAssembly>(ctx.server.filter_limits(),
                                                          &ctx.server.budget)
                  : std::move(client.restore_chunk);
  const DumpPayloadError appended = staged->Append(chunk);
  if (appended != DumpPayloadError::kNone) {
    // Spent: a staging of this key (an earlier one when offset is 0 stays).
    if (offset != 0) client.restore_chunk.reset();
    ctx.Fail(DumpPayloadErrorText(appended));
    return;
  }
  if (commit && !staged->complete()) {
    const uint64_t received = staged->received();
    if (offset != 0) client.restore_chunk = std::move(staged);  // as it was, and this chunk
    ctx.Fail(errors::RestoreChunkIncomplete(received));
    return;
  }
  client.restore_chunk.reset();
  client.restore_chunk_key.assign(args[1]);
  if (commit) {
    Commit(ctx, std::move(staged), ttl_ms, replace);
    return;
  }
  client.restore_chunk = std::move(staged);
  ctx.reply.Ok();
}

}  // namespace

std::vector<CommandSpec> RestoreChunkCommands() {
  return {
      {.name = "restore-chunk", .arity = -4, .max_args = 7,
       .flags = kCmdWrite | kCmdDenyOom | kCmdDangerous, .first_key = 1, .last_key = 1,
       .key_step = 1, .handler = CmdRestoreChunk,
       .summary = "Stages one chunk of a DUMP payload MIGRATE sends in chunks; COMMIT creates "
                  "the key",
       .group = "server", .since = "0.1.0"},
  };
}

}  // namespace bloomgate
