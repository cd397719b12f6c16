#include "server/context/server_context.h"

#include <unistd.h>

#include <chrono>
#include <random>

namespace bloomgate {

namespace {

std::string RandomRunId() {
  std::random_device device;
  std::mt19937_64 rng(device());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(40, '0');
  for (char& c : id) c = kHex[rng() % 16];
  return id;
}

// maxmemory 0 means "3/4 of physical memory": a default that stops a client
// from making the process swap or be OOM-killed, while leaving room for the
// kernel and the page cache.
uint64_t EffectiveMaxMemory(uint64_t configured) {
  if (configured != 0) return configured;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) / 4 * 3;
}

}  // namespace

ServerContext::ServerContext(ServerConfig initial, size_t workers)
    : config(initial),
      budget(EffectiveMaxMemory(initial.maxmemory)),
      stats(workers, commands.all().size()),
      start_time_ms(NowMs()),
      run_id(RandomRunId()) {
  UseFileSystem(DefaultFileSystem());
  ApplyConfig(initial);
}

void ServerContext::UseFileSystem(FileSystem* fs) {
  // The old one (if any) unsubscribes from the journal as it goes.
  durability.reset();
  DurabilityParts parts;
  parts.config = &config;
  parts.keyspace = &keyspace;
  parts.key_locks = &key_locks;
  parts.budget = &budget;
  parts.journal = &journal;
  durability = std::make_unique<Durability>(parts, fs);
}

void ServerContext::ApplyConfig(const ServerConfig& current) {
  budget.set_limit(EffectiveMaxMemory(current.maxmemory));
  max_filter_bytes_.store(current.max_filter_memory, std::memory_order_relaxed);
  // Relaxed: a standalone limit; a connection picks it up on its next batch.
  client_output_buffer_limit_.store(current.client_output_buffer_limit,
                                    std::memory_order_relaxed);
  slowlog_threshold_us_.store(current.slowlog_log_slower_than, std::memory_order_relaxed);
  slowlog_max_len_.store(current.slowlog_max_len, std::memory_order_relaxed);
  slow_log.Trim(current.slowlog_max_len);
  latency_threshold_ms_.store(current.latency_monitor_threshold, std::memory_order_relaxed);
  if (durability != nullptr) durability->ApplyConfig(current);
}

}  // namespace bloomgate
