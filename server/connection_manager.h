// The live connections of one worker thread, so that a graceful stop and the
// idle-timeout sweep can reach each of them. Touched only on its thread.
#pragma once

#include <memory>
#include <unordered_set>

#include "server/asio.h"

namespace bloomgate {

class Connection;

class ConnectionManager {
 public:
  void Add(std::shared_ptr<Connection> connection);
  void Remove(const std::shared_ptr<Connection>& connection);
  void StopAll();
  // Stops connections idle for longer than `timeout_ms` (0 = never).
  void StopIdle(int64_t now_ms, int64_t timeout_ms);
  size_t size() const { return connections_.size(); }

 private:
  std::unordered_set<std::shared_ptr<Connection>> connections_;
};

}  // namespace bloomgate
