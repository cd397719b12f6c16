// The live connections of one worker thread, so that a graceful stop and the
// idle-timeout sweep can reach each of them. Touched only on its thread.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

#include "server/net/asio.h"

namespace bloomgate {

class Connection;
class ServerContext;
struct ClientState;

class ConnectionManager {
 public:
  void Add(std::shared_ptr<Connection> connection);
  void Remove(const std::shared_ptr<Connection>& connection);
  void StopAll();
  // Stops connections idle for longer than `timeout_ms` (0 = never).
  void StopIdle(int64_t now_ms, int64_t timeout_ms);
  size_t size() const { return connections_.size(); }

  // Holds `connection`'s replies until the journal's acknowledging
  // subscribers (the append-only log) have the records its client just
  // wrote (and takes their offset from `client`). The first waiter of
  // a loop pass posts one flush for all; handlers already queued (other
  // connections' reads) run first and join it.
  explicit ConnectionManager(ServerContext& server) : server_(server) {}
  void AwaitLogFlush(std::shared_ptr<Connection> connection, ClientState& client);

 private:
  struct Waiter {
    std::shared_ptr<Connection> connection;
    uint64_t offset;  // the stream offset its replies wait for
  };
  void FlushWaiters();

  ServerContext& server_;
  std::unordered_set<std::shared_ptr<Connection>> connections_;
  std::vector<Waiter> waiters_;
};

}  // namespace bloomgate
