#include "server/catalogue/acl_categories.h"

#include <cassert>
#include <string>

#include "server/catalogue/command_table.h"
#include "server/catalogue/family_registry.h"

namespace bloomgate {
namespace {

// Redis's built-in categories that some Bloomgate command is in (Redis's
// others: set, sortedset, list, hash, string, bitmap, hyperloglog, geo,
// stream, blocking, scripting have no command here).
enum BuiltIn : size_t {
  kKeyspace,
  kRead,
  kWrite,
  kAdmin,
  kFast,
  kSlow,
  kDangerous,
  kConnection,
  kTransaction,
  kPubSub,
  kBuiltInCount,
};
constexpr std::string_view kBuiltInNames[kBuiltInCount] = {
    "@keyspace", "@read",      "@write",      "@admin",      "@fast",
    "@slow",     "@dangerous", "@connection", "@transaction", "@pubsub"};

std::vector<std::string_view> BuildNames() {
  std::vector<std::string_view> names(std::begin(kBuiltInNames), std::end(kBuiltInNames));
  for (const FilterFamily* family : RegisteredFamilies()) {
    bool known = false;
    for (std::string_view name : names) known |= name == family->acl_category;
    // Bloom and counting Bloom share @bloom.
    if (!known) names.push_back(family->acl_category);
  }
  assert(names.size() <= 64);
  return names;
}

const std::vector<std::string_view>& Names() {
  static const std::vector<std::string_view> names = BuildNames();
  return names;
}

uint64_t Bit(size_t index) { return uint64_t{1} << index; }

}  // namespace

std::span<const std::string_view> AclCategoryNames() { return Names(); }

std::optional<size_t> FindAclCategory(std::string_view name) {
  const auto& names = Names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (EqualsIgnoreCase(names[i].substr(1), name)) return i;
  }
  return std::nullopt;
}

uint64_t AclCategoryMask(const CommandSpec& spec) {
  uint64_t mask = 0;
  if (spec.flags & kCmdWrite) mask |= Bit(kWrite);
  if (spec.flags & kCmdReadOnly) mask |= Bit(kRead);
  mask |= Bit(spec.flags & kCmdFast ? kFast : kSlow);
  if (spec.flags & kCmdAdmin) mask |= Bit(kAdmin) | Bit(kDangerous);
  if ((spec.flags & kCmdAllKeys) && (spec.flags & kCmdWrite)) mask |= Bit(kDangerous);
  if (spec.flags & kCmdDangerous) mask |= Bit(kDangerous);
  if (spec.group == "generic" || (spec.flags & kCmdAllKeys)) mask |= Bit(kKeyspace);
  if (spec.group == "connection") mask |= Bit(kConnection);
  if (spec.group == "transactions") mask |= Bit(kTransaction);
  if (spec.group == "pubsub") mask |= Bit(kPubSub);
  if (const FilterFamily* family = FamilyOfGroup(spec.group)) {
    if (auto index = FindAclCategory(family->acl_category.substr(1))) mask |= Bit(*index);
  }
  return mask;
}

std::vector<std::string_view> AclCategoryList(uint64_t mask) {
  std::vector<std::string_view> list;
  const auto& names = Names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (mask & Bit(i)) list.push_back(names[i]);
  }
  return list;
}

}  // namespace bloomgate
