// One ACL user and the two things done with it: applying ACL SETUSER rules
// (Redis's syntax and error texts) and deciding whether it may run a command
// on its keys. Pure: no locks, no clients; AclStore (acl_store.h) keeps the
// named users and shares immutable copies with connections.
//
// The subset of Redis 7's ACL rules Bloomgate supports:
//   on | off                      may authenticate, or not (connections already
//                                 authenticated stay, as in Redis)
//   >pw | <pw | #hash | !hash     add / remove a password (kept only as its
//                                 SHA-256), nopass, resetpass
//   ~pattern | allkeys | resetkeys   key glob patterns (~* = allkeys)
//   +cmd | -cmd | +cmd|sub | -cmd|sub | +@cat | -@cat | allcommands (+@all)
//   | nocommands (-@all)
//   reset                         back to a new user: off, no passwords, no
//                                 keys, no commands
//   &pattern | allchannels (&*) | resetchannels   pub/sub channel globs:
//                                 PUBLISH and SUBSCRIBE channels must match
//                                 one, PSUBSCRIBE patterns must equal one
//                                 (Redis 7); a new user (and `reset`) starts
//                                 from acl-pubsub-default, resetchannels
//                                 unless configured
// Refused with an error naming the rule: selectors "(...)", %R~ / %W~ key
// permissions, first-arg rules (+select|0).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

class CommandTable;
struct CommandSpec;

struct AclUser {
  std::string name;
  bool enabled = false;
  bool nopass = false;
  std::vector<std::string> password_hashes;  // lowercase hex SHA-256, in the order added
  bool all_keys = false;
  std::vector<std::string> key_patterns;
  bool all_channels = false;
  std::vector<std::string> channel_patterns;
  // Bit CommandSpec::id: may run that row. A container's bit covers running
  // it alone (COMMAND); each subcommand has its own bit.
  std::vector<uint64_t> allowed_commands;
  // Whether the command rules start from +@all (else from -@all), and the
  // rules applied since, lower-cased, each command's earlier rules dropped
  // (Redis's ACLUpdateCommandRules), so that replaying "+@all"/"-@all" and
  // them gives the same bits: this is what ACL LIST shows.
  bool from_all_commands = false;
  std::vector<std::string> command_rules;

  bool Allowed(size_t command_id) const {
    size_t word = command_id / 64;
    return word < allowed_commands.size() && (allowed_commands[word] >> (command_id % 64)) & 1;
  }
};

// A new user as Redis creates one: off, no password, no keys, no commands,
// and every channel or none as acl-pubsub-default says.
AclUser NewAclUser(std::string name, const CommandTable& table, bool all_channels = false);
// Redis's default user: on, nopass, ~*, &*, +@all.
AclUser DefaultAclUser(const CommandTable& table);

// Applies one rule. nullopt on success; otherwise Redis's reason ("Syntax
// error", "Unknown command or category name in ACL", ...), to be wrapped as
// AclRuleError(rule, reason), and *user may be half changed (callers work
// on a copy).
// `reset_all_channels` is what `reset` leaves the channels at
// (acl-pubsub-default).
std::optional<std::string_view> ApplyAclRule(AclUser* user, std::string_view rule,
                                             const CommandTable& table,
                                             bool reset_all_channels = false);
// "ERR Error in ACL SETUSER modifier '<rule>': <reason>".
std::string AclRuleError(std::string_view rule, std::string_view reason);

// Whether `name` may name a user: no spaces, no control whitespace, no NUL.
bool ValidAclName(std::string_view name);

// The rules that recreate the user, as ACL LIST shows them after
// "user <name> ": "on #<hash> ~edge:* -@all +bf.add +bf.exists".
std::string DescribeAclUser(const AclUser& user);
// The command part alone ("-@all +bf.add"), ACL GETUSER's "commands".
std::string DescribeAclCommands(const AclUser& user);
// ACL GETUSER's "channels": "&*", "&news &alerts:*", or "" for none.
std::string DescribeAclChannels(const AclUser& user);

// Whether `user` may use `channel`: PUBLISH's and SUBSCRIBE's channels match
// one of its globs; a PSUBSCRIBE pattern (`is_pattern`) must be one of them
// literally, as Redis 7 (a pattern cannot be proven to stay inside a glob).
bool AclChannelAllowed(const AclUser& user, std::string_view channel, bool is_pattern);

// Whether `password` authenticates as `user` (enabled, and nopass or a
// matching hash; compared in constant time).
bool AclPasswordMatches(const AclUser& user, std::string_view password);

enum class AclDenial { kNone, kCommand, kKey, kChannel };

// The central permission decision for one resolved row (a subcommand's own
// row) and its arguments. kCmdNoAuth rows (AUTH, HELLO, QUIT) are always
// allowed, as in Redis. Keys come from the row's key positions, every one
// checked; a command over the whole keyspace (KEYS, SCAN, FLUSHALL, FLUSHDB)
// needs allkeys. *denied_key (optional) is the index of the refused key
// (or channel). Channels come from the row's channel_args.
AclDenial CheckAclPermission(const AclUser& user, const CommandSpec& spec,
                             std::span<const std::string_view> args, size_t* denied_key = nullptr);

}  // namespace bloomgate
