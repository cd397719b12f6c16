// In-process client sessions for server unit tests.
//
// A Session plays one connection's part without a socket: it owns a
// ClientState, sends one command through DispatchCommand, and returns the
// exact RESP bytes the command wrote. Several sessions on one ServerContext
// are several clients (WATCH from one, writes from another).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/server_config.h"
#include "filters/cuckoo_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "server/clients/client_state.h"
#include "server/commands/command_dispatcher.h"
#include "server/commands/registry.h"
#include "server/context/server_context.h"
#include "server/keyspace/filter_maker.h"
#include "server/keyspace/keyspace.h"
#include "server/resp/reply_builder.h"

namespace bloomgate::testing {

using Args = std::vector<std::string>;

class Session {
 public:
  // `worker` picks the statistics slot; sessions used from different threads
  // at the same time must use different workers (one writer per slot).
  explicit Session(ServerContext* server, size_t worker = 0) : server_(server) {
    client_.authenticated = true;
    client_.worker_index = worker;
  }

  // Runs one command and returns the bytes of its reply.
  std::string Run(const Args& args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::string out;
    ReplyBuilder reply(&out);
    reply.set_resp3(client_.resp3);  // what the connection does before each command
    // A parked command (waiting for a snapshot copy, or for a filter made
    // off the loop) is run again once the copier or the maker is done, as
    // the connection does; here the session just waits.
    while ((last_outcome_ = DispatchCommand(*server_, client_, views, reply)) ==
           CommandOutcome::kParked) {
      ++parks_;
      std::promise<void> done;
      if (client_.parked_on != nullptr) {
        server_->snapshot_copier.CopyInBackground(std::move(client_.parked_on),
                                                  [&done] { done.set_value(); });
      } else {
        ++makes_;
        FilterMaker* maker = CurrentFilterMaker();
        if (maker == nullptr || !maker->Make(client_.making, [&done] { done.set_value(); })) {
          client_.making->Make();
          done.set_value();
        }
      }
      done.get_future().wait();
    }
    errors_written_ += reply.errors_written();
    return out;
  }

  // Switches the wire protocol the way HELLO does, without HELLO's reply.
  void set_resp3(bool resp3) { client_.resp3 = resp3; }

  ClientState& client() { return client_; }
  uint64_t errors_written() const { return errors_written_; }
  // Commands that had to wait for a snapshot copy or a filter made off the
  // loop, and of those, the ones that waited for a filter.
  uint64_t parks() const { return parks_; }
  uint64_t makes() const { return makes_; }
  // What became of the last command (kPaused: CLIENT PAUSE holds it).
  CommandOutcome last_outcome() const { return last_outcome_; }

 private:
  ServerContext* server_;
  ClientState client_;
  uint64_t errors_written_ = 0;
  uint64_t parks_ = 0;
  uint64_t makes_ = 0;
  CommandOutcome last_outcome_ = CommandOutcome::kDone;
};

// A server with `workers` statistics slots and the given configuration.
inline std::unique_ptr<ServerContext> MakeServer(ServerConfig config = {}, size_t workers = 2) {
  RegisterAllCommands();
  return std::make_unique<ServerContext>(std::move(config), workers);
}

// --- Expected RESP bytes, so tests read as what goes on the wire. ---

inline std::string Simple(std::string_view text) { return "+" + std::string(text) + "\r\n"; }
inline std::string Err(std::string_view text) { return "-" + std::string(text) + "\r\n"; }
inline std::string Int(int64_t value) { return ":" + std::to_string(value) + "\r\n"; }
inline std::string Bulk(std::string_view data) {
  return "$" + std::to_string(data.size()) + "\r\n" + std::string(data) + "\r\n";
}
inline std::string Arr(size_t count) { return "*" + std::to_string(count) + "\r\n"; }
inline std::string Map(size_t pairs) { return "%" + std::to_string(pairs) + "\r\n"; }
inline const std::string kOk = "+OK\r\n";
inline const std::string kQueued = "+QUEUED\r\n";
inline const std::string kNil = "$-1\r\n";
inline const std::string kNilArray = "*-1\r\n";
inline const std::string kNull3 = "_\r\n";
inline const std::string kTrue3 = "#t\r\n";
inline const std::string kFalse3 = "#f\r\n";

// A memory refusal's reply (errors::MemoryRefused): `prefix`, the family's
// RedisBloom text, then ": needs N bytes" and what ends in `ending` (the
// limit's figures: ", max-filter-memory is 65536").
inline ::testing::AssertionResult IsMemoryRefusal(const std::string& reply,
                                                  std::string_view prefix,
                                                  std::string_view ending) {
  const std::string head = "-" + std::string(prefix) + ": needs ";
  const std::string tail = std::string(ending) + "\r\n";
  if (reply.starts_with(head) && reply.ends_with(tail)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "reply " << reply << " is not " << head << "..." << tail;
}

inline std::string WrongArity(std::string_view full_name) {
  return Err("ERR wrong number of arguments for '" + std::string(full_name) + "' command");
}

// A small Bloom filter entry for tests that drive the Keyspace directly.
inline EntryPtr MakeBloomEntry(uint64_t capacity = 10) {
  ScalableBloomOptions options;
  options.capacity = capacity;
  std::unique_ptr<ScalableBloomFilter> filter;
  ScalableBloomFilter::Create(options, FilterLimits{}, /*budget=*/nullptr, &filter);
  return std::make_shared<KeyEntry>(std::move(filter));
}

// Stores a small cuckoo filter under `key`: a key of another type, for the
// WRONGTYPE checks of BF.* (built directly, so it needs no CF.* command).
inline void InsertCuckooKey(ServerContext* server, std::string_view key) {
  std::unique_ptr<CuckooFilter> filter;
  CuckooFilter::Create(CuckooFilterOptions{}, FilterLimits{}, &server->budget, &filter);
  bool inserted = false;
  server->keyspace.Insert(key, std::make_shared<KeyEntry>(std::move(filter)), NowMs(),
                          &inserted);
}

}  // namespace bloomgate::testing
