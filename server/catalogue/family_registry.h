// The family registry: the one list of filter families the server serves.
// The command table takes every family's rows from it, TYPE and SCAN TYPE
// their names, COMMAND its ACL categories and module grouping, check-snapshot
// its summaries. The persistent half of each family is listed in
// persistence/codec/codec_registry.h.
#pragma once

#include <span>
#include <string_view>

#include "server/catalogue/filter_family.h"

namespace bloomgate {

// Adds a family. The catalogue names no family: the rooms above register
// theirs at start-up (commands/registry.cc is the one list), before the
// registry is first read and before any thread starts. A variant served by
// another family's rows (FilterFamily::commands == nullptr) registers after
// that family: FamilyOfGroup gives the first of a group.
void RegisterFamily(const FilterFamily& family);

// Every registered family, in registration order; never changed once read,
// so threads read it without locks.
std::span<const FilterFamily* const> RegisteredFamilies();

// The family with this kind, or null.
const FilterFamily* FindFamily(FilterKind kind);
// The family whose rows carry COMMAND DOCS group `group` ("bf"), or null
// (a built-in command: "generic", "server", ...).
const FilterFamily* FamilyOfGroup(std::string_view group);

// The name TYPE and SCAN TYPE use (RedisBloom's module type names), or
// "none" for a kind no family registered.
std::string_view TypeName(FilterKind kind);

}  // namespace bloomgate
