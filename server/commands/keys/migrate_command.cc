// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//         [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
//
// Redis's syntax, replies and texts (cluster.c migrateCommand): +OK, +NOKEY
// when no key is here, "IOERR error or timeout connecting to the client" /
// "... writing to target instance" / "... reading to target instance", and
// "ERR Target instance replied with error: <its error>" (BUSYKEY without
// REPLACE: what `redis-cli --cluster` looks for before it compares digests
// and retries with REPLACE). Each key goes as RESTORE-ASKING key ttl payload
// [REPLACE] (the target may be importing the slot), every key's command
// written before any of their replies is read; a key the target acknowledged
// is deleted here unless COPY, the deletion journaled as DEL.
//
// Off the event loop: the first run finds the keys under their exclusive
// locks and holds each one's writers off (EntryReadHold, as a merge holds its
// sources); one of the transfer workers (keyspace/transfer_workers.h; never
// the filter maker's build thread: a dead target would hold big builds up
// for the timeout) encodes
// the payloads, talks to the target with the timeout on every step, and
// removes each acknowledged key (Keyspace::EraseIfSame, its DEL journaled
// under the shard lock) before it lets the writers go; the connection parks
// meanwhile and its second run replies, not routed again (TransferWork: the
// keys have moved, whatever the slot's owner is by then). A writer that
// waited (in the entry's own wait list, keyspace/entry_read_waiters.h, not
// on the snapshot copier's thread) finds the key gone (FindFilter looks again),
// so no write is acknowledged on a filter that already left. With the
// holds the per-key pause of a writer is the encode, the round trip and the
// target's decode (bench/migrate_pause.py measures it).
//
// Inside MULTI/EXEC the transfer runs on the event loop, as Redis runs it
// inside the transaction, with the transaction's locks held: there each wait
// on the target (connect, every read and write) is capped at
// kInExecWaitMs, so a dead target stalls the loop for about that, not for
// the timeout the client gave.
//
// A payload over Redis's 512 MiB bulk limit (proto-max-bulk-len) cannot be
// one RESTORE argument: to a Bloomgate target it goes as RESTORE-CHUNK
// commands (migrate_transfer.h), to any other such a MIGRATE is refused
// whole, before any key is sent (MigratePayloadTooLarge).
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "persistence/dump_payload.h"
#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/keys/migrate_transfer.h"
#include "server/keyspace/transfer_workers.h"
#include "server/replication/link_socket.h"

namespace bloomgate {
namespace {

// The longest a MIGRATE inside EXEC waits on its target at each step, on
// the event loop: 100 ms is ~1,000 loopback round trips (a small key's whole
// transfer takes well under 1 ms there) and a stall the loop's other
// clients can live with; a target further away, or a bigger key, moves
// with MIGRATE outside a transaction.
constexpr int64_t kInExecWaitMs = 100;

struct MigrateOptions {
  std::string host;
  uint16_t port = 0;
  int64_t db = 0;
  int64_t timeout_ms = 0;
  bool copy = false;
  bool replace = false;
  bool auth = false;
  std::string username;  // AUTH2's; empty for AUTH
  std::string password;
  size_t first_key = 3;
  size_t num_keys = 1;
};

// Redis's order of checks: options first (a syntax error or KEYS with a
// key), then timeout and db, as getLongFromObjectOrReply.
bool ParseMigrate(CommandContext& ctx, MigrateOptions* options) {
  const auto& args = ctx.args;
  for (size_t j = 6; j < args.size(); ++j) {
    const size_t more = args.size() - 1 - j;
    if (EqualsIgnoreCase(args[j], "COPY")) {
      options->copy = true;
    } else if (EqualsIgnoreCase(args[j], "REPLACE")) {
      options->replace = true;
    } else if (EqualsIgnoreCase(args[j], "AUTH")) {
      if (more < 1) {
        ctx.Fail(errors::kSyntax);
        return false;
      }
      options->auth = true;
      options->username.clear();
      options->password = std::string(args[++j]);
    } else if (EqualsIgnoreCase(args[j], "AUTH2")) {
      if (more < 2) {
        ctx.Fail(errors::kSyntax);
        return false;
      }
      options->auth = true;
      options->username = std::string(args[++j]);
      options->password = std::string(args[++j]);
    } else if (EqualsIgnoreCase(args[j], "KEYS")) {
      if (!args[3].empty()) {
        ctx.Fail(errors::kMigrateKeysNeedEmptyKey);
        return false;
      }
      options->first_key = j + 1;
      options->num_keys = args.size() - j - 1;
      break;
    } else {
      ctx.Fail(errors::kSyntax);
      return false;
    }
  }
  int64_t port = 0;
  if (!ParseInt64(args[5], &options->timeout_ms) || !ParseInt64(args[4], &options->db)) {
    ctx.Fail(errors::kNotInteger);
    return false;
  }
  if (options->timeout_ms <= 0) options->timeout_ms = 1000;  // as Redis
  // Bounded so it fits poll()'s int (24 days is no practical limit).
  options->timeout_ms = std::min<int64_t>(options->timeout_ms, INT32_MAX);
  if (!ParseInt64(args[2], &port) || port <= 0 || port > 65535) {
    // Redis hands the text to connect(), which fails: the connect error.
    ctx.Fail(errors::kMigrateConnectFailed);
    return false;
  }
  options->port = static_cast<uint16_t>(port);
  options->host = std::string(args[1]);
  return true;
}

// One key as the first run found it: held, with the deadline it had then.
struct MigratingKey {
  std::string name;
  EntryReadHold hold;
  int64_t expire_at_ms = 0;
};

// What the transfer came to, for the second run's reply.
struct MigrateOutcome {
  std::string error;                 // empty: +OK
  std::vector<std::string> deleted;  // acknowledged and removed here
  uint64_t journal_offset = 0;       // the DEL records' end: the reply waits for it
};

// The transfer, on a transfer worker (or inline where the command cannot
// park). `keys` are held: nothing writes their filters meanwhile.
class MigrateJob {
 public:
  MigrateJob(ServerContext* server, MigrateOptions options, std::vector<MigratingKey> keys,
             int64_t now_ms)
      : server_(server), options_(std::move(options)), keys_(std::move(keys)), now_ms_(now_ms) {}

