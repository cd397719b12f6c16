// Counters behind INFO stats and INFO commandstats.
//
// Each worker thread writes only its own cache-line-aligned slot, so counting
// a command never bounces a shared line between cores; INFO sums the slots.
// The counters are relaxed atomics: each has one writer, and INFO only needs
// a recent value of each, not a consistent cut across them.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "server/stats/latency_histogram.h"

namespace bloomgate {

struct CommandCounters {
  // LATENCY HISTOGRAM: bucket b counts the calls whose duration in
  // microseconds has bit width b (0 us -> 0, 1 -> 1, 2-3 -> 2, 4-7 -> 3, ...);
  // 40 buckets reach 2^39 us, about 6 days.
  static constexpr size_t kBuckets = 40;
  static size_t BucketOf(uint64_t usec) {
    return std::min<size_t>(std::bit_width(usec), kBuckets - 1);
  }
  std::array<std::atomic<uint64_t>, kBuckets> usec_buckets{};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> usec{0};
  std::atomic<uint64_t> failed_calls{0};    // the command ran and replied an error
  std::atomic<uint64_t> rejected_calls{0};  // refused before running (arity, auth, ...)
  // INFO latencystats (latency_histogram.h): made by the slot's writer on
  // its first call of the command, published with release for INFO's
  // acquire load; null until then (or while latency-tracking is off).
  std::atomic<LatencyHistogram*> latency{nullptr};

  CommandCounters() = default;
  CommandCounters(const CommandCounters&) = delete;
  CommandCounters& operator=(const CommandCounters&) = delete;
  ~CommandCounters() { delete latency.load(std::memory_order_acquire); }

  // The slot's writer only.
  void RecordLatency(uint64_t nsec) {
    LatencyHistogram* histogram = latency.load(std::memory_order_relaxed);
    if (histogram == nullptr) {
      histogram = new LatencyHistogram();
      latency.store(histogram, std::memory_order_release);
    }
    Bump(histogram->counts[LatencyHistogram::IndexOf(nsec)]);
  }

 private:
  static void Bump(std::atomic<uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
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
  std::atomic<uint64_t> acl_denied_channels{0};
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
    baseline_ = std::make_unique<WorkerCounters>(commands);
  }
  WorkerCounters& worker(size_t index) {
    return *slots_[index < slots_.size() ? index : slots_.size() - 1];
  }
  size_t slots() const { return slots_.size(); }
  const WorkerCounters& slot(size_t index) const { return *slots_[index]; }

  std::atomic<uint64_t> rejected_connections{0};
  // latency-tracking: whether the dispatcher feeds the latency histograms
  // (ServerContext::ApplyConfig keeps it; relaxed, a standalone switch).
  std::atomic<bool> latency_tracking{true};

  // One command's latency histogram summed over every slot, since the last
  // Reset; total 0 when no slot has one.
  LatencyCounts CommandLatency(size_t id) const {
    LatencyCounts counts = RawLatency(id);
    if (const LatencyHistogram* base =
            baseline_->commands[id].latency.load(std::memory_order_acquire)) {
      for (size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
        const uint64_t at_reset = base->counts[b].load(std::memory_order_relaxed);
        counts.counts[b] -= at_reset;
        counts.total -= at_reset;
      }
    }
    return counts;
  }

  // Sums one field over every slot, since the last Reset.
  template <typename Field>
  uint64_t Sum(Field field) const {
    return RawSum(field) - ((*baseline_).*field).load(std::memory_order_relaxed);
  }
  // One command's counters summed over every slot, since the last Reset.
  struct CommandTotals {
    uint64_t calls = 0, usec = 0, failed_calls = 0, rejected_calls = 0;
    std::array<uint64_t, CommandCounters::kBuckets> usec_buckets{};
  };
  CommandTotals Command(size_t id) const {
    CommandTotals totals = RawCommand(id);
    const CommandCounters& base = baseline_->commands[id];
    totals.calls -= base.calls.load(std::memory_order_relaxed);
    totals.usec -= base.usec.load(std::memory_order_relaxed);
    totals.failed_calls -= base.failed_calls.load(std::memory_order_relaxed);
    totals.rejected_calls -= base.rejected_calls.load(std::memory_order_relaxed);
    for (size_t b = 0; b < CommandCounters::kBuckets; ++b) {
      totals.usec_buckets[b] -= base.usec_buckets[b].load(std::memory_order_relaxed);
    }
    return totals;
  }

