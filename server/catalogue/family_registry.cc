// The family registry (see family_registry.h): filled at start-up by the
// rooms above (commands/registry.cc), read by every room from then on.
#include "server/catalogue/family_registry.h"

#include <vector>

namespace bloomgate {

namespace {

std::vector<const FilterFamily*>& Families() {
  static std::vector<const FilterFamily*> families;
  return families;
}

}  // namespace

void RegisterFamily(const FilterFamily& family) { Families().push_back(&family); }

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
