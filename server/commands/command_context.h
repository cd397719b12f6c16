// What a command handler is given: its arguments, where to write the reply,
// the calling client, and the shared server state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/filter_status.h"
#include "filters/memory_refusal.h"
#include "server/base/clock.h"
#include "server/clients/client_state.h"
#include "server/context/server_context.h"
#include "server/keyspace/filter_maker.h"
#include "server/resp/reply_builder.h"

namespace bloomgate {

// What a MadeFilter built: the filter, or why not.
template <typename Filter>
class MadeFilterResult : public MadeFilter {
 public:
  using MadeFilter::MadeFilter;
  FilterStatus status = FilterStatus::kOk;
  MemoryRefusal refusal;  // what the memory check said, for a refused build
  std::unique_ptr<Filter> filter;
};

template <typename Filter, typename Create>
class MadeFilterOf final : public MadeFilterResult<Filter> {
 public:
  MadeFilterOf(const CommandSpec* spec, Create create)
      : MadeFilterResult<Filter>(spec), create_(std::move(create)) {}

 private:
  void Build() override { this->status = create_(&this->filter, &this->refusal); }
  Create create_;
};

struct CommandContext {
  std::span<const std::string_view> args;  // args[0] is the command name
  const CommandSpec& spec;
  ReplyBuilder& reply;
  ClientState& client;
  ServerContext& server;
  int64_t now_ms;
  // The window clock (base/clock.h) the command's windowed filters age by:
  // set by the dispatcher from the reading that times the command, read
  // here only for a context built elsewhere (tests).
  std::optional<int64_t> window_clock_ms;
  int64_t WindowNowMs() {
    if (!window_clock_ms) window_clock_ms = WindowClockMs();
    return *window_clock_ms;
  }
  // What the journal records when this write succeeds (server/durability/journal.h):
  // by default the command as sent. A handler sets skip_journal when it
  // journaled the write itself (RESERVE: its creation record says it all;
  // LOADCHUNK: chunks are staged and the finished filter is recorded whole),
  // or fills `effect` to have that recorded instead (Bloom adds).
  bool skip_journal = false;
  std::vector<std::string_view> effect;
  std::string effect_bytes;  // storage `effect` may point into
  // `effect`, holding the connection's storage (ClientState::effect_storage)
  // when it had none: for handlers that record an effect on every call
  // (Bloom adds), so that recording it allocates nothing. The dispatcher
  // takes the storage back when the command is done.
  std::vector<std::string_view>* ReusedEffect() {
    if (effect.capacity() == 0) effect.swap(client.effect_storage);
    return &effect;
  }

  // The command's keys, each hashed once by the dispatcher (see
  // keyspace/key_ref.h); set by RunCommand.
  std::span<const KeyRef> keys;
  size_t next_key = 0;  // where Key() looks first: handlers take keys in order

  WorkerCounters& counters() { return server.stats.worker(client.worker_index); }

  // The command's own reply is this error: the command failed, which the
  // dispatcher reads as a value (no journal record, a failed call in INFO
  // commandstats). Errors inside an array reply (a truncated BF.MADD,
  // EXEC's results) are written with reply.Error and fail nothing.
  void Fail(std::string_view text) {
    reply.Error(text);
    failed = true;
  }
  // The same for a message that gets "ERR " unless it has a code of its own
  // (ReplyBuilder::ErrorWithErrPrefix).
  void FailWithErrPrefix(std::string_view message) {
    reply.ErrorWithErrPrefix(message);
    failed = true;
  }
  bool failed = false;

  // Builds a new filter of about `bytes` with `create`, a callable
  // FilterStatus(std::unique_ptr<Filter>*, MemoryRefusal*) that owns what it reads and
  // reaches nothing shared but the memory budget (it may run on the filter
  // maker's thread). True, with *status and *filter set, when the filter is
  // ready: built inline, or made off the loop for this command's first run
  // (*refusal: what a refused build's memory check said).
  // False when the command must park (see server/keyspace/filter_maker.h):
  // the handler returns at once, having replied and changed nothing, and
  // runs again from the start once the filter is made.
  //
  // Built inline: under FilterMaker::kInlineBytes; in a replay of the
  // journal (no client waits, and the start-up load has no other clients);
  // inside EXEC, whose commands run together under their locks and cannot
  // park half-way (a transaction that creates a huge filter stalls its loop
  // for the build: the price of running all its commands at one moment);
  // with no maker installed.
  template <typename Filter, typename Create>
  bool MakeFilter(uint64_t bytes, Create create, FilterStatus* status,
                  std::unique_ptr<Filter>* filter, MemoryRefusal* refusal) {
    if (HasMadeFilter()) {
      if (auto* made = dynamic_cast<MadeFilterResult<Filter>*>(client.making.get())) {
        *status = made->status;
        *refusal = made->refusal;
        *filter = std::move(made->filter);
        client.making.reset();
        return true;
      }
    }
    if (!WouldPark(bytes)) {
      *status = create(filter, refusal);
      return true;
    }
    client.making = std::make_shared<MadeFilterOf<Filter, Create>>(&spec, std::move(create));
    parked = true;
    return false;
  }
  // Whether MakeFilter would park this command to build `bytes` off the
  // loop rather than build them inline (the rules above). A handler whose
  // build reads shared state (COPY's source) prepares it only then.
  bool WouldPark(uint64_t bytes) const {
    return bytes >= FilterMaker::kInlineBytes && client.journal.policy().may_park && !client.in_exec &&
           CurrentFilterMaker() != nullptr;
  }
  // Whether a filter made for this command's first run waits to be taken:
  // MakeFilter then returns it without building anything.
  bool HasMadeFilter() const {
    return client.making != nullptr && client.making->spec() == &spec && client.making->made();
  }
  // MakeFilter parked the command: the dispatcher answers kParked.
  bool parked = false;

  // The KeyRef of `name`, one of this command's arguments: the dispatcher's
  // if `name` is one of the command's keys (the same bytes of args, not just
  // an equal name), else hashed now.
  KeyRef Key(std::string_view name) {
    for (size_t n = 0, i = next_key; n < keys.size(); ++n, ++i) {
      if (i == keys.size()) i = 0;
      if (keys[i].name.data() == name.data() && keys[i].name.size() == name.size()) {
        next_key = i + 1;
        return keys[i];
      }
    }
    return MakeKeyRef(name);
  }
};

}  // namespace bloomgate
