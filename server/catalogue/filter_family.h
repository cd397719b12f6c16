// What the server knows of one filter family, declared once, at the end of
// the family's commands file (server/commands/<family>/<family>_commands.cc), and
// registered by server/commands/registry.cc. Its persistent half (kind, header, payload,
// whether a snapshot may read it while it is written) is its codec in
// persistence/codec/.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "filters/any_filter.h"
#include "filters/filter_health.h"
#include "persistence/codec/filter_kind.h"
#include "server/catalogue/command_table.h"

namespace bloomgate {

// Whether the family's writes commute. kCommute: adds only set bits, so its
// rows may carry kCmdOrderFree and run side by side on one key under shared
// locks (Bloom). kExclusive: every write holds its key's lock exclusively, so
// one key's writes reach the log in the order they took effect.
enum class FamilyWrites { kExclusive, kCommute };

struct FilterFamily {
  FilterKind kind;                 // its codec's tag: the key's KeyType
  std::string_view type_name;      // TYPE and SCAN TYPE: "MBbloom--"
  std::string_view group;          // its rows' COMMAND DOCS group: "bf"
  std::string_view acl_category;   // COMMAND INFO / LIST ACLCAT: "@bloom"
  FamilyWrites writes = FamilyWrites::kExclusive;
  // Its command rows; nullptr for a variant served by the rows of the
  // family registered before it under the same group (the windowed Bloom
  // filter, served by BF.*).
  std::vector<CommandSpec> (*commands)() = nullptr;
  // The COMMAND DOCS syntax line of each of its rows, declared beside them
  // (FamilyRows gives each row its line; SCANDUMP and LOADCHUNK come with
  // theirs); empty for a variant.
  std::span<const CommandSyntax> syntax = {};
  // check-snapshot's one-line summary of a filter of this family.
  std::string (*describe)(const AnyFilter& filter) = nullptr;
  // BLOOMGATE.HEALTH and INFO filterhealth (filters/filter_health.h): reads
  // at most max_scan_bytes of cells; 0 = the totals alone, in O(layers).
  FilterHealth (*health)(const AnyFilter& filter, uint64_t max_scan_bytes) = nullptr;
};

// A family's `describe` and `health` written over its own filter type:
// `.describe = DescribeAs<CountMinSketch, Describe>` unwraps the AnyFilter,
// which holds that type whenever the registry calls the family's functions.
template <typename Filter, std::string (*Describe)(const Filter&)>
std::string DescribeAs(const AnyFilter& filter) {
  return Describe(*std::get<std::unique_ptr<Filter>>(filter));
}
template <typename Filter, FilterHealth (*Health)(const Filter&, uint64_t max_scan_bytes)>
FilterHealth HealthAs(const AnyFilter& filter, uint64_t max_scan_bytes) {
  return Health(*std::get<std::unique_ptr<Filter>>(filter), max_scan_bytes);
}

}  // namespace bloomgate
