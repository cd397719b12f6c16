// MULTI / EXEC / DISCARD / WATCH / UNWATCH with Redis semantics.
//
// Isolation: EXEC takes the key-lock stripes of every key its queued
// commands name exclusively (all stripes if one of them touches the whole
// keyspace) before it checks WATCH and runs them, so no other client's
// command on those keys runs in between; clients working on other keys are
// not held up. Atomicity is Redis's: a command that fails at run time does
// not undo the others; a command that failed to queue aborts EXEC; one that
// ACL rules no longer allow at EXEC is refused alone. Its writes reach the
// journal as one unit (Journal::BeginUnit): a log never replays half of a
// transaction, and a replica applies it whole.
#include <algorithm>
#include <vector>

#include "persistence/append_log.h"
#include "server/catalogue/command_table.h"
#include "server/commands/cluster/cluster_routing.h"
#include "server/commands/command_context.h"
#include "server/commands/command_dispatcher.h"
#include "server/commands/errors.h"
#include "server/durability/journal.h"

namespace bloomgate {
namespace {

void CmdMulti(CommandContext& ctx) {
  if (ctx.client.in_multi) {
    ctx.Fail(errors::kMultiNested);
    return;
  }
  ctx.client.in_multi = true;
  if (ctx.client.info) ctx.client.info->in_multi.store(true, std::memory_order_relaxed);
  ctx.reply.Ok();
}

void CmdDiscard(CommandContext& ctx) {
  if (!ctx.client.in_multi) {
    ctx.Fail(errors::kDiscardWithoutMulti);
    return;
  }
  ctx.client.ResetTransaction();
  ctx.reply.Ok();
}

bool WatchedKeysUnchanged(CommandContext& ctx) {
  for (const WatchedKey& watched : ctx.client.watched) {
    EntryPtr now = ctx.server.keyspace.Find(KeyRef{watched.key, watched.hash}, ctx.now_ms);
    if (WatchedKeyChanged(watched, now.get())) return false;
  }
  return true;
}

void CmdExec(CommandContext& ctx) {
  ClientState& client = ctx.client;
  if (!client.in_multi) {
    ctx.Fail(errors::kExecWithoutMulti);
    return;
  }
  if (client.multi_dirty) {
    client.ResetTransaction();
    ctx.Fail(errors::kExecAbort);
    return;
  }
  std::vector<QueuedCommand> queued = std::move(client.queued);
  std::vector<std::vector<std::string_view>> argvs(queued.size());
  // Each queued command's keys, hashed once here for both the locks and the run.
  std::vector<std::vector<KeyRef>> keys(queued.size());
  std::vector<size_t> stripes;
  bool all = false;
  for (size_t i = 0; i < queued.size(); ++i) {
    argvs[i].assign(queued[i].args.begin(), queued[i].args.end());
    bool command_all = false;
    CommandKeys(*queued[i].spec, argvs[i], &keys[i], &command_all);
    // An admin command (CLUSTER SETSLOT, CONFIG SET, ...) runs with no
    // other command beside it, as it does outside a transaction where it
    // needs to (SETSLOT NODE: cluster_commands.cc).
    all |= command_all || (queued[i].spec->flags & kCmdAdmin) != 0;
    for (const KeyRef& key : keys[i]) stripes.push_back(KeyLocks::StripeOf(key));
  }
  // Admission: the journal publishes the transaction as one unit record,
  // which must fit the framing (effects are no bigger than their commands
  // plus a count byte per argument; see RunCommand).
  uint64_t bodies = 0;
  for (const std::vector<std::string_view>& argv : argvs) {
    bodies += CommandRecordBodyBytes(argv) + argv.size() + 64;
  }
  if (!ctx.server.journal.CanTake(client.journal,
                                  Journal::UnitBodyBytes(bodies, argvs.size()))) {
    client.ResetTransaction();
    ctx.Fail(errors::kTooLargeToLog);
    return;
  }
  // WATCHed keys are locked too, so their check and the commands are one step.
  for (const WatchedKey& watched : client.watched) {
    stripes.push_back(KeyLocks::StripeOf(KeyRef{watched.key, watched.hash}));
  }
  KeyLocks::Guard guard = all ? ctx.server.key_locks.LockAll(/*exclusive=*/true)
                              : ctx.server.key_locks.Lock(std::move(stripes), true);
  // Redis Cluster: the whole queue must be served here, judged under its
  // locks; a redirect discards the transaction and is EXEC's reply.
  if (ClusterRoutes(ctx.server, client)) {
    // A queued write whose key a MIGRATE began holding after the look
    // before the locks waits here for the hold to end, as its handler
    // would (a round trip at most): the gate then sees the key gone if it
    // left, and answers -ASK instead of running the write on a key that
    // left. Under the locks no new hold can begin.
    for (size_t i = 0; i < queued.size(); ++i) {
      if ((queued[i].spec->flags & kCmdWrite) == 0) continue;
      for (const KeyRef& key : keys[i]) {
        EntryPtr entry = ctx.server.keyspace.Peek(key, ctx.now_ms);
        if (entry != nullptr && entry->off_loop_read_held()) {
          // A copy that does not fit is refused again, and answered, by
          // the write itself.
          (void)entry->TakeSnapshotCopy(&ctx.server.budget, /*final_attempt=*/false);
        }
      }
    }
    std::vector<RoutedCommand> routed(queued.size());
    for (size_t i = 0; i < queued.size(); ++i) routed[i] = {queued[i].spec, argvs[i]};
    std::string refusal;
    if (!ClusterServes(ctx.server, client, routed, ctx.now_ms, &refusal)) {
      client.ResetTransaction();
      ctx.Fail(refusal);
      return;
    }
  }
  bool unchanged = WatchedKeysUnchanged(ctx);
  client.ResetTransaction();
  if (!unchanged) {
    ctx.reply.NullArray();
    return;
  }
  ctx.reply.ArrayHeader(queued.size());
  client.in_exec = true;
  // Its records are published as one unit, before its key locks are let go.
  ctx.server.journal.BeginUnit(client.journal);
  client.exec_time_ms = ctx.now_ms;  // the moment the WATCHed keys were judged at
  for (size_t i = 0; i < queued.size(); ++i) {
    // ACL rules may have changed since the command was queued: Redis checks
    // again here and refuses that command alone; the others still run.
    AclDenial denial = CheckClientAcl(ctx.server, client, *queued[i].spec, argvs[i]);
    if (denial != AclDenial::kNone) {
      std::string text(errors::kAclChangedBeforeExec);
      text += denial == AclDenial::kKey       ? errors::kAclReasonKey
              : denial == AclDenial::kChannel ? errors::kAclReasonChannel
                                              : errors::kAclReasonCommand;
      ctx.reply.Error(text);
      continue;
    }
    RunCommand(ctx.server, client, *queued[i].spec, argvs[i], ctx.reply, /*locks_held=*/true,
               keys[i]);
  }
  client.in_exec = false;
  ctx.server.journal.EndUnit(client.journal, ctx.now_ms);
}

void CmdWatch(CommandContext& ctx) {
  if (ctx.client.in_multi) {
    ctx.Fail(errors::kWatchInsideMulti);
    return;
  }
  for (std::string_view key : ctx.args.subspan(1)) {
    // Watching a key again keeps the first record: the transaction must see
    // every change since the first WATCH.
    bool already = std::any_of(ctx.client.watched.begin(), ctx.client.watched.end(),
                               [&](const WatchedKey& w) { return w.key == key; });
    if (already) continue;
    KeyRef ref = ctx.Key(key);
    EntryPtr entry = ctx.server.keyspace.Find(ref, ctx.now_ms);
    WatchedKey watched;
    watched.key = std::string(key);
    watched.hash = ref.hash;
    watched.entry_id = entry == nullptr ? 0 : entry->id();
    watched.version = entry == nullptr ? 0 : entry->watch_version();
    ctx.client.watched.push_back(std::move(watched));
  }
  if (ctx.client.info) ctx.client.info->set_watched(ctx.client.watched);
  ctx.reply.Ok();
}

void CmdUnwatch(CommandContext& ctx) {
  ctx.client.watched.clear();
  if (ctx.client.info) ctx.client.info->set_watched({});
  ctx.reply.Ok();
}

}  // namespace

std::vector<CommandSpec> TransactionCommands() {
  constexpr uint32_t kTxn = kCmdNoMulti | kCmdFast | kCmdLoading | kCmdStale | kCmdNoScript;
  return {
      {.name = "multi", .arity = 1, .flags = kTxn, .handler = CmdMulti,
       .summary = "Starts a transaction", .group = "transactions", .since = "1.2.0"},
      {.name = "exec", .arity = 1, .flags = kCmdNoMulti | kCmdLoading | kCmdStale | kCmdNoScript,
       .handler = CmdExec, .summary = "Executes all commands in a transaction",
       .group = "transactions", .since = "1.2.0"},
      {.name = "discard", .arity = 1, .flags = kTxn, .handler = CmdDiscard,
       .summary = "Discards a transaction", .group = "transactions", .since = "2.0.0"},
      {.name = "watch", .arity = -2, .flags = kTxn, .first_key = 1, .last_key = -1,
       .key_step = 1, .handler = CmdWatch,
       .summary = "Monitors changes to keys to determine the execution of a transaction",
       .group = "transactions", .since = "2.2.0"},
      // UNWATCH inside MULTI is queued, as in Redis: it runs at EXEC, after
      // the watched keys were checked.
      {.name = "unwatch", .arity = 1,
       .flags = kCmdFast | kCmdLoading | kCmdStale | kCmdNoScript, .handler = CmdUnwatch,
       .summary = "Forgets about watched keys of a transaction", .group = "transactions",
       .since = "2.2.0"},
  };
}

}  // namespace bloomgate
