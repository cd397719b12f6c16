// The ACL users by name, shared by every worker thread.
//
// Users are immutable once published: ACL SETUSER applies its rules to a
// copy and swaps the copy in, so a connection holding a user (ClientState)
// never sees a half-applied change, and reads it without a lock. Every
// change bumps version(); a connection compares it once per command and
// takes its user's new copy when it moved (CurrentAclUser in
// commands/command_dispatcher.cc), so ACL SETUSER applies to connections
// already authenticated as that user from their next command, as in Redis.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/access/acl_user.h"

namespace bloomgate {

class CommandTable;

class AclStore {
 public:
  // Starts with Redis's default user (on, nopass, ~*, +@all).
  explicit AclStore(const CommandTable& table);

  // ACL SETUSER: creates `name` if missing (off, no permissions) and applies
  // `rules` in order, all or nothing. On failure returns the client-visible
  // error and changes nothing.
  std::optional<std::string> SetUser(std::string_view name,
                                     std::span<const std::string_view> rules);
  // ACL DELUSER: removes the named users that exist and returns their names.
  // The default user cannot be removed (the caller refuses it first).
  std::vector<std::string> DeleteUsers(std::span<const std::string_view> names);

  std::shared_ptr<const AclUser> Find(std::string_view name) const;
  // Every user, by name (Redis lists them in its radix tree's byte order).
  std::vector<std::shared_ptr<const AclUser>> All() const;

  // requirepass is the default user's password, as in Redis: a non-empty
  // value is "resetpass >value", an empty one "nopass". Applied at start-up
  // and by CONFIG SET requirepass; a CONFIG SET of another setting (which
  // re-applies the whole config) leaves a password set by ACL SETUSER alone.
  void ApplyRequirepass(const std::string& requirepass);

  // Whether the default user has "nopass": new connections are then
  // authenticated as it at once (if it is on), AUTH <password> is refused as
  // unconfigured, and protected mode applies.
  bool DefaultUserNoPass() const;

  // acl-pubsub-default: whether users created from now on (and `reset`)
  // get every channel (allchannels) or none (resetchannels, Redis 7's
  // default). Users that exist keep theirs, as in Redis.
  void SetPubSubDefault(bool all_channels) {
    pubsub_default_all_.store(all_channels, std::memory_order_relaxed);
  }

  // Acquire: a reader that sees a new version then finds the new users.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  void PublishLocked(std::shared_ptr<const AclUser> user);

  const CommandTable& table_;
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const AclUser>, std::less<>> users_;  // guarded
  std::optional<std::string> applied_requirepass_;                            // guarded
  std::atomic<uint64_t> version_{1};
  std::atomic<bool> pubsub_default_all_{false};
};

}  // namespace bloomgate
