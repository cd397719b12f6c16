#include "server/connection_manager.h"

#include <vector>

#include "server/connection.h"

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
    if (now_ms - connection->last_activity_ms() > timeout_ms) idle.push_back(connection);
  }
  for (auto& connection : idle) connection->Stop();
}

}  // namespace bloomgate
