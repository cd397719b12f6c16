// Every connected client, for CLIENT LIST / CLIENT INFO, INFO clients and
// the maxclients limit. A connection registers when it starts and leaves when
// it closes; its ClientInfo is shared with the registry so that CLIENT LIST on
// another thread can read it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bloomgate {

struct CommandSpec;

struct ClientInfo {
  uint64_t id = 0;
  std::string addr;     // peer "ip:port"
  std::string laddr;    // local "ip:port"
  int64_t created_ms = 0;
  // Written by the owning connection, read by CLIENT LIST elsewhere.
  std::atomic<int64_t> last_interaction_ms{0};
  std::atomic<const CommandSpec*> last_command{nullptr};
  std::atomic<int> resp{2};
  std::atomic<bool> in_multi{false};
  // Reply bytes built or on the wire and not yet taken by the socket (CLIENT
  // LIST omem): at most client-output-buffer-limit plus one reply.
  std::atomic<uint64_t> output_bytes{0};
  // CLIENT NO-EVICT: shown as flag 'e' in CLIENT LIST. Bloomgate never
  // evicts clients (maxmemory-clients does not exist here), so it only
  // records the client's wish.
  std::atomic<bool> no_evict{false};

  std::string name() const;
  std::string lib_name() const;
  std::string lib_ver() const;
  // The ACL user the connection is authenticated as (CLIENT LIST user=).
  std::string user() const;
  void set_name(std::string name);
  void set_lib_name(std::string lib_name);
  void set_lib_ver(std::string lib_ver);
  void set_user(std::string user);

  // How another thread closes this connection (ACL DELUSER of its user,
  // CLIENT KILL): the connection installs a function that posts the close
  // to its own event loop. The hook runs at most once: RequestClose returns
  // false before it is installed, once the client was already asked to
  // close, or after it closed (the connection clears it).
  void set_close_hook(std::function<void()> hook);
  bool RequestClose();

  // Redis's CLIENT LIST line for this client (without the newline).
  std::string Describe(int64_t now_ms) const;

 private:
  mutable std::mutex mutex_;
  std::string name_, lib_name_, lib_ver_;
  std::string user_ = "default";
  std::function<void()> close_hook_;  // guarded by mutex_
};

class ClientRegistry {
 public:
  std::shared_ptr<ClientInfo> Register(std::string addr, std::string laddr, int64_t now_ms);
  void Unregister(uint64_t id);
  std::vector<std::shared_ptr<ClientInfo>> Snapshot() const;
  size_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, std::shared_ptr<ClientInfo>> clients_;
  uint64_t next_id_ = 1;
  std::atomic<size_t> count_{0};
};

}  // namespace bloomgate
