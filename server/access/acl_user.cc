#include "server/access/acl_user.h"

#include <algorithm>

#include "server/access/sha256.h"
#include "server/base/glob.h"
#include "server/catalogue/acl_categories.h"
#include "server/catalogue/command_table.h"

namespace bloomgate {
namespace {

// Redis's reasons (acl.c ACLSetUserStringError), by the errno it sets.
constexpr std::string_view kSyntaxError = "Syntax error";                         // EINVAL
constexpr std::string_view kUnknownName = "Unknown command or category name in ACL";  // ENOENT
constexpr std::string_view kPatternAfterAllKeys =                                  // EEXIST
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns";
constexpr std::string_view kNoSuchPassword =                                       // ENODEV
    "The password you are trying to remove from the user does not exist";
constexpr std::string_view kBadHash =                                              // EBADMSG
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters";
// Ours, for what Redis 7 has and Bloomgate does not (README, "ACL users").
constexpr std::string_view kNoSelectors = "ACL selectors are not supported by Bloomgate";
constexpr std::string_view kNoKeyPermissions =
    "read/write key permissions (%R~, %W~) are not supported by Bloomgate";
constexpr std::string_view kPatternAfterAllChannels =                             // EISDIR
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels";
constexpr std::string_view kNoFirstArgs =
    "first-arg rules are not supported by Bloomgate; allow the whole command";

constexpr size_t kHashHexLength = 64;  // SHA-256: 32 bytes, 2 hex digits each

bool HasSpaces(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' ||
           c == '\0';
  });
}

