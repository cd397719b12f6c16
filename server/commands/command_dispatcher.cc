#include "server/commands/command_dispatcher.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <optional>

#include "server/base/clock.h"
#include "server/commands/arg_parser.h"
#include "server/commands/cluster/cluster_routing.h"
#include "server/commands/command_context.h"
#include "server/commands/command_events.h"
#include "server/commands/errors.h"
#include "server/keyspace/transfer_workers.h"
#include "server/replication/replication.h"

namespace bloomgate {
namespace {

std::string Upper(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return upper;
}

// SLOWLOG and LATENCY: both thresholds are read from atomics, so a fast
// command costs two relaxed loads here and takes no lock.
void NoteSlowCommand(ServerContext& server, ClientState& client, const CommandSpec& spec,
                     std::span<const std::string_view> args, int64_t now_ms, int64_t usec) {
  const int64_t slowlog_us = server.slowlog_threshold_us();
  if (slowlog_us >= 0 && usec >= slowlog_us) {
    size_t redact_from =
        (spec.flags & kCmdRedactArgs) ? (spec.parent != nullptr ? 2 : 1) : args.size();
    if (spec.full_name == "config|set") {
      // A password set at runtime never reaches SLOWLOG (Redis redacts its
      // sensitive configs the same way); the whole list, to keep it simple.
      for (size_t i = 2; i < args.size(); i += 2) {
        if (EqualsIgnoreCase(args[i], "requirepass") ||
            EqualsIgnoreCase(args[i], "tls-key-file-pass")) {
          redact_from = 2;
        }
      }
    } else if (spec.full_name == "acl|setuser") {
      // The rules may carry passwords (">secret"): only the user's name shows.
      redact_from = std::min<size_t>(3, args.size());
    }
    server.slow_log.Add(args, redact_from, now_ms / 1000, usec,
                        client.info ? client.info->addr : std::string(),
                        client.info ? client.info->name() : std::string(),
                        server.slowlog_max_len());
  }
  const uint64_t latency_ms = server.latency_threshold_ms();
  if (latency_ms > 0 && static_cast<uint64_t>(usec / 1000) >= latency_ms) {
    server.latency.Add((spec.flags & kCmdFast) ? "fast-command" : "command", now_ms / 1000,
                       static_cast<uint64_t>(usec / 1000));
  }
}

// The arguments a monitor may see: Redis redacts AUTH's arguments and the
// user name and password after HELLO's AUTH ("(redacted)", as SLOWLOG).
// Admin commands (ACL SETUSER, CONFIG SET) are not shown at all.
void FeedMonitors(ServerContext& server, const ClientState& client, const CommandSpec& spec,
                  std::span<const std::string_view> args) {
  static constexpr std::string_view kRedacted = "(redacted)";
  std::vector<std::string_view> shown(args.begin(), args.end());
  if (spec.full_name == "hello") {
    // HELLO [protover [AUTH user pass] [SETNAME name]]
    for (size_t i = 2; i < shown.size(); ++i) {
      const size_t more = shown.size() - 1 - i;
      if (EqualsIgnoreCase(shown[i], "AUTH") && more >= 2) {
        shown[i + 1] = shown[i + 2] = kRedacted;
        i += 2;
      } else if (EqualsIgnoreCase(shown[i], "SETNAME") && more >= 1) {
        ++i;
      } else {
        break;
      }
    }
  } else if (spec.flags & kCmdRedactArgs) {
    for (size_t i = spec.parent != nullptr ? 2 : 1; i < shown.size(); ++i) shown[i] = kRedacted;
  }
  const int64_t unix_us = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  server.monitors.Publish(
      FormatMonitorLine(unix_us, client.info ? std::string_view(client.info->addr) : "", shown),
      server.client_output_buffer_limit());
}

// Whether the strictest pause in force (CLIENT PAUSE's, a manual failover's)
// holds this command now. WRITE: rows that may write,
// and EXEC of a transaction that queued one; ALL: everything but CLIENT
// UNPAUSE (Redis 7 holds that too, so only the timeout could end a pause
// ALL; Bloomgate lets the operator end it).
bool HeldByPause(ServerContext& server, const ClientState& client, const CommandSpec& spec) {
  const int64_t now_ms = NowMs();
  const PauseMode mode = server.pause.ModeAt(now_ms);
  if (mode == PauseMode::kNone) server.pause.ClearIfEnded(now_ms);
  if (mode == PauseMode::kAll) return spec.full_name != "client|unpause";
  if (mode != PauseMode::kWrite) return false;
  if (spec.flags & kCmdWrite) return true;
  if (spec.full_name == "exec" && client.in_multi) {
    return std::any_of(client.queued.begin(), client.queued.end(), [](const QueuedCommand& q) {
      return (q.spec->flags & kCmdWrite) != 0;
    });
  }
  return false;
}

// What a subscribed RESP2 client may run (Redis 7.0's processCommand list,
// without the shard channels Bloomgate does not have).
bool AllowedWhileSubscribed(const CommandSpec& spec) {
  static constexpr std::array<std::string_view, 7> kAllowed = {
      "ping", "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "quit", "reset"};
  return std::find(kAllowed.begin(), kAllowed.end(), spec.full_name) != kAllowed.end();
}

}  // namespace

const AclUser* CurrentAclUser(ServerContext& server, ClientState& client) {
  // One acquire load per command while nothing changed.
  if (client.user_deleted) return nullptr;
  const uint64_t version = server.acl.version();
  if (client.acl_version != version || client.user == nullptr) {
    std::shared_ptr<const AclUser> now =
        server.acl.Find(client.user != nullptr ? client.user->name : "default");
    client.acl_version = version;
    if (now == nullptr) {
      client.user_deleted = true;
      return nullptr;
    }
    client.user = std::move(now);
  }
  return client.user.get();
}

AclDenial CheckClientAcl(ServerContext& server, ClientState& client, const CommandSpec& spec,
                         std::span<const std::string_view> args) {
  // A replayed record is a write that passed these checks when it ran;
  // judging it again against today's users (a "default" the config now
  // limits) would lose acknowledged data.
  if ((spec.flags & kCmdNoAuth) || !client.journal.policy().checks_acl) return AclDenial::kNone;
  const AclUser* user = CurrentAclUser(server, client);
  size_t denied_arg = 0;
  AclDenial denial =
      user == nullptr ? AclDenial::kCommand : CheckAclPermission(*user, spec, args, &denied_arg);
  if (denial == AclDenial::kNone) return denial;
  WorkerCounters& counters = server.stats.worker(client.worker_index);
  if (denial == AclDenial::kCommand) Bump(counters.acl_denied_commands);
  if (denial == AclDenial::kKey) Bump(counters.acl_denied_keys);
  if (denial == AclDenial::kChannel) Bump(counters.acl_denied_channels);
  // ACL LOG, as Redis's addACLLogEntry: what was refused, and to whom.
  AclLogEntry entry;
  entry.reason = denial == AclDenial::kCommand ? "command"
                 : denial == AclDenial::kKey   ? "key"
                                               : "channel";
  entry.context = client.in_multi || client.in_exec ? "multi" : "toplevel";
  entry.object = denial == AclDenial::kCommand || denied_arg >= args.size()
                     ? std::string(spec.full_name)
                     : std::string(args[denied_arg]);
  entry.username = user != nullptr ? user->name : "default";
  const int64_t now_ms = NowMs();
  if (client.info) entry.client_info = client.info->Describe(now_ms, server.keyspace);
  server.acl_log.Add(std::move(entry), now_ms);
  return denial;
}

void CommandKeys(const CommandSpec& spec, std::span<const std::string_view> args,
                 std::vector<KeyRef>* keys, bool* all) {
  *all = (spec.flags & kCmdAllKeys) != 0;
  keys->clear();
  if (*all) return;
  CommandTable::ForEachKeyIndex(spec, args,
                                [&](size_t index) { keys->push_back(MakeKeyRef(args[index])); });
}

void CommandStripes(const CommandSpec& spec, std::span<const std::string_view> args,
                    std::vector<size_t>* stripes, bool* all) {
  std::vector<KeyRef> keys;
  CommandKeys(spec, args, &keys, all);
  stripes->clear();
  for (const KeyRef& key : keys) stripes->push_back(KeyLocks::StripeOf(key));
}

namespace {

// The first entry `spec` would write that owes a snapshot a big copy (see
// SnapshotCopier::ShouldPark), or null. Looked up without key locks and
// without removing anything: a cut that arms the entry after this look is
// handled inline by FindFilter, so this only decides who waits where.
EntryPtr EntryOwingCopy(ServerContext& server, const CommandSpec& spec,
                        std::span<const std::string_view> args, int64_t now_ms) {
  if ((spec.flags & kCmdWrite) == 0 || (spec.flags & kCmdAllKeys) != 0) return nullptr;
  std::vector<size_t> indices;
  CommandTable::KeyIndices(spec, args.size(), &indices);
  for (size_t index : indices) {
    EntryPtr entry = server.keyspace.Peek(MakeKeyRef(args[index]), now_ms);
    if (entry != nullptr && SnapshotCopier::ShouldPark(*entry)) return entry;
  }
  return nullptr;
}

// Whether a key of the command is stored but due at `now_ms` (its lookup
// would remove it).
bool AnyKeyDue(ServerContext& server, std::span<const KeyRef> keys, int64_t now_ms) {
  if (!server.keyspace.HasDeadlines()) return false;
  for (const KeyRef& key : keys) {
    if (server.keyspace.StoredButDue(key, now_ms)) return true;
  }
  return false;
}

}  // namespace

// A command's keys and their stripes, on the stack for the usual few (no
// allocation per request: the vectors this replaced were 3 of BF.EXISTS's
// 3 mallocs per request under callgrind, ~450 instructions with the frees);
// commands naming more keys spill to the vectors.
class CommandKeyBuffer {
 public:
  static constexpr size_t kInline = 4;