  void Run(MigrateOutcome* outcome) {
    RunHeld(outcome);
    socket_.Close();
    keys_.clear();  // the holds end: the writers go on, and find the keys gone
  }
  // Shutdown: a wait on the target ends now, as an I/O error. Set before the
  // socket is shut: a Run that connects after this sees the flag instead.
  void Cancel() {
    cancelled_.store(true);
    socket_.Shutdown();
  }

 private:
  void RunHeld(MigrateOutcome* outcome) {
    // Sized first, all of them: a payload over one chunk goes in chunks to a
    // Bloomgate target, and one too big for a RESTORE refuses the whole
    // command before anything but INFO reaches another target.
    // The payloads are encoded as they are sent (migrate_transfer.h).
    std::vector<uint64_t> sizes;
    bool any_chunked = false;
    for (const MigratingKey& key : keys_) {
      sizes.push_back(DumpPayloadStream(key.hold.entry()->filter()).size());
      any_chunked = any_chunked || sizes.back() > MigrateChunkThreshold();
    }
    LinkSocket& socket = socket_;
    const int timeout_ms = static_cast<int>(options_.timeout_ms);
    // The flag is read after the socket is connected (seq_cst, as Cancel
    // sets it): a Cancel it misses came after the connect, and its
    // Shutdown reaches the connected socket.
    if (cancelled_.load() || !socket.Connect(options_.host, options_.port, timeout_ms).ok() ||
        cancelled_.load()) {
      outcome->error = errors::kMigrateConnectFailed;
      return;
    }
    socket.set_timeout_ms(timeout_ms);
    std::vector<std::string> auth = {"AUTH"};
    if (!options_.username.empty()) auth.push_back(options_.username);
    auth.push_back(options_.password);
    if ((options_.auth && !socket.SendCommand(auth).ok()) ||
        !socket.SendCommand({"SELECT", std::to_string(options_.db)}).ok()) {
      outcome->error = errors::kMigrateWriteFailed;
      return;
    }
    // Unlike Redis, which pipelines them with the RESTOREs, AUTH's and
    // SELECT's replies are read first: a target that refuses either (a wrong
    // password, a database it does not have) gets no RESTORE, so a refused
    // MIGRATE leaves no copy there. One round trip more.
    for (int replies = options_.auth ? 2 : 1; replies > 0; --replies) {
      std::string reply;
      if (!socket.ReadLine(&reply).ok()) {
        outcome->error = errors::kMigrateReadFailed;
        return;
      }
      if (reply.starts_with('-')) {
        outcome->error = errors::MigrateTargetError(std::string_view(reply).substr(1));
        return;
      }
    }
    MigrateTarget target;
    if (any_chunked && !ProbeMigrateTarget(socket, &target).ok()) {
      outcome->error = errors::kMigrateReadFailed;
      return;
    }
    for (size_t i = 0; i < keys_.size() && !target.takes_chunks; ++i) {
      if (sizes[i] > kMaxRestorePayloadBytes) {
        outcome->error = errors::MigratePayloadTooLarge(keys_[i].name, sizes[i]);
        return;
      }
    }
    // The TTL each key has left, judged now (a key that expired meanwhile
    // is not sent, as Redis skips it): the first run's deadline, the only
    // one, since nothing changes the entry while it is held.
    const int64_t now_ms = NowMs();
    std::vector<std::pair<size_t, size_t>> sent;  // key, replies to read
    for (size_t i = 0; i < keys_.size(); ++i) {
      const int64_t at = keys_[i].expire_at_ms;
      if (at != 0 && at <= now_ms) continue;
      const int64_t ttl = at == 0 ? 0 : at - now_ms;
      const AnyFilter& filter = keys_[i].hold.entry()->filter();
      size_t replies = 1;
      const Status status =
          target.takes_chunks && sizes[i] > MigrateChunkThreshold()
              ? SendRestoreChunks(socket, keys_[i].name, at, filter, options_.replace,
                                  target.cluster, MigrateChunkThreshold(), &replies)
              : SendRestoreAsking(socket, keys_[i].name, ttl, filter, options_.replace);
      if (!status.ok()) {
        outcome->error = errors::kMigrateWriteFailed;
        return;
      }
      sent.emplace_back(i, replies);
    }
    JournalSession session;  // the DELs' own: the reply waits for its offset
    for (const auto& [i, replies] : sent) {
      std::string error;
      if (!ReadKeyReplies(socket, replies, &error).ok()) {
        if (outcome->error.empty()) outcome->error = errors::kMigrateReadFailed;
        break;
      }
      if (!error.empty()) {
        // The first error is the reply, as Redis; the keys acknowledged go on.
        if (outcome->error.empty()) outcome->error = errors::MigrateTargetError(error);
        continue;
      }
      if (options_.copy) continue;
      const MigratingKey& key = keys_[i];
      const bool erased = server_->keyspace.EraseIfSame(
          MakeKeyRef(key.name), key.hold.entry().get(), now_ms_, [&](const std::string& name) {
            const std::string_view del[] = {"DEL", name};
            server_->journal.RecordCommand(session, NowMs(), del);
          });
      if (erased) outcome->deleted.push_back(key.name);
    }
    outcome->journal_offset = session.offset;
  }

