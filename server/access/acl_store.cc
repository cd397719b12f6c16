#include "server/access/acl_store.h"

#include "server/catalogue/command_table.h"

namespace bloomgate {

AclStore::AclStore(const CommandTable& table) : table_(table) {
  users_.emplace("default", std::make_shared<const AclUser>(DefaultAclUser(table)));
}

void AclStore::PublishLocked(std::shared_ptr<const AclUser> user) {
  users_[user->name] = std::move(user);
  // Release: pairs with version()'s acquire.
  version_.fetch_add(1, std::memory_order_release);
}

std::optional<std::string> AclStore::SetUser(std::string_view name,
                                             std::span<const std::string_view> rules) {
  std::unique_lock lock(mutex_);
  auto it = users_.find(name);
  const bool all_channels = pubsub_default_all_.load(std::memory_order_relaxed);
  AclUser staged =
      it != users_.end() ? *it->second : NewAclUser(std::string(name), table_, all_channels);
  for (std::string_view rule : rules) {
    if (auto reason = ApplyAclRule(&staged, rule, table_, all_channels)) {
      return AclRuleError(rule, *reason);
    }
  }
  PublishLocked(std::make_shared<const AclUser>(std::move(staged)));
  return std::nullopt;
}

std::vector<std::string> AclStore::DeleteUsers(std::span<const std::string_view> names) {
  std::unique_lock lock(mutex_);
  std::vector<std::string> deleted;
  for (std::string_view name : names) {
    if (name == "default") continue;
    auto it = users_.find(name);
    if (it == users_.end()) continue;
    deleted.push_back(it->first);
    users_.erase(it);
  }
  if (!deleted.empty()) version_.fetch_add(1, std::memory_order_release);
  return deleted;
}

std::shared_ptr<const AclUser> AclStore::Find(std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = users_.find(name);
  return it == users_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const AclUser>> AclStore::All() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<const AclUser>> all;
  all.reserve(users_.size());
  for (const auto& [name, user] : users_) all.push_back(user);
  return all;
}

void AclStore::ApplyRequirepass(const std::string& requirepass) {
  std::unique_lock lock(mutex_);
  if (applied_requirepass_ == requirepass) return;
  applied_requirepass_ = requirepass;
  AclUser staged = *users_.at("default");
  const std::string password_rule = requirepass.empty() ? "nopass" : ">" + requirepass;
  // Neither rule can fail.
  ApplyAclRule(&staged, "resetpass", table_);
  ApplyAclRule(&staged, password_rule, table_);
  PublishLocked(std::make_shared<const AclUser>(std::move(staged)));
}

bool AclStore::DefaultUserNoPass() const {
  std::shared_lock lock(mutex_);
  return users_.at("default")->nopass;
}

}  // namespace bloomgate
