// One io_context per worker thread (Boost.Asio's server2 model): a
// connection is bound to one loop for its whole life, so its handlers never
// run concurrently and need no strand. New connections are spread
// round-robin.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "server/net/asio.h"

namespace bloomgate {

class IoContextPool {
 public:
  explicit IoContextPool(size_t size);

  size_t size() const { return contexts_.size(); }
  asio::io_context& context(size_t index) { return *contexts_[index]; }
  // The next context for a new connection, and its index.
  size_t NextIndex();

  // Runs every context on its own thread; returns at once.
  void Start();
  // Lets each loop return once it has no more work (graceful stop).
  void ReleaseWork();
  // Stops every loop now, abandoning pending handlers.
  void ForceStop();
  void Join();

 private:
  using WorkGuard = asio::executor_work_guard<asio::io_context::executor_type>;
  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<WorkGuard> work_;
  std::vector<std::thread> threads_;
  size_t next_ = 0;
};

}  // namespace bloomgate