  ServerContext* server_;
  MigrateOptions options_;
  std::vector<MigratingKey> keys_;
  int64_t now_ms_;
  LinkSocket socket_;  // a member so that Cancel reaches it from another thread
  std::atomic<bool> cancelled_{false};
};

// The transfer as off-loop work of the command: run on a transfer worker,
// its outcome read by the second run.
class MigrateTransfer final : public TransferWork {
 public:
  MigrateTransfer(const CommandSpec* spec, std::unique_ptr<MigrateJob> job)
      : TransferWork(spec), job_(std::move(job)) {}
  void Cancel() override { job_->Cancel(); }
  MigrateOutcome outcome;

 private:
  void Build() override { job_->Run(&outcome); }
  std::unique_ptr<MigrateJob> job_;
};

void CmdMigrate(CommandContext& ctx) {
  MigrateOptions options;
  if (!ParseMigrate(ctx, &options)) return;
  ctx.skip_journal = true;  // the transfer journals its own DELs
  // Set on the second run, which replies with what the transfer came to.
  std::shared_ptr<MigrateTransfer> transfer;
  if (ctx.HasMadeFilter()) {
    transfer = std::dynamic_pointer_cast<MigrateTransfer>(std::move(ctx.client.making));
  }
  if (transfer == nullptr) {
    std::vector<MigratingKey> keys;
    for (size_t i = 0; i < options.num_keys; ++i) {
      const std::string_view name = ctx.args[options.first_key + i];
      EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(name), ctx.now_ms);
      if (entry == nullptr) continue;
      const bool repeated = std::any_of(keys.begin(), keys.end(), [&](const MigratingKey& key) {
        return key.hold.entry() == entry;
      });
      if (repeated) continue;
      const int64_t at = entry->expire_at_ms();
      keys.push_back(MigratingKey{std::string(name), EntryReadHold(std::move(entry)), at});
    }
    if (keys.empty()) {
      ctx.reply.SimpleString("NOKEY");
      return;
    }
    if (ctx.client.in_exec) options.timeout_ms = std::min(options.timeout_ms, kInExecWaitMs);
    transfer = std::make_shared<MigrateTransfer>(
        &ctx.spec, std::make_unique<MigrateJob>(&ctx.server, std::move(options), std::move(keys),
                                                ctx.now_ms));
    // Parks whenever the command may, whatever the keys' size: the transfer
    // waits on the network. The connection hands it to FilterMaker::Make,
    // which passes it on to the transfer workers.
    if (ctx.WouldPark(FilterMaker::kInlineBytes)) {
      ctx.client.making = std::move(transfer);
      ctx.parked = true;
      return;
    }
    transfer->Make();
  }
  const MigrateOutcome& outcome = transfer->outcome;
  ctx.client.journal.offset = std::max(ctx.client.journal.offset, outcome.journal_offset);
  for (const std::string& key : outcome.deleted) {
    ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "del", key);
  }
  if (!outcome.error.empty()) {
    ctx.FailWithErrPrefix(outcome.error);
    return;
  }
  ctx.reply.Ok();
}

}  // namespace

std::vector<CommandSpec> MigrateCommands() {
  return {
      {.name = "migrate", .arity = -6, .flags = kCmdWrite | kCmdDangerous, .first_key = 3, .last_key = 3,
       .key_step = 1, .keys_keyword_from = 6, .handler = CmdMigrate,
       .summary = "Atomically transfers a key from one Redis instance to another",
       .group = "generic", .since = "2.6.0"},
  };
}

}  // namespace bloomgate