  void Collect(const CommandSpec& spec, std::span<const std::string_view> args, bool* all) {
    *all = (spec.flags & kCmdAllKeys) != 0;
    if (*all) return;
    CommandTable::ForEachKeyIndex(spec, args, [&](size_t index) {
      const KeyRef key = MakeKeyRef(args[index]);
      if (count_ < kInline) {
        keys_[count_] = key;
        stripes_[count_] = KeyLocks::StripeOf(key);
      } else {
        if (count_ == kInline) {
          more_keys_.assign(keys_.begin(), keys_.end());
          more_stripes_.assign(stripes_.begin(), stripes_.end());
        }
        more_keys_.push_back(key);
        more_stripes_.push_back(KeyLocks::StripeOf(key));
      }
      ++count_;
    });
  }
  std::span<const KeyRef> keys() const {
    return count_ <= kInline ? std::span<const KeyRef>(keys_.data(), count_)
                             : std::span<const KeyRef>(more_keys_);
  }
  std::span<const size_t> stripes() const {
    return count_ <= kInline ? std::span<const size_t>(stripes_.data(), count_)
                             : std::span<const size_t>(more_stripes_);
  }

 private:
  size_t count_ = 0;
  std::array<KeyRef, kInline> keys_;
  std::array<size_t, kInline> stripes_;
  std::vector<KeyRef> more_keys_;
  std::vector<size_t> more_stripes_;
};

namespace {

// Takes the connection's effect storage (CommandContext::ReusedEffect) back
// from a command, emptied, its capacity kept up to a bound: a BF.MADD of a
// million items does not pin 16 MB to its connection.
void ReturnEffectStorage(CommandContext& ctx) {
  constexpr size_t kKeptArgs = 1024;
  ctx.effect.clear();
  if (ctx.effect.capacity() <= kKeptArgs) ctx.effect.swap(ctx.client.effect_storage);
}

}  // namespace

void (*after_handler_hook)(const CommandSpec& spec) = nullptr;

CommandOutcome RunCommand(ServerContext& server, ClientState& client, const CommandSpec& spec,
                          std::span<const std::string_view> args, ReplyBuilder& reply,
                          bool locks_held, std::span<const KeyRef> keys) {
  const bool write = (spec.flags & kCmdWrite) != 0;
  std::optional<KeyLocks::Guard> guard;
  CommandKeyBuffer own_keys;
  // The time the command runs at, read once after its locks are taken: the
  // record's during replay. Every check below asks wall_now(), which reads
  // the clock at its first use only (a read is ~22 ns; a command made six).
  std::optional<int64_t> locked_now;
  auto wall_now = [&locked_now] {
    if (!locked_now) locked_now = NowMs();
    return *locked_now;
  };
  if (!locks_held || keys.empty()) {
    bool all = false;
    own_keys.Collect(spec, args, &all);
    keys = own_keys.keys();
    if (!locks_held) {
      const std::span<const size_t> stripes = own_keys.stripes();
      // Writes hold their keys exclusively (except order-free Bloom adds), so
      // that two writes to one key are logged in the order they took effect:
      // replaying a CBF.DEL before the CBF.ADD it followed would lose the item.
      if (all) {
        guard.emplace(server.key_locks.LockAll(/*exclusive=*/write));
      } else if (!stripes.empty()) {
        bool exclusive = (write && (spec.flags & kCmdOrderFree) == 0) ||
                         (spec.flags & kCmdExclusiveKeys) != 0;
        guard.emplace(server.key_locks.Lock(stripes, exclusive));
        // The ordering window: a command holding its keys shared
        // (a read, an order-free Bloom add) must not remove one that expired
        // (journaled as DEL) while another shared holder, whose clock read
        // a moment earlier found it alive, still adds to it: that add would
        // reach the log after the DEL though it took effect before. So a
        // shared locker that will find a key due takes its keys exclusively
        // instead, after the other holders are done. Judged at the now_ms
        // the command runs with, so the handler's lookup agrees; costs one
        // load while no key has a deadline.
        if (!client.journal.policy().recorded_clock) locked_now = NowMs();
        if (!exclusive && locked_now && AnyKeyDue(server, keys, *locked_now)) {
          server.key_locks.MakeExclusive(&*guard);
        }
      }
    }
  }
  // Redis Cluster's routing, under the keys' locks: a key of a migrating
  // slot cannot move away between its presence check and the handler.
  // EXEC judges its queue itself (transaction_commands.cc). The second run
  // of work that took effect off the loop (MIGRATE's transfer: its keys have
  // moved) only replies: routed again, a slot settled meanwhile would turn
  // the finished move into -MOVED.
  if (!locks_held && !TransferDoneFor(client.making.get(), &spec) &&
      ClusterRoutes(server, client)) {
    // A write that got its locks just after a MIGRATE began holding one of
    // its keys (the look before the locks missed the hold) parks here until
    // the hold ends: the MIGRATE then has removed the key, and the gate must
    // send the write after it (-ASK), not run it on a key that left ("key
    // does not exist", or a new key left behind in the moving slot). Under
    // the locks no new hold can begin, so the gate's answer stays true.
    if (client.journal.policy().may_park && KeyEntry::AnySnapshotCopyOwed()) {
      EntryPtr held = EntryOwingCopy(server, spec, args, wall_now());
      if (held != nullptr) {
        guard.reset();
        client.parked_on = std::move(held);
        return CommandOutcome::kParked;
      }
    }
    const RoutedCommand routed{&spec, args};
    std::string refusal;
    if (!ClusterServes(server, client, std::span<const RoutedCommand>(&routed, 1),
                       wall_now(), &refusal)) {
      reply.Error(refusal);
      Bump(server.stats.worker(client.worker_index).commands[spec.id].rejected_calls);
      return CommandOutcome::kFailed;
    }
  }
  Durability& durability = *server.durability;
  const OriginPolicy& policy = client.journal.policy();
  if (write && policy.refused_on_log_failure && durability.write_error()) {
    // As Redis: once the log cannot be written, no write is acknowledged.
    reply.Error(errors::kLogWriteFailed);
    return CommandOutcome::kFailed;
  }
  if (write && client.journal.origin == JournalOrigin::kClient) {
    // A replica takes writes from its primary's stream only (replica-read-only);
    // a primary refuses them while too few replicas acked (min-replicas-*).
    if (server.replication->refuses_writes()) {
      reply.Error(errors::kReadOnlyReplica);
      return CommandOutcome::kFailed;
    }
    if (!server.replication->EnoughGoodReplicas(wall_now())) {
      reply.Error(errors::kNoReplicas);
      return CommandOutcome::kFailed;
    }
  }
  // An effect record (a Bloom add's) holds at most the arguments, a one-byte
  // count per item and a longer name.
  if (write &&
      !server.journal.CanTake(client.journal, CommandRecordBodyBytes(args) + args.size() + 64)) {
    // Refused before it runs: a write the log cannot hold could not be
    // acknowledged (only a multi-GB argument list can get here).
    reply.Error(errors::kTooLargeToLog);
    return CommandOutcome::kFailed;
  }
  WorkerCounters& counters = server.stats.worker(client.worker_index);
  [[maybe_unused]] const size_t reply_start = reply.buffer()->size();
  auto start = std::chrono::steady_clock::now();
  // Set first, so CLIENT INFO / LIST describe the command being run.
  if (client.info) client.info->last_command.store(&spec, std::memory_order_relaxed);
  const int64_t now_ms = policy.recorded_clock ? client.replay_time_ms
                         : client.in_exec         ? client.exec_time_ms
                                                  : wall_now();
  CommandContext ctx{args, spec, reply, client, server, now_ms};
  ctx.window_clock_ms = WindowClockAt(start);
  ctx.keys = keys;
  // Keyspace events of the filter families (command_events.h): null unless
  // notify-keyspace-events has class d and the row publishes some.
  const CommandEvents* events = write ? EventsOf(server, spec) : nullptr;
  const bool existed = events != nullptr && KeyExistedBefore(server, keys, now_ms);
  spec.handler(ctx);
  if (ctx.parked) {
    // The handler asked for its filter to be made off the loop (MakeFilter)
    // and did nothing else: counted, journaled and shown when it runs again.
    assert(!locks_held && reply.buffer()->size() == reply_start && !ctx.failed);
    return CommandOutcome::kParked;
  }
  Bump(counters.commands_processed);
  if (after_handler_hook != nullptr) after_handler_hook(spec);
  const bool failed = ctx.failed;
  // Every handler reports its failure as a value; the reply's first byte is
  // checked only to catch a handler that wrote its error another way.
  assert(failed == (reply.buffer()->size() > reply_start &&
                    (*reply.buffer())[reply_start] == '-'));
  if (write && !failed) {
    durability.CountChanges(1);
    // Journaled while the key locks are still held (see above).
    if (!ctx.skip_journal) {
      server.journal.RecordCommand(client.journal, now_ms, ctx.effect.empty() ? args : ctx.effect);
    }
    if (events != nullptr) {
      PublishCommandEvents(ctx, *events, existed,
                           std::string_view(*reply.buffer()).substr(reply_start));
    }
  }
  const auto nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  const int64_t usec = nsec / 1000;
  CommandCounters& stats = counters.commands[spec.id];
  Bump(stats.calls);
  Bump(stats.usec, static_cast<uint64_t>(usec));
  Bump(stats.usec_buckets[CommandCounters::BucketOf(static_cast<uint64_t>(usec))]);
  if (server.stats.latency_tracking.load(std::memory_order_relaxed)) {
    stats.RecordLatency(static_cast<uint64_t>(nsec));
  }
  if (failed) Bump(stats.failed_calls);
  if (policy.observed) NoteSlowCommand(server, client, spec, args, now_ms, usec);
  if (ctx.effect.capacity() != 0) ReturnEffectStorage(ctx);
  // After the command ran, as Redis's call() feeds its monitors: EXEC's
  // commands show before the "exec" line.
  if (server.monitors.active() && policy.observed && (spec.flags & kCmdAdmin) == 0 &&
      !server.durability->loading()) {
    FeedMonitors(server, client, spec, args);
  }
  return failed ? CommandOutcome::kFailed : CommandOutcome::kDone;
}

namespace {

// The row `name` names: the connection's last one if the bytes are the same
// (see ClientState::last_command_name), else the table's, remembered.
const CommandSpec* FindCommand(ServerContext& server, ClientState& client, std::string_view name) {
  if (client.last_command_spec != nullptr && name == client.last_command_name) {
    return client.last_command_spec;
  }
  const CommandSpec* spec = server.commands.Find(name);
  if (spec != nullptr) {
    client.last_command_name.assign(name);  // a row's name: at most a few dozen bytes
    client.last_command_spec = spec;
  }
  return spec;
}

CommandOutcome DispatchOnce(ServerContext& server, ClientState& client,
                            std::span<const std::string_view> args, ReplyBuilder& reply) {
  WorkerCounters& counters = server.stats.worker(client.worker_index);
  reply.set_error_observer(&server.error_stats);
  const CommandSpec* spec = FindCommand(server, client, args[0]);
  auto reject = [&](std::string_view text) {
    if (client.in_multi) client.multi_dirty = true;
    reply.Error(text);
  };
  if (spec == nullptr) {
    reject(errors::UnknownCommand(args));
    return CommandOutcome::kFailed;
  }
  if (!spec->subcommands.empty() && !(args.size() == 1 && spec->handler != nullptr)) {
    // A container (CLIENT, CONFIG, ...) runs the row of its subcommand; one
    // with a handler of its own (COMMAND) also runs alone.
    if (args.size() < 2) {
      reject(errors::WrongArity(spec->full_name));
      Bump(counters.commands[spec->id].rejected_calls);
      return CommandOutcome::kFailed;
    }
    const CommandSpec* sub = CommandTable::FindSubcommand(*spec, args[1]);
    if (sub == nullptr) {
      reject(errors::UnknownSubcommand(args[1], Upper(spec->name)));
      Bump(counters.commands[spec->id].rejected_calls);
      return CommandOutcome::kFailed;
    }
    spec = sub;
  }
  if (!CommandTable::ArityMatches(*spec, args.size())) {
    reject(errors::WrongArity(spec->full_name));
    Bump(counters.commands[spec->id].rejected_calls);
    return CommandOutcome::kFailed;
  }
  if (!client.authenticated && (spec->flags & kCmdNoAuth) == 0) {
    reject(errors::kNoAuth);
    Bump(counters.commands[spec->id].rejected_calls);
    return CommandOutcome::kFailed;
  }
  // While the data loads (the port is already open), only the rows flagged
  // as Redis flags them answer; the loader's own replay is exempt. Checked
  // before MULTI queues and before the ACL check, as Redis does (processCommand
  // answers -LOADING before it looks at the user's permissions).
  if ((spec->flags & kCmdLoading) == 0 && client.journal.policy().refused_while_loading &&
      server.durability->loading()) {
    reject(errors::kLoading);
    Bump(counters.commands[spec->id].rejected_calls);
    return CommandOutcome::kFailed;
  }
  // Checked when queued and again at EXEC (transaction_commands.cc), as Redis.
  if (AclDenial denial = CheckClientAcl(server, client, *spec, args);
      denial != AclDenial::kNone) {
    if (client.user_deleted) {
      // Its user was deleted: the close ACL DELUSER posted is on its way.
      client.authenticated = false;
      client.close_after_reply = true;
      reject(errors::kNoAuth);
    } else if (denial == AclDenial::kCommand) {
      reject(errors::NoPermissionCommand(client.user->name, spec->full_name));
    } else if (denial == AclDenial::kChannel) {
      reject(errors::kNoPermissionChannel);
    } else {
      reject(errors::kNoPermissionKey);
    }
    Bump(counters.commands[spec->id].rejected_calls);
    return CommandOutcome::kFailed;
  }
  if (client.monitor && (spec->flags & (kCmdWrite | kCmdReadOnly)) != 0) {
    // Redis runs a monitor as a replica, and a replica may not touch keys;
    // it may still PING, RESET or QUIT.
    reject(errors::kReplicaKeyspace);
    Bump(counters.commands[spec->id].rejected_calls);
    return CommandOutcome::kFailed;
  }
  // Redis 7.0: a RESP2 client subscribed to a channel or pattern reads
  // pushed messages on the same connection as replies, so it may run only
  // what keeps that stream readable; a RESP3 client tells them apart.
  if (client.subscribed() && !client.resp3 && !AllowedWhileSubscribed(*spec)) {
    reject(errors::OnlyPubSubCommands(spec->full_name));
    Bump(counters.commands[spec->id].rejected_calls);
    return CommandOutcome::kFailed;
  }
  // CLIENT PAUSE: checked after every refusal (a wrong command is answered
  // at once, as in Redis) and before MULTI queues. A monitor is a replica to
  // Redis, and replicas are never paused; a replay is not a client.
  if (server.pause.engaged() && client.journal.policy().pausable && !client.monitor &&
      HeldByPause(server, client, *spec)) {
    return CommandOutcome::kPaused;
  }
  if (client.in_multi && (spec->flags & kCmdNoMulti) == 0) {
    // Redis Cluster: a command that would be redirected is refused now and
    // the transaction flagged (EXEC then answers -EXECABORT).
    if (ClusterRoutes(server, client)) {
      const RoutedCommand routed{spec, args};
      std::string refusal;
      if (!ClusterServes(server, client, std::span<const RoutedCommand>(&routed, 1), NowMs(),
                         &refusal)) {
        reject(refusal);
        Bump(counters.commands[spec->id].rejected_calls);
        return CommandOutcome::kFailed;
      }
    }
    QueuedCommand queued;
    queued.spec = spec;
    queued.args.assign(args.begin(), args.end());
    client.queued.push_back(std::move(queued));
    if (client.info) {
      client.info->multi_commands.store(client.queued.size(), std::memory_order_relaxed);
    }
    reply.SimpleString("QUEUED");
    return CommandOutcome::kQueued;
  }
  // WAIT parks its client the way CLIENT PAUSE does, never its loop: the
  // connection runs it again at each replica's ACK and at its deadline.
  // Arguments WaitDone cannot read are the handler's to refuse.
  if (spec->name == "wait" && spec->parent == nullptr && client.info != nullptr) {
    int64_t replicas = 0, timeout_ms = 0, acked = 0;
    if (ParseInt64(args[1], &replicas) && replicas >= 0 && ParseInt64(args[2], &timeout_ms) &&
        timeout_ms >= 0 && !server.replication->is_replica() &&
        !server.replication->WaitDone(client.info.get(), static_cast<uint64_t>(replicas),
                                      timeout_ms, NowMs(), &acked)) {
      return CommandOutcome::kPaused;
    }
  }
  if (client.journal.policy().may_park && KeyEntry::AnySnapshotCopyOwed()) {
    // A writer never copies a big filter on its event loop
    // (642 ms for 614 MB, stalling every connection of that loop); it waits
    // for the snapshot copier instead, before taking any lock. EXEC waits
    // for the copies its queued writes would make, before it runs any.
    const int64_t now_ms = NowMs();
    EntryPtr owed;
    if (client.in_multi && spec->name == "exec") {
      for (const QueuedCommand& queued : client.queued) {
        std::vector<std::string_view> queued_args(queued.args.begin(), queued.args.end());
        owed = EntryOwingCopy(server, *queued.spec, queued_args, now_ms);
        if (owed != nullptr) break;
      }
    } else {
      owed = EntryOwingCopy(server, *spec, args, now_ms);
    }
    if (owed != nullptr) {
      client.parked_on = std::move(owed);
      return CommandOutcome::kParked;
    }
  }
  return RunCommand(server, client, *spec, args, reply, /*locks_held=*/false);
}

}  // namespace

CommandOutcome DispatchCommand(ServerContext& server, ClientState& client,
                               std::span<const std::string_view> args, ReplyBuilder& reply) {
  const CommandOutcome outcome = DispatchOnce(server, client, args, reply);
  if (outcome != CommandOutcome::kParked && outcome != CommandOutcome::kPaused) {
    DropUntakenFilter(server, client);
    // ASKING lasts one command, or one transaction (Redis's resetClient).
    if (client.cluster_asking && !client.in_multi && !EqualsIgnoreCase(args[0], "asking")) {
      client.cluster_asking = false;
    }
  }
  return outcome;
}

void DropUntakenFilter(ServerContext& server, ClientState& client) {
  // A filter made for a command whose second run did not take it (refused
  // before its handler, or the key was created meanwhile): it may be
  // gigabytes, so it is freed off the loop, still charged until it is gone.
  if (client.making != nullptr) server.lazy_freer.Free(std::move(client.making));
}

}  // namespace bloomgate
