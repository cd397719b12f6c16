// ACL rules and permission decisions, without a server: what ACL SETUSER
// makes of each rule (Redis's syntax and error texts), what ACL LIST shows,
// and what a user may run on which keys.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "server/access/acl_user.h"
#include "server/access/sha256.h"
#include "server/catalogue/acl_categories.h"
#include "server/catalogue/command_table.h"

namespace bloomgate {
namespace {

class AclRules : public ::testing::Test {
 protected:
  // A new user with `rules` applied; fails the test on a refused rule.
  AclUser Make(std::initializer_list<std::string_view> rules) {
    AclUser user = NewAclUser("u", table_);
    for (std::string_view rule : rules) {
      auto error = ApplyAclRule(&user, rule, table_);
      EXPECT_FALSE(error.has_value()) << rule << ": " << *error;
    }
    return user;
  }
  std::string Refusal(std::string_view rule, std::initializer_list<std::string_view> before = {}) {
    AclUser user = Make(before);
    auto error = ApplyAclRule(&user, rule, table_);
    return error ? AclRuleError(rule, *error) : "accepted";
  }
  AclDenial Check(const AclUser& user, std::vector<std::string_view> args,
                  size_t* denied_key = nullptr) {
    const CommandSpec* spec = table_.Find(args[0]);
    if (!spec->subcommands.empty() && args.size() > 1) {
      spec = CommandTable::FindSubcommand(*spec, args[1]);
    }
    return CheckAclPermission(user, *spec, args, denied_key);
  }

