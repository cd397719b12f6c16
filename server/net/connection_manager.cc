#include "server/net/connection_manager.h"

#include <algorithm>
#include <vector>

#include "server/clients/client_state.h"
#include "server/context/server_context.h"
#include "server/net/connection.h"

namespace bloomgate {

void ConnectionManager::Add(std::shared_ptr<Connection> connection) {
  connections_.insert(connection);
  connection->Start();
}

void ConnectionManager::Remove(const std::shared_ptr<Connection>& connection) {
  connections_.erase(connection);
}

void ConnectionManager::StopAll() {
  // Stop() may remove the connection from the set: iterate over a copy.
  std::vector<std::shared_ptr<Connection>> all(connections_.begin(), connections_.end());
  for (auto& connection : all) connection->Stop();
}

void ConnectionManager::StopIdle(int64_t now_ms, int64_t timeout_ms) {
  if (timeout_ms <= 0) return;
  std::vector<std::shared_ptr<Connection>> idle;
  for (const auto& connection : connections_) {
    if (connection->idle_exempt()) continue;
    if (now_ms - connection->last_activity_ms() > timeout_ms) idle.push_back(connection);
  }
  for (auto& connection : idle) connection->Stop();
}

void ConnectionManager::AwaitLogFlush(std::shared_ptr<Connection> connection,
                                      ClientState& client) {
  bool first = waiters_.empty();
  auto executor = connection->executor();
  waiters_.push_back({std::move(connection), client.journal.offset});
  client.journal.offset = 0;
  if (first) asio::post(executor, [this] { FlushWaiters(); });
}

void ConnectionManager::FlushWaiters() {
  std::vector<Waiter> waiters;
  waiters.swap(waiters_);
  // One wait for the furthest offset covers every waiter: the stream
  // satisfies offsets in order.
  uint64_t offset = 0;
  for (const Waiter& waiter : waiters) offset = std::max(offset, waiter.offset);
  bool logged = server_.journal.AwaitOffset(offset).ok();
  for (Waiter& waiter : waiters) waiter.connection->ResumeAfterLogFlush(logged);
}

}  // namespace bloomgate
