// The server's configuration while it runs: start-up values plus what
// CONFIG SET has changed since. Readers take a copy under a shared lock;
// CONFIG SET validates on a copy and swaps it in, so a reader never sees a
// half-applied change. The hot path never reads it: connections copy what
// they need when they start, filters are created with the defaults of the
// moment.
#pragma once

#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "config/server_config.h"

namespace bloomgate {

class RuntimeConfig {
 public:
  explicit RuntimeConfig(ServerConfig config) : config_(std::move(config)) {}

  ServerConfig Get() const {
    std::shared_lock lock(mutex_);
    return config_;
  }

  // What a new value needs beyond being stored, e.g. TLS reloading its
  // certificates. Called once per Set, under the lock, after every pair has
  // parsed and before anything is committed, with the configuration about
  // to be committed and the names set (in order). On failure it sets *param
  // (the name to blame) and *why, and nothing changes. It must not call
  // Get() or Set(): the lock is held.
  using Applier = std::function<bool(const ServerConfig& next,
                                     const std::vector<std::string>& names,
                                     std::string* param, std::string* why)>;

  // Applies name/value pairs all-or-nothing; on failure *error names the
  // offending parameter and nothing changes. `changed` (optional) receives
  // the resulting configuration.
  bool Set(const std::vector<std::pair<std::string, std::string>>& pairs,
           std::string* error, ServerConfig* changed, const Applier& apply = nullptr);

  // Records a setting that a command changed by acting, not through CONFIG
  // SET (REPLICAOF sets `replicaof`, as in Redis), so CONFIG GET and CONFIG
  // REWRITE show the running state. `record` must not call Get() or Set().
  void Record(const std::function<void(ServerConfig&)>& record) {
    std::unique_lock lock(mutex_);
    record(config_);
  }

 private:
  mutable std::shared_mutex mutex_;
  ServerConfig config_;
};

}  // namespace bloomgate
