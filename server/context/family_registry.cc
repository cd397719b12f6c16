// The family registry (see family_registry.h). Registering a family is its
// declaration and its entry in `families` below.
#include "server/context/family_registry.h"

#include <vector>

namespace bloomgate {

// Each is defined at the end of its family's commands file,
// server/commands/<family>_commands.cc.
const FilterFamily& BloomFamily();
const FilterFamily& CountingBloomFamily();
const FilterFamily& CuckooFamily();
const FilterFamily& CountMinSketchFamily();
const FilterFamily& TopKFamily();
const FilterFamily& WindowedBloomFamily();
const FilterFamily& WindowedCountingBloomFamily();

namespace {

const std::vector<const FilterFamily*>& Families() {
  // One entry per family.
  static const std::vector<const FilterFamily*> families = {
      &BloomFamily(),
      &CountingBloomFamily(),
      &CuckooFamily(),
      &CountMinSketchFamily(),
      &TopKFamily(),
      // After BloomFamily, whose group it shares: FamilyOfGroup("bf") is Bloom's.
      &WindowedBloomFamily(),
      // After CountingBloomFamily, likewise for "cbf".
      &WindowedCountingBloomFamily(),
  };
  return families;
}

}  // namespace

std::span<const FilterFamily* const> RegisteredFamilies() { return Families(); }

const FilterFamily* FindFamily(FilterKind kind) {
  for (const FilterFamily* family : Families()) {
    if (family->kind == kind) return family;
  }
  return nullptr;
}

const FilterFamily* FamilyOfGroup(std::string_view group) {
  for (const FilterFamily* family : Families()) {
    if (family->group == group) return family;
  }
  return nullptr;
}

std::string_view TypeName(FilterKind kind) {
  const FilterFamily* family = FindFamily(kind);
  return family != nullptr ? family->type_name : "none";
}

}  // namespace bloomgate
