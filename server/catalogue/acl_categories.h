// ACL categories, derived from the command table: a row's flags, group and
// filter family say which categories it is in, so there is no second list
// of commands to keep in step. COMMAND INFO, COMMAND LIST FILTERBY ACLCAT,
// ACL CAT and the +@category / -@category rules all read these.
//
// The categories are Redis's built-in ones that apply to Bloomgate, in
// Redis's order (ACL CAT lists them so), then one per filter family's
// `acl_category` ("@bloom", "@cuckoo", ...), in registration order, as Redis
// appends the categories modules add.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace bloomgate {

struct CommandSpec;

// Every category with its '@', in ACL CAT's order; bit i of a mask is
// AclCategoryNames()[i]. At most 64 (Redis's ACL_MAX_CATEGORIES too).
std::span<const std::string_view> AclCategoryNames();

// The index of category `name` (without '@', ASCII case ignored), or nullopt.
std::optional<size_t> FindAclCategory(std::string_view name);

// The categories of one row, from its flags, group and family:
//   @read / @write        kCmdReadOnly / kCmdWrite
//   @fast, else @slow     kCmdFast
//   @admin + @dangerous   kCmdAdmin
//   @dangerous            a write to the whole keyspace (FLUSHALL, FLUSHDB),
//                         and kCmdDangerous (RESTORE, MIGRATE, KEYS, INFO)
//   @keyspace             group "generic" or kCmdAllKeys
//   @connection           group "connection"
//   @transaction          group "transactions"
//   @bloom, @cuckoo, ...  the row's filter family
uint64_t AclCategoryMask(const CommandSpec& spec);

// The names in `mask`, in category order.
std::vector<std::string_view> AclCategoryList(uint64_t mask);

}  // namespace bloomgate