  // CONFIG RESETSTAT: every count starts again from 0. The slots keep
  // counting (each has one writer, which a reset from another thread must not
  // race); the sums at this moment become the baseline that Sum and Command
  // subtract. Counts are monotonic, so a sum never drops below its baseline.
  void Reset() {
    std::lock_guard lock(reset_mutex_);
    auto copy = [](std::atomic<uint64_t>& to, uint64_t value) {
      to.store(value, std::memory_order_relaxed);
    };
    copy(baseline_->commands_processed, RawSum(&WorkerCounters::commands_processed));
    copy(baseline_->connections_received, RawSum(&WorkerCounters::connections_received));
    copy(baseline_->error_replies, RawSum(&WorkerCounters::error_replies));
    copy(baseline_->keyspace_hits, RawSum(&WorkerCounters::keyspace_hits));
    copy(baseline_->keyspace_misses, RawSum(&WorkerCounters::keyspace_misses));
    copy(baseline_->net_input_bytes, RawSum(&WorkerCounters::net_input_bytes));
    copy(baseline_->net_output_bytes, RawSum(&WorkerCounters::net_output_bytes));
    for (size_t id = 0; id < baseline_->commands.size(); ++id) {
      CommandTotals raw = RawCommand(id);
      CommandCounters& base = baseline_->commands[id];
      copy(base.calls, raw.calls);
      copy(base.usec, raw.usec);
      copy(base.failed_calls, raw.failed_calls);
      copy(base.rejected_calls, raw.rejected_calls);
      for (size_t b = 0; b < CommandCounters::kBuckets; ++b) {
        copy(base.usec_buckets[b], raw.usec_buckets[b]);
      }
      const LatencyCounts latency = RawLatency(id);
      if (latency.total == 0 && base.latency.load(std::memory_order_relaxed) == nullptr) continue;
      // The baseline is written only here, under reset_mutex_.
      LatencyHistogram* base_latency = base.latency.load(std::memory_order_relaxed);
      if (base_latency == nullptr) {
        base_latency = new LatencyHistogram();
        base.latency.store(base_latency, std::memory_order_release);
      }
      for (size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
        copy(base_latency->counts[b], latency.counts[b]);
      }
    }
    rejected_connections.store(0, std::memory_order_relaxed);
  }

 private:
  template <typename Field>
  uint64_t RawSum(Field field) const {
    uint64_t total = 0;
    for (const auto& slot : slots_) total += ((*slot).*field).load(std::memory_order_relaxed);
    return total;
  }
  CommandTotals RawCommand(size_t id) const {
    CommandTotals totals;
    for (const auto& slot : slots_) {
      const CommandCounters& counters = slot->commands[id];
      totals.calls += counters.calls.load(std::memory_order_relaxed);
      totals.usec += counters.usec.load(std::memory_order_relaxed);
      totals.failed_calls += counters.failed_calls.load(std::memory_order_relaxed);
      totals.rejected_calls += counters.rejected_calls.load(std::memory_order_relaxed);
      for (size_t b = 0; b < CommandCounters::kBuckets; ++b) {
        totals.usec_buckets[b] += counters.usec_buckets[b].load(std::memory_order_relaxed);
      }
    }
    return totals;
  }

  LatencyCounts RawLatency(size_t id) const {
    LatencyCounts counts;
    for (const auto& slot : slots_) {
      const LatencyHistogram* histogram =
          slot->commands[id].latency.load(std::memory_order_acquire);
      if (histogram == nullptr) continue;
      for (size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
        const uint64_t n = histogram->counts[b].load(std::memory_order_relaxed);
        counts.counts[b] += n;
        counts.total += n;
      }
    }
    return counts;
  }

  std::vector<std::unique_ptr<WorkerCounters>> slots_;
  std::unique_ptr<WorkerCounters> baseline_;
  std::mutex reset_mutex_;
};

}  // namespace bloomgate
