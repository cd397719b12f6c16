// Turns journal records back into effects: the one replay path, used by
// start-up (the append-only log) and, next, by a replica applying its
// primary's stream.
//
// A record is applied at the time it was made (commands see that clock, so
// expiry and EXPIRE replay as they ran), as a client of the applier's origin
// (server/durability/journal.h: start-up replay is not journaled again, a
// replica's stream is). Effects are applied directly and never refused;
// commands run through RunCommand under the key locks Apply took.
#pragma once

#include <cstdint>

#include "persistence/append_log.h"
#include "persistence/status.h"
#include "server/clients/client_state.h"
#include "server/durability/journal.h"

namespace bloomgate {

class ServerContext;

// Start-up: loads the snapshot and replays the logs into `server` through a
// JournalApplier (Durability::Load), then reports what could not be applied.
Status LoadDurableState(ServerContext& server);

class JournalApplier {
 public:
  // `origin`: kStartupReplay (the log) or kReplication (a primary's stream,
  // whose writes are journaled again here).
  JournalApplier(ServerContext& server, JournalOrigin origin);

  // An error only for a record that cannot mean anything (a filter record
  // the loader refuses, a command record with no arguments, a malformed
  // effect): the caller stops with it. A command that fails on replay (an
  // allocation failed) or an effect on a key that no longer holds
  // its filter is counted in failures() and logged (the first few), and
  // the replay goes on.
  //
  // Each record is applied under its keys' locks, exclusively (a unit: all
  // of its keys at once, as EXEC), so clients may read while a stream is
  // applied. With an origin that is journaled (kReplication) what is
  // applied is published again, to this server's log and subscribers: the
  // same records, a unit as one unit.
  //
  // Neither origin is judged again by local limits (maxmemory,
  // max-filter-memory, the cuckoo copies rule: filters/admission.h). With
  // kReplication a record that fails anyway (an allocation failure, a state
  // that differs from the primary's) is logged and reported to the journal
  // (Journal::needs_full_sync): the replica needs a full sync.
  Status Apply(const LogRecord& record);

  // A record of the primary's stream, framed as it arrived (kReplication):
  // applied as Apply does, and then the primary's own bytes are published
  // in place of whatever applying them recorded here, so this server's
  // offsets are its primary's and its replicas get the stream byte for
  // byte. An error (a record that does not decode or cannot mean
  // anything) publishes nothing: the replica needs a full sync.
  Status ApplyFramed(std::string_view framed);

  uint64_t failures() const { return failures_; }

 private:
  // Apply, without the report to the journal.
  Status ApplyUnderLocks(const LogRecord& record);
  // One record of any type but kUnit, its key locks held by the caller.
  Status ApplyLocked(const LogRecord& record);
  Status ApplyCommand(const LogRecord& record);
  Status ApplyFilter(const LogRecord& record);
  // Publishes an applied effect record again (a journaled origin).
  void Republish(const LogRecord& record);
  Status ApplyBloomAdded(const LogRecord& record);
  Status ApplyWindowAdded(const LogRecord& record);
  Status ApplyWindowCount(const LogRecord& record);
  void CountFailure(const LogRecord& record, std::string_view why);

  ServerContext& server_;
  ClientState client_;
  // ApplyFramed's record bytes while it applies them; empty otherwise.
  std::string_view published_as_;
  uint64_t failures_ = 0;
};

}  // namespace bloomgate
