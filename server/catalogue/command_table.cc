#include "server/catalogue/command_table.h"

#include <algorithm>
#include <cassert>
#include <charconv>

#include "server/catalogue/acl_categories.h"
#include "server/catalogue/family_registry.h"

namespace bloomgate {

std::string AsciiLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

namespace {

char FoldAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

uint64_t AsciiCaseHash(std::string_view text) {
  // 64-bit FNV-1a: names are short (at most ~25 bytes) and there are ~160.
  uint64_t hash = 14695981039346656037ull;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(FoldAscii(c));
    hash *= 1099511628211ull;
  }
  return hash;
}

namespace {

std::vector<CommandRows>& Groups() {
  static std::vector<CommandRows> groups;
  return groups;
}

}  // namespace

void RegisterCommandGroup(CommandRows rows) { Groups().push_back(rows); }

std::span<const CommandRows> RegisteredCommandGroups() { return Groups(); }

CommandTable::CommandTable() {
  assert(!RegisteredCommandGroups().empty() && "commands/registry.cc registers the groups first");
  for (CommandRows group : RegisteredCommandGroups()) {
    for (CommandSpec& spec : group()) commands_.push_back(std::move(spec));
  }
  for (const FilterFamily* family : RegisteredFamilies()) {
    if (family->commands == nullptr) continue;  // served by its group's family
    for (CommandSpec& spec : family->commands()) commands_.push_back(std::move(spec));
  }
  std::sort(commands_.begin(), commands_.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  for (CommandSpec& spec : commands_) {
    spec.full_name = std::string(spec.name);
    spec.id = all_.size();
    spec.acl_categories = AclCategoryMask(spec);
    all_.push_back(&spec);
    for (CommandSpec& sub : spec.subcommands) {
      sub.full_name = spec.full_name + "|" + std::string(sub.name);
      sub.id = all_.size();
      sub.parent = &spec;
      sub.acl_categories = AclCategoryMask(sub);
      all_.push_back(&sub);
    }
  }
  size_t slots = 16;
  while (slots < 4 * commands_.size()) slots *= 2;
  by_name_.assign(slots, NameSlot{});
  by_name_mask_ = slots - 1;
  for (const CommandSpec& spec : commands_) {
    const uint64_t hash = AsciiCaseHash(spec.full_name);
    size_t i = hash & by_name_mask_;
    while (by_name_[i].spec != nullptr) i = (i + 1) & by_name_mask_;
    by_name_[i] = NameSlot{hash, &spec};
  }
  // Arguments from the row's syntax line; a row without one (or a line that
  // does not parse) has none, which command_table_test refuses.
  arguments_.resize(all_.size());
  auto parse = [this](CommandSpec& spec) {
    if (const CommandSyntax* syntax = SyntaxOf(spec)) {
      std::string error;
      if (!ParseCommandSyntax(*syntax, KeySpecCount(spec), &arguments_[spec.id], &error)) {
        arguments_[spec.id].clear();
      }
    }
    spec.arguments = &arguments_[spec.id];
  };
  for (CommandSpec& spec : commands_) {
    parse(spec);
    for (CommandSpec& sub : spec.subcommands) parse(sub);
  }
}

const CommandSyntax* SyntaxOf(const CommandSpec& spec) {
  return spec.syntax != nullptr ? spec.syntax : FindCommandSyntax(spec.full_name);
}

const CommandSpec* CommandTable::Find(std::string_view name) const {
  const uint64_t hash = AsciiCaseHash(name);
  for (size_t i = hash & by_name_mask_; by_name_[i].spec != nullptr; i = (i + 1) & by_name_mask_) {
    if (by_name_[i].hash == hash && EqualsIgnoreCase(by_name_[i].spec->full_name, name)) {
      return by_name_[i].spec;
    }
  }
  return nullptr;
}

const CommandSpec* CommandTable::FindSubcommand(const CommandSpec& container,
                                                std::string_view name) {
  for (const CommandSpec& sub : container.subcommands) {
    if (EqualsIgnoreCase(sub.name, name)) return &sub;
  }
  return nullptr;
}

void CommandTable::KeyIndices(const CommandSpec& spec, size_t argc,
                              std::vector<size_t>* out) {
  out->clear();
  if (spec.first_key <= 0 || spec.key_step <= 0) return;
  size_t first = static_cast<size_t>(spec.first_key);
  size_t last = spec.last_key < 0
                    ? (argc + static_cast<size_t>(spec.last_key + 1)) - 1
                    : static_cast<size_t>(spec.last_key);
  if (argc == 0) return;
  last = std::min(last, argc - 1);
  for (size_t i = first; i <= last; i += static_cast<size_t>(spec.key_step)) {
    out->push_back(i);
  }
}

size_t CommandTable::NumKeys(const CommandSpec& spec, std::span<const std::string_view> args) {
  if (spec.numkeys_index <= 0 || args.size() <= static_cast<size_t>(spec.numkeys_index)) return 0;
  const std::string_view text = args[static_cast<size_t>(spec.numkeys_index)];
  uint64_t count = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  const size_t after = args.size() - static_cast<size_t>(spec.numkeys_index) - 1;
  if (ec != std::errc() || end != text.data() + text.size() || count < 1 || count > after) {
    return 0;
  }
  return static_cast<size_t>(count);
}

size_t CommandTable::KeysAfterKeyword(const CommandSpec& spec,
                                      std::span<const std::string_view> args) {
  if (spec.keys_keyword_from <= 0 || spec.first_key <= 0 ||
      args.size() <= static_cast<size_t>(spec.first_key) ||
      !args[static_cast<size_t>(spec.first_key)].empty()) {
    return 0;
  }
  for (size_t i = static_cast<size_t>(spec.keys_keyword_from); i < args.size(); ++i) {
    if (EqualsIgnoreCase(args[i], "AUTH")) {
      i += 1;
    } else if (EqualsIgnoreCase(args[i], "AUTH2")) {
      i += 2;
    } else if (EqualsIgnoreCase(args[i], "KEYS")) {
      return i + 1 < args.size() ? i + 1 : 0;
    }
  }
  return 0;
}

void CommandTable::KeyIndices(const CommandSpec& spec, std::span<const std::string_view> args,
                              std::vector<size_t>* out) {
  if (const size_t after_keyword = KeysAfterKeyword(spec, args); after_keyword != 0) {
    out->clear();
    for (size_t i = after_keyword; i < args.size(); ++i) out->push_back(i);
    return;
  }
  KeyIndices(spec, args.size(), out);
  const size_t count = NumKeys(spec, args);
  for (size_t i = 0; i < count; ++i) {
    out->push_back(static_cast<size_t>(spec.numkeys_index) + 1 + i);
  }
}

bool CommandTable::ArityMatches(const CommandSpec& spec, size_t argc) {
  if (spec.arity > 0 && argc != static_cast<size_t>(spec.arity)) return false;
  if (spec.arity < 0 && argc < static_cast<size_t>(-spec.arity)) return false;
  if (spec.max_args > 0 && argc > static_cast<size_t>(spec.max_args)) return false;
  return true;
}

}  // namespace bloomgate
