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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/clients/watched_key.h"
#include "server/pubsub/subscriber.h"

namespace bloomgate {

struct CommandSpec;
class Keyspace;

// Redis's client types (networking.c getClientType), which CLIENT LIST TYPE
// and CLIENT KILL TYPE select: a replication link to this server (replica)
// or from it to its master (master), else a client subscribed to a channel or
// pattern (pubsub), else normal (a monitor too, as in Redis).
enum class ClientType { kNormal, kReplica, kMaster, kPubSub };
// "normal", "replica" / "slave", "master", "pubsub", any case; nullopt else.
std::optional<ClientType> ParseClientType(std::string_view name);

// What CLIENT LIST's `flags=` field says of a client, in Redis's letters and
// order (networking.c catClientInfoString): O a monitor, S a replica's link,
// M the link to this server's master, P subscribed (pub/sub), x inside MULTI,
// b blocked (here: a command held by CLIENT PAUSE, or waiting for a
// snapshot's copy of its filter), d a WATCHed key changed (EXEC will
// abort), c closing once its last reply is out, e CLIENT NO-EVICT on; N
// when none is. Those Redis also has are never true here: t/R/B (no client
// tracking), u, A, U (no Unix socket), r (no cluster), T (no CLIENT
// NO-TOUCH).
struct ClientFlags {
  bool monitor = false;
  bool replica = false;
  bool master = false;
  bool pubsub = false;
  bool multi = false;
  bool blocked = false;
  bool dirty_watch = false;
  bool close_after_reply = false;
  bool no_evict = false;
};
std::string ClientFlagsText(const ClientFlags& flags);

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
  // Commands queued since MULTI (CLIENT LIST multi=, -1 outside MULTI).
  std::atomic<uint64_t> multi_commands{0};
  // MONITOR ran and RESET did not end it yet.
  std::atomic<bool> monitor{false};
  // The connection holds a command that cannot run yet (CLIENT PAUSE, a
  // snapshot copy): Redis's blocked client.
  std::atomic<bool> blocked{false};
  // QUIT, a protocol error or CLIENT KILL: the connection closes once the
  // replies it owes are out.
  std::atomic<bool> close_after_reply{false};
  // Reply bytes built or on the wire and not yet taken by the socket (CLIENT
  // LIST omem): at most client-output-buffer-limit plus one reply.
  std::atomic<uint64_t> output_bytes{0};
  // CLIENT NO-EVICT: shown as flag 'e' in CLIENT LIST. Bloomgate never
  // evicts clients (maxmemory-clients does not exist here), so it only
  // records the client's wish.
  std::atomic<bool> no_evict{false};
  // Channels and patterns subscribed (CLIENT LIST sub= / psub=); either one
  // non-zero makes the client a pubsub client.
  std::atomic<uint32_t> sub{0};
  std::atomic<uint32_t> psub{0};
  // kReplica or kMaster when replication made this connection one of its
  // links; kNormal otherwise.
  std::atomic<ClientType> link{ClientType::kNormal};

  ClientType type() const;

  std::string name() const;
  std::string lib_name() const;
  std::string lib_ver() const;
  // The ACL user the connection is authenticated as (CLIENT LIST user=).
  std::string user() const;
  void set_name(std::string name);
  void set_lib_name(std::string lib_name);
  void set_lib_ver(std::string lib_ver);
  void set_user(std::string user);
  // A copy of the connection's WATCH records (ClientState::watched), so
  // another thread's CLIENT LIST can tell whether EXEC would abort.
  void set_watched(std::vector<WatchedKey> watched);
  // The connection's pub/sub side once it subscribed (null before), so ACL
  // SETUSER on another thread can judge its subscriptions.
  void set_subscriber(std::shared_ptr<Subscriber> subscriber);
  std::shared_ptr<Subscriber> subscriber() const;

  // How another thread closes this connection (ACL DELUSER of its user,
  // CLIENT KILL): the connection installs a function that posts the close
  // to its own event loop. The hook runs at most once: RequestClose returns
  // false before it is installed, once the client was already asked to
  // close, or after it closed (the connection clears it).
  void set_close_hook(std::function<void()> hook);
  bool RequestClose();

  // Redis's CLIENT LIST line for this client (without the newline); the
  // WATCHed keys are judged against `keyspace` as at `now_ms`, without
  // changing it.
  std::string Describe(int64_t now_ms, const Keyspace& keyspace) const;

 private:
  mutable std::mutex mutex_;
  std::string name_, lib_name_, lib_ver_;
  std::string user_ = "default";
  std::vector<WatchedKey> watched_;
  std::shared_ptr<Subscriber> subscriber_;
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
