#include "server/clients/client_registry.h"

#include <fmt/format.h>

#include "server/catalogue/command_table.h"
#include "server/keyspace/keyspace.h"

namespace bloomgate {

std::string ClientInfo::name() const {
  std::lock_guard lock(mutex_);
  return name_;
}
std::string ClientInfo::lib_name() const {
  std::lock_guard lock(mutex_);
  return lib_name_;
}
std::string ClientInfo::lib_ver() const {
  std::lock_guard lock(mutex_);
  return lib_ver_;
}
void ClientInfo::set_name(std::string name) {
  std::lock_guard lock(mutex_);
  name_ = std::move(name);
}
void ClientInfo::set_lib_name(std::string lib_name) {
  std::lock_guard lock(mutex_);
  lib_name_ = std::move(lib_name);
}
void ClientInfo::set_lib_ver(std::string lib_ver) {
  std::lock_guard lock(mutex_);
  lib_ver_ = std::move(lib_ver);
}

std::string ClientInfo::user() const {
  std::lock_guard lock(mutex_);
  return user_;
}

void ClientInfo::set_user(std::string user) {
  std::lock_guard lock(mutex_);
  user_ = std::move(user);
}

void ClientInfo::set_subscriber(std::shared_ptr<Subscriber> subscriber) {
  std::lock_guard lock(mutex_);
  subscriber_ = std::move(subscriber);
}

std::shared_ptr<Subscriber> ClientInfo::subscriber() const {
  std::lock_guard lock(mutex_);
  return subscriber_;
}

void ClientInfo::set_watched(std::vector<WatchedKey> watched) {
  std::lock_guard lock(mutex_);
  watched_ = std::move(watched);
}

void ClientInfo::set_close_hook(std::function<void()> hook) {
  std::lock_guard lock(mutex_);
  close_hook_ = std::move(hook);
}

bool ClientInfo::RequestClose() {
  std::function<void()> hook;
  {
    std::lock_guard lock(mutex_);
    hook.swap(close_hook_);
  }
  if (!hook) return false;
  // Called outside the lock: the hook only posts to the connection's loop.
  hook();
  return true;
}

std::optional<ClientType> ParseClientType(std::string_view name) {
  auto is = [&](std::string_view word) {
    if (name.size() != word.size()) return false;
    for (size_t i = 0; i < name.size(); ++i) {
      char c = name[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != word[i]) return false;
    }
    return true;
  };
  if (is("normal")) return ClientType::kNormal;
  if (is("replica") || is("slave")) return ClientType::kReplica;
  if (is("master")) return ClientType::kMaster;
  if (is("pubsub")) return ClientType::kPubSub;
  return std::nullopt;
}

ClientType ClientInfo::type() const {
  const ClientType linked = link.load(std::memory_order_relaxed);
  if (linked != ClientType::kNormal) return linked;
  if (sub.load(std::memory_order_relaxed) + psub.load(std::memory_order_relaxed) > 0) {
    return ClientType::kPubSub;
  }
  return ClientType::kNormal;
}

std::string ClientFlagsText(const ClientFlags& flags) {
  std::string text;
  if (flags.monitor) text += 'O';
  if (flags.replica) text += 'S';
  if (flags.master) text += 'M';
  if (flags.pubsub) text += 'P';
  if (flags.multi) text += 'x';
  if (flags.blocked) text += 'b';
  if (flags.dirty_watch) text += 'd';
  if (flags.close_after_reply) text += 'c';
  if (flags.no_evict) text += 'e';
  if (text.empty()) text += 'N';
  return text;
}

std::string ClientInfo::Describe(int64_t now_ms, const Keyspace& keyspace) const {
  const CommandSpec* cmd = last_command.load(std::memory_order_relaxed);
  int64_t last = last_interaction_ms.load(std::memory_order_relaxed);
  ClientFlags flags;
  flags.monitor = monitor.load(std::memory_order_relaxed);
  flags.multi = in_multi.load(std::memory_order_relaxed);
  flags.blocked = blocked.load(std::memory_order_relaxed);
  flags.close_after_reply = close_after_reply.load(std::memory_order_relaxed);
  flags.no_evict = no_evict.load(std::memory_order_relaxed);
  const ClientType linked = link.load(std::memory_order_relaxed);
  flags.replica = linked == ClientType::kReplica;
  flags.master = linked == ClientType::kMaster;
  const uint32_t channels = sub.load(std::memory_order_relaxed);
  const uint32_t patterns = psub.load(std::memory_order_relaxed);
  flags.pubsub = channels + patterns > 0;
  const uint64_t queued = multi_commands.load(std::memory_order_relaxed);
  uint64_t omem = output_bytes.load(std::memory_order_relaxed);
  std::vector<WatchedKey> watched_keys;
  {
    std::lock_guard lock(mutex_);
    watched_keys = watched_;
  }
  // Peek neither removes an expired key nor counts an access: a look from
  // outside the key locks that changes nothing. An expired key reads as
  // missing, as EXEC will find it (Redis shows `d` only once the key is
  // touched; here it shows as soon as EXEC would abort). The shard locks
  // are taken with this client's mutex released.
  for (const WatchedKey& watched : watched_keys) {
    EntryPtr now = keyspace.Peek(KeyRef{watched.key, watched.hash}, now_ms);
    if (WatchedKeyChanged(watched, now.get())) {
      flags.dirty_watch = true;
      break;
    }
  }
  std::lock_guard lock(mutex_);
  return fmt::format(
      "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={} db=0 sub={} psub={} "
      "ssub=0 multi={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 "
      "omem={} tot-mem={} events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={}",
      id, addr, laddr, name_, (now_ms - created_ms) / 1000, (now_ms - last) / 1000,
      ClientFlagsText(flags), channels, patterns, flags.multi ? static_cast<int64_t>(queued) : -1, omem, omem,
      cmd == nullptr ? "NULL" : cmd->full_name, user_, resp.load(std::memory_order_relaxed),
      lib_name_, lib_ver_);
}

std::shared_ptr<ClientInfo> ClientRegistry::Register(std::string addr, std::string laddr,
                                                     int64_t now_ms) {
  auto info = std::make_shared<ClientInfo>();
  info->addr = std::move(addr);
  info->laddr = std::move(laddr);
  info->created_ms = now_ms;
  info->last_interaction_ms.store(now_ms, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  info->id = next_id_++;
  clients_.emplace(info->id, info);
  count_.fetch_add(1, std::memory_order_relaxed);
  return info;
}

void ClientRegistry::Unregister(uint64_t id) {
  std::lock_guard lock(mutex_);
  if (clients_.erase(id) > 0) count_.fetch_sub(1, std::memory_order_relaxed);
}

std::vector<std::shared_ptr<ClientInfo>> ClientRegistry::Snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<ClientInfo>> all;
  all.reserve(clients_.size());
  for (const auto& [id, info] : clients_) all.push_back(info);
  return all;
}

}  // namespace bloomgate