  CommandTable table_;
};

TEST_F(AclRules, EdgeUserRunsItsTwoCommandsOnItsKeysAndNothingElse) {
  AclUser edge = Make({"on", ">pw", "~edge:*", "+bf.add", "+bf.exists"});
  EXPECT_EQ(Check(edge, {"bf.add", "edge:1", "x"}), AclDenial::kNone);
  EXPECT_EQ(Check(edge, {"BF.EXISTS", "edge:1", "x"}), AclDenial::kNone);
  EXPECT_EQ(Check(edge, {"bf.add", "core:1", "x"}), AclDenial::kKey);
  EXPECT_EQ(Check(edge, {"bf.reserve", "edge:1", "0.01", "100"}), AclDenial::kCommand);
  EXPECT_EQ(Check(edge, {"bf.madd", "edge:1", "x"}), AclDenial::kCommand);
  EXPECT_EQ(Check(edge, {"cf.add", "edge:1", "x"}), AclDenial::kCommand);
  EXPECT_EQ(Check(edge, {"config", "get", "port"}), AclDenial::kCommand);
  EXPECT_EQ(Check(edge, {"ping"}), AclDenial::kCommand);
  // AUTH, HELLO and QUIT are never refused (Redis: CMD_NO_AUTH).
  EXPECT_EQ(Check(edge, {"auth", "edge", "pw"}), AclDenial::kNone);
  EXPECT_EQ(Check(edge, {"quit"}), AclDenial::kNone);
}

TEST_F(AclRules, EveryKeyOfAMultiKeyCommandIsChecked) {
  AclUser user = Make({"~edge:*", "+exists", "+del"});
  size_t denied = 0;
  EXPECT_EQ(Check(user, {"exists", "edge:a", "edge:b"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"exists", "edge:a", "core:b", "edge:c"}, &denied), AclDenial::kKey);
  EXPECT_EQ(denied, 2u);
  EXPECT_EQ(Check(user, {"del", "edge:a", "edge:b", "x"}, &denied), AclDenial::kKey);
  EXPECT_EQ(denied, 3u);
}

TEST_F(AclRules, WholeKeyspaceCommandsNeedAllKeys) {
  AclUser limited = Make({"~edge:*", "+keys", "+scan", "+flushall", "+dbsize"});
  EXPECT_EQ(Check(limited, {"keys", "edge:*"}), AclDenial::kKey);
  EXPECT_EQ(Check(limited, {"scan", "0"}), AclDenial::kKey);
  EXPECT_EQ(Check(limited, {"flushall"}), AclDenial::kKey);
  EXPECT_EQ(Check(limited, {"dbsize"}), AclDenial::kNone);  // names no key
  AclUser everything = Make({"allkeys", "+keys"});
  EXPECT_EQ(Check(everything, {"keys", "*"}), AclDenial::kNone);
}

TEST_F(AclRules, CategoriesComeFromTheCommandTable) {
  AclUser bloom = Make({"allkeys", "+@bloom"});
  EXPECT_EQ(Check(bloom, {"bf.reserve", "k", "0.01", "10"}), AclDenial::kNone);
  EXPECT_EQ(Check(bloom, {"cbf.add", "k", "x"}), AclDenial::kNone);  // counting Bloom shares it
  EXPECT_EQ(Check(bloom, {"cf.add", "k", "x"}), AclDenial::kCommand);

  AclUser reader = Make({"allkeys", "+@all", "-@write", "-@dangerous"});
  EXPECT_EQ(Check(reader, {"bf.exists", "k", "x"}), AclDenial::kNone);
  EXPECT_EQ(Check(reader, {"cf.count", "k", "x"}), AclDenial::kNone);
  EXPECT_EQ(Check(reader, {"bf.add", "k", "x"}), AclDenial::kCommand);
  EXPECT_EQ(Check(reader, {"del", "k"}), AclDenial::kCommand);
  EXPECT_EQ(Check(reader, {"config", "set", "port", "1"}), AclDenial::kCommand);  // @admin
  EXPECT_EQ(Check(reader, {"flushall"}), AclDenial::kCommand);
  EXPECT_EQ(Check(reader, {"keys", "*"}), AclDenial::kCommand);
  EXPECT_EQ(Check(reader, {"dump", "k"}), AclDenial::kNone);

  AclUser connection = Make({"+@connection"});
  EXPECT_EQ(Check(connection, {"ping"}), AclDenial::kNone);
  EXPECT_EQ(Check(connection, {"client", "setname", "x"}), AclDenial::kNone);
  EXPECT_EQ(Check(connection, {"multi"}), AclDenial::kCommand);
  AclUser transactions = Make({"+@transaction"});
  EXPECT_EQ(Check(transactions, {"multi"}), AclDenial::kNone);
  EXPECT_EQ(Check(transactions, {"exec"}), AclDenial::kNone);
}

TEST_F(AclRules, CategoryMasksFollowFlagsGroupAndFamily) {
  auto names = [&](std::string_view command) {
    std::vector<std::string> out;
    for (std::string_view n : AclCategoryList(table_.Find(command)->acl_categories)) {
      out.emplace_back(n);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names("bf.add"), (V{"@write", "@slow", "@bloom"}));
  EXPECT_EQ(names("bf.exists"), (V{"@read", "@fast", "@bloom"}));
  EXPECT_EQ(names("cf.reserve"), (V{"@write", "@slow", "@cuckoo"}));
  EXPECT_EQ(names("flushall"), (V{"@keyspace", "@write", "@slow", "@dangerous"}));
  EXPECT_EQ(names("exists"), (V{"@keyspace", "@read", "@fast"}));
  EXPECT_EQ(names("ping"), (V{"@fast", "@connection"}));
  EXPECT_EQ(names("multi"), (V{"@fast", "@transaction"}));
  EXPECT_EQ(names("save"), (V{"@admin", "@slow", "@dangerous"}));
  // Redis 7.0's own categories for these, from its command table.
  EXPECT_EQ(names("restore"), (V{"@keyspace", "@write", "@slow", "@dangerous"}));
  EXPECT_EQ(names("migrate"), (V{"@keyspace", "@write", "@slow", "@dangerous"}));
  EXPECT_EQ(names("keys"), (V{"@keyspace", "@read", "@slow", "@dangerous"}));
  EXPECT_EQ(names("info"), (V{"@slow", "@dangerous"}));
  for (std::string_view kin : {"restore-asking", "restore-chunk"}) {
    EXPECT_EQ(names(kin).back(), "@dangerous") << kin;
  }
  EXPECT_TRUE(FindAclCategory("BLOOM").has_value());
  EXPECT_FALSE(FindAclCategory("@bloom").has_value());
  EXPECT_FALSE(FindAclCategory("string").has_value());
}

TEST_F(AclRules, SubcommandsCanBeAllowedAlone) {
  AclUser user = Make({"+client|id", "+config", "-config|set"});
  EXPECT_EQ(Check(user, {"client", "id"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"client", "list"}), AclDenial::kCommand);
  EXPECT_EQ(Check(user, {"config", "get", "port"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"config", "set", "port", "1"}), AclDenial::kCommand);
  EXPECT_EQ(DescribeAclCommands(user), "-@all +client|id +config -config|set");
}

TEST_F(AclRules, ListShowsTheRulesThatRecreateTheUser) {
  AclUser edge = Make({"on", ">pw", "~edge:*", "+bf.add", "+BF.EXISTS"});
  EXPECT_EQ(DescribeAclUser(edge),
            "on #" + Sha256Hex("pw") + " ~edge:* resetchannels -@all +bf.add +bf.exists");
  EXPECT_EQ(DescribeAclUser(DefaultAclUser(table_)), "on nopass ~* &* +@all");
  EXPECT_EQ(DescribeAclUser(NewAclUser("x", table_)), "off resetchannels -@all");
  EXPECT_EQ(DescribeAclUser(NewAclUser("x", table_, /*all_channels=*/true)), "off &* -@all");
  // A later rule for a command replaces the earlier ones for it and its
  // subcommands, so the list stays short.
  AclUser churn = Make({"+bf.add", "-bf.add", "+client|id", "+client", "+bf.add", "-@bloom"});
  EXPECT_EQ(DescribeAclCommands(churn), "-@all +client +bf.add -@bloom");
}

TEST_F(AclRules, ReplayingTheDescriptionGivesTheSameBits) {
  const std::vector<std::vector<std::string_view>> cases = {
      {"+@all", "-@write", "+bf.add", "-config|set"},
      {"+@bloom", "-bf.reserve", "+@cuckoo", "-cf.del", "+bf.reserve", "-@write"},
      {"+client", "-client|list", "+@connection", "-ping", "+client|list"},
      {"allcommands", "-@dangerous", "+flushall", "-@keyspace", "+exists"},
  };
  for (const auto& rules : cases) {
    AclUser user = NewAclUser("u", table_);
    for (std::string_view rule : rules) ASSERT_FALSE(ApplyAclRule(&user, rule, table_));
    AclUser replayed = NewAclUser("u", table_);
    std::string described = DescribeAclCommands(user);
    size_t at = 0;
    while (at <= described.size()) {
      size_t end = std::min(described.find(' ', at), described.size());
      ASSERT_FALSE(ApplyAclRule(&replayed, described.substr(at, end - at), table_)) << described;
      at = end + 1;
    }
    EXPECT_EQ(replayed.allowed_commands, user.allowed_commands) << described;
  }
}

TEST_F(AclRules, PasswordsAreKeptAsSha256AndChecked) {
  AclUser user = Make({"on", ">one", ">two"});
  ASSERT_EQ(user.password_hashes.size(), 2u);
  EXPECT_EQ(user.password_hashes[0], Sha256Hex("one"));
  EXPECT_TRUE(AclPasswordMatches(user, "one"));
  EXPECT_TRUE(AclPasswordMatches(user, "two"));
  EXPECT_FALSE(AclPasswordMatches(user, "three"));
  EXPECT_FALSE(AclPasswordMatches(user, ""));

  std::string hash_rule = "!" + Sha256Hex("one");
  ASSERT_FALSE(ApplyAclRule(&user, hash_rule, table_));
  EXPECT_FALSE(AclPasswordMatches(user, "one"));
  ASSERT_FALSE(ApplyAclRule(&user, "<two", table_));
  EXPECT_FALSE(AclPasswordMatches(user, "two"));  // no password left, not nopass

  std::string given_hash = "#" + Sha256Hex("three");
  ASSERT_FALSE(ApplyAclRule(&user, given_hash, table_));
  EXPECT_TRUE(AclPasswordMatches(user, "three"));
  ASSERT_FALSE(ApplyAclRule(&user, "off", table_));
  EXPECT_FALSE(AclPasswordMatches(user, "three"));  // a disabled user never authenticates
  ASSERT_FALSE(ApplyAclRule(&user, "on", table_));
  ASSERT_FALSE(ApplyAclRule(&user, "nopass", table_));
  EXPECT_TRUE(AclPasswordMatches(user, "anything"));
  ASSERT_FALSE(ApplyAclRule(&user, "resetpass", table_));
  EXPECT_FALSE(AclPasswordMatches(user, "anything"));
}

TEST_F(AclRules, BadRulesGetRedisTexts) {
  EXPECT_EQ(Refusal("heeyyyy"), "ERR Error in ACL SETUSER modifier 'heeyyyy': Syntax error");
  EXPECT_EQ(Refusal("+nosuch"),
            "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in "
            "ACL");
  EXPECT_EQ(Refusal("-@nosuch"),
            "ERR Error in ACL SETUSER modifier '-@nosuch': Unknown command or category name in "
            "ACL");
  EXPECT_EQ(Refusal("+client|nosuch"),
            "ERR Error in ACL SETUSER modifier '+client|nosuch': Unknown command or category "
            "name in ACL");
  EXPECT_EQ(Refusal("+client|"), "ERR Error in ACL SETUSER modifier '+client|': Syntax error");
  EXPECT_EQ(Refusal("~edge:*", {"allkeys"}),
            "ERR Error in ACL SETUSER modifier '~edge:*': Adding a pattern after the * pattern "
            "(or the 'allkeys' flag) is not valid and does not have any effect. Try "
            "'resetkeys' to start with an empty list of patterns");
  EXPECT_EQ(Refusal("<nothere"),
            "ERR Error in ACL SETUSER modifier '<nothere': The password you are trying to "
            "remove from the user does not exist");
  EXPECT_EQ(Refusal("#ABC"),
            "ERR Error in ACL SETUSER modifier '#ABC': The password hash must be exactly 64 "
            "characters and contain only lowercase hexadecimal characters");
  EXPECT_EQ(Refusal("#" + std::string(64, 'A')).find("The password hash must"),
            std::string("ERR Error in ACL SETUSER modifier '#" + std::string(64, 'A') + "': ")
                .size());
  EXPECT_NE(Refusal("(~x +get)").find("selectors are not supported"), std::string::npos);
  EXPECT_NE(Refusal("%R~x").find("not supported"), std::string::npos);
  EXPECT_NE(Refusal("+select|0").find("first-arg"), std::string::npos);
  EXPECT_EQ(Refusal("~a b"), "ERR Error in ACL SETUSER modifier '~a b': Syntax error");
  EXPECT_EQ(Refusal("&*"), "accepted");
  EXPECT_EQ(Refusal("resetchannels"), "accepted");
  EXPECT_EQ(Refusal("allchannels"), "accepted");
  EXPECT_EQ(Refusal("&news"), "accepted");
  EXPECT_EQ(Refusal("&a b"), "ERR Error in ACL SETUSER modifier '&a b': Syntax error");
}

TEST_F(AclRules, ResetReturnsTheUserToHowItWasCreated) {
  AclUser user = Make({"on", ">pw", "~k*", "+@all"});
  ASSERT_FALSE(ApplyAclRule(&user, "reset", table_));
  EXPECT_EQ(user.name, "u");
  EXPECT_EQ(DescribeAclUser(user), "off resetchannels -@all");
  EXPECT_EQ(Check(user, {"ping"}), AclDenial::kCommand);
  // acl-pubsub-default allchannels: reset leaves every channel.
  ASSERT_FALSE(ApplyAclRule(&user, "reset", table_, /*reset_all_channels=*/true));
  EXPECT_EQ(DescribeAclUser(user), "off &* -@all");
}

TEST_F(AclRules, ChannelRulesAsRedis7) {
  AclUser user = Make({"on", "+@all", "&news", "&alerts:*", "&news"});
  EXPECT_EQ(DescribeAclChannels(user), "&news &alerts:*");
  EXPECT_EQ(DescribeAclUser(user), "on resetchannels &news &alerts:* +@all");
  EXPECT_EQ(Check(user, {"publish", "news", "m"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"publish", "alerts:disk", "m"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"publish", "other", "m"}), AclDenial::kChannel);
  EXPECT_EQ(Check(user, {"subscribe", "news", "alerts:x"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"subscribe", "news", "other"}), AclDenial::kChannel);
  // A pattern must be one of the user's own, literally.
  EXPECT_EQ(Check(user, {"psubscribe", "alerts:*"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"psubscribe", "alerts:d*"}), AclDenial::kChannel);
  EXPECT_EQ(Check(user, {"psubscribe", "news"}), AclDenial::kNone);
  // Leaving is never refused; the message is not a channel.
  EXPECT_EQ(Check(user, {"unsubscribe", "other"}), AclDenial::kNone);
  EXPECT_EQ(Check(user, {"publish", "news", "other"}), AclDenial::kNone);
  // A pattern after allchannels has no effect: Redis refuses it.
  AclUser all = Make({"allchannels"});
  EXPECT_EQ(Check(Make({"+@all", "allchannels"}), {"psubscribe", "x*"}), AclDenial::kNone);
  EXPECT_EQ(ApplyAclRule(&all, "&x", table_).value_or(""),
            "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and "
            "does not have any effect. Try 'resetchannels' to start with an empty list of "
            "channels");
  ASSERT_FALSE(ApplyAclRule(&all, "resetchannels", table_));
  EXPECT_EQ(DescribeAclChannels(all), "");
  EXPECT_EQ(Check(Make({"+@all"}), {"subscribe", "news"}), AclDenial::kChannel);
  // A line written by ACL LIST reads back to the same user whatever the
  // default: "resetchannels" is spelled out.
  AclUser again = NewAclUser("u", table_, /*all_channels=*/true);
  for (std::string_view rule : {"on", "resetchannels", "&news", "&alerts:*", "+@all"}) {
    ASSERT_FALSE(ApplyAclRule(&again, rule, table_, true));
  }
  EXPECT_EQ(DescribeAclUser(again), DescribeAclUser(user));
}

TEST(AclNames, SpacesAndNulAreRefused) {
  EXPECT_TRUE(ValidAclName("edge-1"));
  EXPECT_FALSE(ValidAclName("a b"));
  EXPECT_FALSE(ValidAclName("a\tb"));
  EXPECT_FALSE(ValidAclName(std::string_view("a\0b", 3)));
}

}  // namespace
}  // namespace bloomgate
