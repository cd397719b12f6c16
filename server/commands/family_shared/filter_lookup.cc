#include "server/commands/family_shared/filter_lookup.h"

#include "server/base/clock.h"

#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/context/server_context.h"

namespace bloomgate {

FilterStore StoreFor(CommandContext& ctx) {
  FilterStore store = StoreAt(ctx.server, ctx.client.journal, ctx.now_ms, ctx.WindowNowMs(),
                              /*write=*/(ctx.spec.flags & kCmdWrite) != 0);
  store.counters = &ctx.counters();
  return store;
}

FilterStore StoreOf(ServerContext& server, JournalSession& session, int64_t now_ms, bool write) {
  return StoreAt(server, session, now_ms, WindowClockMs(), write);
}

FilterStore StoreAt(ServerContext& server, JournalSession& session, int64_t now_ms,
                    int64_t window_now_ms, bool write) {
  return FilterStore{.keyspace = server.keyspace,
                     .config = server.config,
                     .limits = server.filter_limits(),
                     .budget = &server.budget,
                     .journal = server.journal,
                     .session = session,
                     .now_ms = now_ms,
                     .window_now_ms = window_now_ms,
                     .write = write,
                     .counters = nullptr,
                     .admission = session.policy().judged_by_limits ? Admission::kClient
                                                                    : Admission::kAsRecorded};
}

bool FoundOrFail(CommandContext& ctx, Lookup lookup, std::string_view missing_text) {
  switch (lookup) {
    case Lookup::kFound: return true;
    case Lookup::kMissing: ctx.Fail(missing_text); break;
    case Lookup::kWrongType: ctx.Fail(errors::kWrongType); break;
    case Lookup::kOutOfMemory: ctx.Fail(errors::kOom); break;
  }
  return false;
}

}  // namespace bloomgate
