#include "server/commands/journal_applier.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <vector>

#include "filters/admission.h"
#include "filters/key_hash.h"
#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_dispatcher.h"
#include "server/commands/windowed_bloom/windowed_bloom_ops.h"
#include "server/context/server_context.h"
#include "server/durability/journal.h"
#include "server/resp/reply_builder.h"

namespace bloomgate {
namespace {

// Replay warnings beyond this many are counted, not logged one by one.
constexpr uint64_t kFailuresLogged = 10;

// A generation past the last one the filter's window can reach
// (window_generations.h) was never current in a live filter: the record is
// damaged, and nothing of it is applied.
Status CheckGenerations(const LogRecord& record, uint64_t last,
                        const std::vector<uint64_t>& generations) {
  for (uint64_t generation : generations) {
    if (generation > last) {
      return Status::Error(record.args[0] + " record with generation " +
                           std::to_string(generation) + ", past the window's last " +
                           std::to_string(last));
    }
  }
  return Status::Ok();
}

bool IsJournalEffect(std::string_view name) {
  return name == kBloomAddedEffect || name == kWindowAddedEffect || name == kWindowCountEffect;
}

// The row a recorded command runs as (a container's subcommand row), or null.
const CommandSpec* ResolveRecordedCommand(ServerContext& server,
                                          const std::vector<std::string>& args) {
  if (args.empty()) return nullptr;
  const CommandSpec* spec = server.commands.Find(args[0]);
  if (spec != nullptr && !spec->subcommands.empty() && args.size() >= 2) {
    const CommandSpec* sub = CommandTable::FindSubcommand(*spec, args[1]);
    if (sub != nullptr) spec = sub;
  }
  return spec;
}

}  // namespace

Status LoadDurableState(ServerContext& server) {
  JournalApplier applier(server, JournalOrigin::kStartupReplay);
  // The snapshot too holds what was acknowledged: it loads past limits
  // lowered since it was saved, as the log replays.
  AsRecordedScope as_recorded;
  Status status =
      server.durability->Load([&applier](const LogRecord& record) { return applier.Apply(record); });
  if (applier.failures() > 0) {
    spdlog::warn("{} log records could not be applied (an allocation failed?)",
                 applier.failures());
  }
  return status;
}

JournalApplier::JournalApplier(ServerContext& server, JournalOrigin origin) : server_(server) {
  client_.authenticated = true;
  client_.journal.origin = origin;
}

namespace {

// The stripes a record's keys lock; *all for a command on every key.
void RecordStripes(ServerContext& server, const LogRecord& record, std::vector<size_t>* stripes,
                   bool* all) {
  if (record.type == LogRecordType::kFilter) {
    stripes->push_back(KeyLocks::StripeOf(record.key));
    return;
  }
  if (record.args.size() < 2) return;
  if (IsJournalEffect(record.args[0])) {
    stripes->push_back(KeyLocks::StripeOf(record.args[1]));
    return;
  }
  const CommandSpec* spec = ResolveRecordedCommand(server, record.args);
  if (spec == nullptr) return;
  std::vector<std::string_view> args(record.args.begin(), record.args.end());
  std::vector<size_t> own;
  bool command_all = false;
  CommandStripes(*spec, args, &own, &command_all);
  *all |= command_all;
  stripes->insert(stripes->end(), own.begin(), own.end());
}

}  // namespace

Status JournalApplier::Apply(const LogRecord& record) {
  const uint64_t failures_before = failures_;
  Status status = ApplyUnderLocks(record);
  if (client_.journal.origin == JournalOrigin::kReplication &&
      (!status.ok() || failures_ != failures_before)) {
    // Diverged: nothing applied later can make it right again.
    if (!server_.journal.needs_full_sync()) {
      spdlog::error("a record of the primary's stream could not be applied{}{}: this replica "
                    "needs a full sync",
                    status.ok() ? "" : ": ", status.message());
    }
    server_.journal.ReportUnapplied();
  }
  return status;
}

Status JournalApplier::ApplyFramed(std::string_view framed) {
  LogRecord record;
  const std::string error = DecodeLogRecord(framed, &record);
  if (!error.empty()) {
    server_.journal.ReportUnapplied();
    return Status::Error("a record of the primary's stream does not decode: " + error);
  }
  published_as_ = framed;
  Status status = Apply(record);
  published_as_ = {};
  return status;
}

Status JournalApplier::ApplyUnderLocks(const LogRecord& record) {
  // Recorded writes were judged where they ran (OriginPolicy): local
  // memory limits do not refuse them again, only a failed allocation can.
  std::optional<AsRecordedScope> as_recorded;
  if (!client_.journal.policy().judged_by_limits) as_recorded.emplace();
  std::vector<size_t> stripes;
  bool all = false;
  if (record.type == LogRecordType::kUnit) {
    for (const LogRecord& member : record.members) {
      RecordStripes(server_, member, &stripes, &all);
    }
  } else {
    RecordStripes(server_, record, &stripes, &all);
  }
  KeyLocks::Guard guard = all ? server_.key_locks.LockAll(/*exclusive=*/true)
                              : server_.key_locks.Lock(stripes, /*exclusive=*/true);
  const bool unit = record.type == LogRecordType::kUnit;
  if (!unit && published_as_.empty()) return ApplyLocked(record);
  // A transaction: its records in order, all of them (the unit arrived
  // whole, or not at all), published again as one unit. A record of the
  // primary's stream: what applying it records here is gathered and
  // dropped, and the primary's bytes stand for it.
  server_.journal.BeginUnit(client_.journal);
  Status status = Status::Ok();
  if (!unit) status = ApplyLocked(record);
  for (size_t i = 0; unit && i < record.members.size() && status.ok(); ++i) {
    status = ApplyLocked(record.members[i]);
  }
  if (published_as_.empty()) {
    server_.journal.EndUnit(client_.journal, record.time_ms);
  } else {
    server_.journal.EndUnitAs(client_.journal, status.ok() ? published_as_ : std::string_view());
  }
  return status;
}

Status JournalApplier::ApplyLocked(const LogRecord& record) {
  if (record.type == LogRecordType::kFilter) return ApplyFilter(record);
  if (record.type == LogRecordType::kUnit) return Status::Error("a unit inside a unit");
  if (record.args.empty()) return Status::Error("command record with no arguments");
  Status status = Status::Ok();
  if (record.args[0] == kBloomAddedEffect) {
    status = ApplyBloomAdded(record);
  } else if (record.args[0] == kWindowAddedEffect) {
    status = ApplyWindowAdded(record);
  } else if (record.args[0] == kWindowCountEffect) {
    status = ApplyWindowCount(record);
  } else {
    return ApplyCommand(record);
  }
  if (status.ok()) Republish(record);
  return status;
}

void JournalApplier::Republish(const LogRecord& record) {
  std::vector<std::string_view> args(record.args.begin(), record.args.end());
  server_.journal.RecordCommand(client_.journal, record.time_ms, args);
}

Status JournalApplier::ApplyCommand(const LogRecord& record) {
  std::vector<std::string_view> args(record.args.begin(), record.args.end());
  client_.replay_time_ms = record.time_ms;
  std::string out;
  ReplyBuilder reply(&out);
  // A command that succeeded when it was journaled succeeds again on the
  // same state: local limits do not judge it again (Apply), so only a
  // failed allocation or a state that differs refuses it. The write it
  // stands for is then lost, which is worth a warning. Run with its key locks held (Apply took them); what it writes
  // is journaled by RunCommand for a journaled origin.
  const CommandSpec* spec = ResolveRecordedCommand(server_, record.args);
  if (spec == nullptr || !CommandTable::ArityMatches(*spec, args.size())) {
    CountFailure(record, "not a command this server knows, or a wrong number of arguments");
    return Status::Ok();
  }
  if (RunCommand(server_, client_, *spec, args, reply, /*locks_held=*/true) ==
      CommandOutcome::kFailed) {
    CountFailure(record, std::string_view(out).substr(1, out.find('\r') - 1));
  }
  return Status::Ok();
}

Status JournalApplier::ApplyFilter(const LogRecord& record) {
  std::unique_ptr<FilterLoader> loader;
  Status status =
      FilterLoader::Begin(record.header.kind, record.header.bytes, record.header.payload_bytes,
                          server_.filter_limits(), &server_.budget, &loader);
  if (status.ok() && record.has_payload) {
    status = loader->Write(0, reinterpret_cast<const uint8_t*>(record.payload.data()),
                           record.payload.size());
  }
  AnyFilter filter;
  if (status.ok()) status = loader->Finish(&filter);
  if (!status.ok()) return status.WithContext("filter record for key '" + record.key + "': ");
  // A filter record over a live key is a windowed MERGE into an existing
  // destination, which changed that filter in place where it ran: the key
  // keeps its deadline. Every other filter record stores a new key.
  const EntryPtr replaced = server_.keyspace.Find(record.key, record.time_ms);
  const int64_t expire_at_ms = replaced == nullptr ? 0 : replaced->expire_at_ms();
  auto entry = std::make_shared<KeyEntry>(std::move(filter));
  server_.keyspace.Put(record.key, entry, expire_at_ms);
  server_.journal.RecordFilter(client_.journal, record.time_ms, record.key, entry->filter(),
                               record.has_payload);
  return Status::Ok();
}

Status JournalApplier::ApplyBloomAdded(const LogRecord& record) {
  // KEY COUNTED ITEM...: COUNTED has one byte per item.
  const std::vector<std::string>& args = record.args;
  if (args.size() < 4 || args[2].size() != args.size() - 3) {
    return Status::Error(std::string(kBloomAddedEffect) + " record with " +
                         std::to_string(args.size()) + " arguments does not match its counts");
  }
  EntryPtr entry = server_.keyspace.Find(args[1], record.time_ms);
  ScalableBloomFilter* filter = entry == nullptr ? nullptr : entry->bloom();
  if (filter == nullptr) {
    // The key was deleted or expired while the adds ran (they went into a
    // filter that was already gone): nothing to re-apply.
    CountFailure(record, "no Bloom filter under the key");
    return Status::Ok();
  }
  const std::string& counted = args[2];
  if (counted.find_first_not_of("01") != std::string::npos) {
    return Status::Error(std::string(kBloomAddedEffect) + " record with counts other than 0/1");
  }
  for (size_t i = 3; i < args.size(); ++i) {
    filter->ReplayAdd(filter->Hash(args[i]), counted[i - 3] == '1');
  }
  entry->MarkModified();
  return Status::Ok();
}

Status JournalApplier::ApplyWindowAdded(const LogRecord& record) {
  // KEY FLAGS (GENERATION ITEM)...: FLAGS has one byte per item.
  const std::vector<std::string>& args = record.args;
  if (args.size() < 5 || (args.size() - 3) % 2 != 0 || args[2].size() != (args.size() - 3) / 2) {
    return Status::Error(std::string(kWindowAddedEffect) + " record with " +
                         std::to_string(args.size()) + " arguments does not match its counts");
  }
  // Checked whole before anything is applied: a damaged record changes nothing.
  std::vector<uint64_t> generations;
  generations.reserve(args[2].size());
  for (size_t i = 0; i < args[2].size(); ++i) {
    bool counted = false, flipped = false;
    uint64_t generation = 0;
    if (!ParseWindowAddFlag(args[2][i], &counted, &flipped) ||
        !ParseUint64(args[3 + 2 * i], &generation)) {
      return Status::Error(std::string(kWindowAddedEffect) + " record with a bad flag or generation");
    }
    generations.push_back(generation);
  }
  EntryPtr entry = server_.keyspace.Find(args[1], record.time_ms);
  WindowedBloomFilter* filter = entry == nullptr ? nullptr : entry->get<WindowedBloomFilter>();
  if (filter == nullptr) {
    CountFailure(record, "no windowed Bloom filter under the key");
    return Status::Ok();
  }
  if (Status s = CheckGenerations(record, filter->ring().last_generation(), generations);
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < generations.size(); ++i) {
    bool counted = false, flipped = false;
    ParseWindowAddFlag(args[2][i], &counted, &flipped);
    filter->ReplayAdd(filter->Hash(args[4 + 2 * i]), generations[i], /*seen=*/!counted, flipped);
  }
  entry->MarkModified();
  return Status::Ok();
}

Status JournalApplier::ApplyWindowCount(const LogRecord& record) {
  // KEY OPS (GENERATION ITEM)...: OPS has one byte per item, '+' or '-'.
  const std::vector<std::string>& args = record.args;
  if (args.size() < 5 || (args.size() - 3) % 2 != 0 || args[2].size() != (args.size() - 3) / 2) {
    return Status::Error(std::string(kWindowCountEffect) + " record with " +
                         std::to_string(args.size()) + " arguments does not match its counts");
  }
  // Checked whole before anything is applied: a damaged record changes nothing.
  std::vector<uint64_t> generations;
  generations.reserve(args[2].size());
  for (size_t i = 0; i < args[2].size(); ++i) {
    uint64_t generation = 0;
    if ((args[2][i] != '+' && args[2][i] != '-') || !ParseUint64(args[3 + 2 * i], &generation)) {
      return Status::Error(std::string(kWindowCountEffect) + " record with a bad op or generation");
    }
    generations.push_back(generation);
  }
  EntryPtr entry = server_.keyspace.Find(args[1], record.time_ms);
  WindowedCountingBloomFilter* filter =
      entry == nullptr ? nullptr : entry->get<WindowedCountingBloomFilter>();
  if (filter == nullptr) {
    CountFailure(record, "no windowed counting Bloom filter under the key");
    return Status::Ok();
  }
  if (Status s = CheckGenerations(record, filter->ring().last_generation(), generations);
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < generations.size(); ++i) {
    const KeyHash h = filter->Hash(args[4 + 2 * i]);
    if (args[2][i] == '-') {
      filter->ReplayRemove(h, generations[i]);
    } else if (filter->ReplayAdd(h, generations[i]) != FilterStatus::kOk) {
      // Only when the generation's memory could not be allocated: that add is lost.
      CountFailure(record, "a generation refused an add (allocation failed)");
    }
  }
  entry->MarkModified();
  return Status::Ok();
}

void JournalApplier::CountFailure(const LogRecord& record, std::string_view why) {
  if (++failures_ <= kFailuresLogged) {
    spdlog::warn("replaying {}: {}", record.args.empty() ? "record" : record.args[0], why);
  }
}

}  // namespace bloomgate
