// Counters behind INFO stats and INFO commandstats.
//
// Each worker thread writes only its own cache-line-aligned slot, so counting
// a command never bounces a shared line between cores; INFO sums the slots.
// The counters are relaxed atomics: each has one writer, and INFO only needs
// a recent value of each, not a consistent cut across them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace bloomgate {

struct CommandCounters {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> usec{0};
  std::atomic<uint64_t> failed_calls{0};    // the command ran and replied an error
  std::atomic<uint64_t> rejected_calls{0};  // refused before running (arity, auth, ...)
};

struct alignas(64) WorkerCounters {
  explicit WorkerCounters(size_t commands) : commands(commands) {}
  std::vector<CommandCounters> commands;
  std::atomic<uint64_t> commands_processed{0};
  std::atomic<uint64_t> connections_received{0};
  std::atomic<uint64_t> error_replies{0};
  std::atomic<uint64_t> keyspace_hits{0};
  std::atomic<uint64_t> keyspace_misses{0};
  std::atomic<uint64_t> net_input_bytes{0};
  std::atomic<uint64_t> net_output_bytes{0};
  // Commands refused by ACL rules (INFO acl_access_denied_cmd / _key).
  std::atomic<uint64_t> acl_denied_commands{0};
  std::atomic<uint64_t> acl_denied_keys{0};
};

inline void Bump(std::atomic<uint64_t>& counter, uint64_t by = 1) {
  // Single writer per slot: a relaxed load + store is enough and avoids a
  // locked RMW on the hot path.
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

class ServerStats {
 public:
  ServerStats(size_t workers, size_t commands) {
    // One extra slot for work done off the worker threads (start-up, tests).
    for (size_t i = 0; i <= workers; ++i) {
      slots_.push_back(std::make_unique<WorkerCounters>(commands));
    }
  }
  WorkerCounters& worker(size_t index) {
    return *slots_[index < slots_.size() ? index : slots_.size() - 1];
  }
  size_t slots() const { return slots_.size(); }
  const WorkerCounters& slot(size_t index) const { return *slots_[index]; }

  std::atomic<uint64_t> rejected_connections{0};

  // Sums one field over every slot.
  template <typename Field>
  uint64_t Sum(Field field) const {
    uint64_t total = 0;
    for (const auto& slot : slots_) total += ((*slot).*field).load(std::memory_order_relaxed);
    return total;
  }

 private:
  std::vector<std::unique_ptr<WorkerCounters>> slots_;
};

}  // namespace bloomgate