bool ValidHash(std::string_view hash) {
  return hash.size() == kHashHexLength &&
         std::all_of(hash.begin(), hash.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

void SetBit(AclUser* user, size_t id, bool allow) {
  uint64_t bit = uint64_t{1} << (id % 64);
  if (allow) {
    user->allowed_commands[id / 64] |= bit;
  } else {
    user->allowed_commands[id / 64] &= ~bit;
  }
}

// A row and, for a container, every subcommand (Redis's ACLChangeSelectorPerm).
void SetCommand(AclUser* user, const CommandSpec& spec, bool allow) {
  SetBit(user, spec.id, allow);
  for (const CommandSpec& sub : spec.subcommands) SetBit(user, sub.id, allow);
}

void SetAll(AclUser* user, bool allow) {
  std::fill(user->allowed_commands.begin(), user->allowed_commands.end(),
            allow ? ~uint64_t{0} : uint64_t{0});
  user->from_all_commands = allow;
  user->command_rules.clear();
}

// Keeps the rule list minimal and replayable: a new rule for a command (or
// category) replaces earlier rules for it and for its subcommands, which it
// overrides entirely.
void RecordRule(AclUser* user, bool allow, std::string_view body) {
  std::string lower = AsciiLower(body);
  auto overridden = [&](const std::string& rule) {
    std::string_view old = std::string_view(rule).substr(1);
    return old == lower || (old.size() > lower.size() && old.substr(0, lower.size()) == lower &&
                            old[lower.size()] == '|');
  };
  auto& rules = user->command_rules;
  rules.erase(std::remove_if(rules.begin(), rules.end(), overridden), rules.end());
  rules.push_back((allow ? "+" : "-") + lower);
}

std::optional<std::string_view> ApplyCommandRule(AclUser* user, std::string_view rule,
                                                 const CommandTable& table) {
  const bool allow = rule[0] == '+';
  std::string_view body = rule.substr(1);
  if (!body.empty() && body[0] == '@') {
    std::string_view category = body.substr(1);
    if (EqualsIgnoreCase(category, "all")) {
      SetAll(user, allow);
      return std::nullopt;
    }
    auto index = FindAclCategory(category);
    if (!index) return kUnknownName;
    const uint64_t bit = uint64_t{1} << *index;
    for (const CommandSpec* spec : table.all()) {
      if (spec->acl_categories & bit) SetBit(user, spec->id, allow);
    }
    RecordRule(user, allow, body);
    return std::nullopt;
  }
  size_t bar = body.rfind('|');
  if (bar == std::string_view::npos) {
    const CommandSpec* spec = table.Find(body);
    if (spec == nullptr) return kUnknownName;
    SetCommand(user, *spec, allow);
    RecordRule(user, allow, spec->full_name);
    return std::nullopt;
  }
  const CommandSpec* container = table.Find(body.substr(0, bar));
  if (container == nullptr) return kUnknownName;
  std::string_view sub_name = body.substr(bar + 1);
  if (sub_name.empty()) return kSyntaxError;
  if (container->subcommands.empty()) return allow ? kNoFirstArgs : kUnknownName;
  const CommandSpec* sub = CommandTable::FindSubcommand(*container, sub_name);
  if (sub == nullptr) return kUnknownName;
  SetBit(user, sub->id, allow);
  RecordRule(user, allow, sub->full_name);
  return std::nullopt;
}

void RemoveHash(std::vector<std::string>* hashes, const std::string& hash, bool* found) {
  auto it = std::find(hashes->begin(), hashes->end(), hash);
  *found = it != hashes->end();
  if (*found) hashes->erase(it);
}

}  // namespace

AclUser NewAclUser(std::string name, const CommandTable& table, bool all_channels) {
  AclUser user;
  user.name = std::move(name);
  user.all_channels = all_channels;
  user.allowed_commands.assign((table.all().size() + 63) / 64, 0);
  return user;
}

AclUser DefaultAclUser(const CommandTable& table) {
  AclUser user = NewAclUser("default", table);
  user.enabled = true;
  user.nopass = true;
  user.all_keys = true;
  user.all_channels = true;
  SetAll(&user, /*allow=*/true);
  return user;
}

std::optional<std::string_view> ApplyAclRule(AclUser* user, std::string_view rule,
                                             const CommandTable& table,
                                             bool reset_all_channels) {
  if (rule.empty()) return std::nullopt;  // Redis: a no-op
  auto is = [&](std::string_view word) { return EqualsIgnoreCase(rule, word); };
  if (is("on")) {
    user->enabled = true;
  } else if (is("off")) {
    user->enabled = false;
  } else if (is("nopass")) {
    user->nopass = true;
    user->password_hashes.clear();
  } else if (is("resetpass")) {
    user->nopass = false;
    user->password_hashes.clear();
  } else if (is("reset")) {
    std::string name = std::move(user->name);
    *user = NewAclUser(std::move(name), table, reset_all_channels);
  } else if (is("allkeys") || rule == "~*") {
    user->all_keys = true;
    user->key_patterns.clear();
  } else if (is("resetkeys")) {
    user->all_keys = false;
    user->key_patterns.clear();
  } else if (is("allcommands")) {
    SetAll(user, true);
  } else if (is("nocommands")) {
    SetAll(user, false);
  } else if (is("allchannels") || rule == "&*") {
    user->all_channels = true;
    user->channel_patterns.clear();
  } else if (is("resetchannels")) {
    user->all_channels = false;
    user->channel_patterns.clear();
  } else if (rule[0] == '>' || rule[0] == '#') {
    std::string hash = rule[0] == '>' ? Sha256Hex(rule.substr(1)) : std::string(rule.substr(1));
    if (!ValidHash(hash)) return kBadHash;
    auto& hashes = user->password_hashes;
    if (std::find(hashes.begin(), hashes.end(), hash) == hashes.end()) hashes.push_back(hash);
    user->nopass = false;
  } else if (rule[0] == '<' || rule[0] == '!') {
    std::string hash = rule[0] == '<' ? Sha256Hex(rule.substr(1)) : std::string(rule.substr(1));
    if (!ValidHash(hash)) return kBadHash;
    bool found = false;
    RemoveHash(&user->password_hashes, hash, &found);
    if (!found) return kNoSuchPassword;
  } else if (rule[0] == '(') {
    return kNoSelectors;
  } else if (rule[0] == '%') {
    return kNoKeyPermissions;
  } else if (rule[0] == '&') {
    if (user->all_channels) return kPatternAfterAllChannels;
    std::string_view pattern = rule.substr(1);
    if (HasSpaces(pattern)) return kSyntaxError;
    auto& patterns = user->channel_patterns;
    if (std::find(patterns.begin(), patterns.end(), pattern) == patterns.end()) {
      patterns.emplace_back(pattern);
    }
  } else if (rule[0] == '~') {
    if (user->all_keys) return kPatternAfterAllKeys;
    std::string_view pattern = rule.substr(1);
    if (HasSpaces(pattern)) return kSyntaxError;
    auto& patterns = user->key_patterns;
    if (std::find(patterns.begin(), patterns.end(), pattern) == patterns.end()) {
      patterns.emplace_back(pattern);
    }
  } else if ((rule[0] == '+' || rule[0] == '-') && rule.size() > 1) {
    return ApplyCommandRule(user, rule, table);
  } else {
    return kSyntaxError;
  }
  return std::nullopt;
}

std::string AclRuleError(std::string_view rule, std::string_view reason) {
  std::string text = "ERR Error in ACL SETUSER modifier '";
  text += rule;
  text += "': ";
  text += reason;
  return text;
}

bool ValidAclName(std::string_view name) { return !HasSpaces(name); }

std::string DescribeAclCommands(const AclUser& user) {
  std::string text = user.from_all_commands ? "+@all" : "-@all";
  for (const std::string& rule : user.command_rules) {
    text += ' ';
    text += rule;
  }
  return text;
}

std::string DescribeAclChannels(const AclUser& user) {
  if (user.all_channels) return "&*";
  std::string text;
  for (const std::string& pattern : user.channel_patterns) {
    if (!text.empty()) text += ' ';
    text += "&" + pattern;
  }
  return text;
}

bool AclChannelAllowed(const AclUser& user, std::string_view channel, bool is_pattern) {
  if (user.all_channels) return true;
  return std::any_of(user.channel_patterns.begin(), user.channel_patterns.end(),
                     [&](const std::string& pattern) {
                       return is_pattern ? pattern == channel : GlobMatch(pattern, channel);
                     });
}

std::string DescribeAclUser(const AclUser& user) {
  std::string text = user.enabled ? "on" : "off";
  if (user.nopass) text += " nopass";
  for (const std::string& hash : user.password_hashes) text += " #" + hash;
  if (user.all_keys) {
    text += " ~*";
  } else {
    for (const std::string& pattern : user.key_patterns) text += " ~" + pattern;
  }
  // Redis 7's form: "&*", or "resetchannels" and the patterns, so that a
  // line read back under either acl-pubsub-default gives the same user.
  if (user.all_channels) {
    text += " &*";
  } else {
    text += " resetchannels";
    for (const std::string& pattern : user.channel_patterns) text += " &" + pattern;
  }
  text += ' ';
  text += DescribeAclCommands(user);
  return text;
}

bool AclPasswordMatches(const AclUser& user, std::string_view password) {
  if (!user.enabled) return false;
  if (user.nopass) return true;
  const std::string hash = Sha256Hex(password);
  bool match = false;
  for (const std::string& stored : user.password_hashes) {
    // Constant time per stored hash (all are 64 characters), as Redis's
    // time_independent_strcmp: the time taken says nothing of the prefix.
    unsigned char diff = 0;
    for (size_t i = 0; i < kHashHexLength; ++i) {
      diff |= static_cast<unsigned char>(stored[i] ^ hash[i]);
    }
    match |= diff == 0;
  }
  return match;
}

namespace {

// The first argument of a channel row that `user` may not use, if any.
std::optional<size_t> DeniedChannel(const AclUser& user, const CommandSpec& spec,
                                    std::span<const std::string_view> args) {
  if (spec.channel_args == ChannelArgs::kNone || user.all_channels) return std::nullopt;
  const bool patterns = spec.channel_args == ChannelArgs::kAllPatterns;
  const size_t end = spec.channel_args == ChannelArgs::kFirst ? std::min<size_t>(args.size(), 2)
                                                              : args.size();
  for (size_t i = 1; i < end; ++i) {
    if (!AclChannelAllowed(user, args[i], patterns)) return i;
  }
  return std::nullopt;
}

}  // namespace

AclDenial CheckAclPermission(const AclUser& user, const CommandSpec& spec,
                             std::span<const std::string_view> args, size_t* denied_key) {
  if (spec.flags & kCmdNoAuth) return AclDenial::kNone;
  if (!user.Allowed(spec.id)) return AclDenial::kCommand;
  if (std::optional<size_t> channel = DeniedChannel(user, spec, args)) {
    if (denied_key != nullptr) *denied_key = *channel;
    return AclDenial::kChannel;
  }
  if (user.all_keys) return AclDenial::kNone;
  // Ours, stricter than Redis (which lets KEYS and SCAN list every name and
  // FLUSHALL drop every key for a user limited to ~edge:*).
  if (spec.flags & kCmdAllKeys) return AclDenial::kKey;
  std::vector<size_t> indices;
  CommandTable::KeyIndices(spec, args.size(), &indices);
  for (size_t index : indices) {
    bool match = std::any_of(user.key_patterns.begin(), user.key_patterns.end(),
                             [&](const std::string& pattern) {
                               return GlobMatch(pattern, args[index]);
                             });
    if (!match) {
      if (denied_key != nullptr) *denied_key = index;
      return AclDenial::kKey;
    }
  }
  return AclDenial::kNone;
}

}  // namespace bloomgate
