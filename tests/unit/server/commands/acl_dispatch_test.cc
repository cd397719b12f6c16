// ACL users through the dispatcher, as clients see them: AUTH as a user,
// NOPERM refusals with Redis's texts, MULTI's two checks, ACL SETUSER and
// DELUSER reaching connections already authenticated, requirepass as the
// default user's password, and users from the config file.
#include <gtest/gtest.h>

#include <string>

#include "server/access/sha256.h"
#include "server/commands/errors.h"
#include "server/commands/journal_applier.h"
#include "../session.h"

namespace bloomgate {
namespace {

using testing::Args;
using testing::Arr;
using testing::Bulk;
using testing::Err;
using testing::Int;
using testing::kNil;
using testing::kOk;
using testing::kQueued;
using testing::MakeServer;
using testing::Session;

// A session that connected the way a socket does: as the default user,
// authenticated only if that user has nopass.
Session Connect(ServerContext* server, size_t worker = 0) {
  Session s(server, worker);
  s.client().user = server->acl.Find("default");
  s.client().acl_version = server->acl.version();
  s.client().authenticated = s.client().user->nopass;
  return s;
}

const std::string kEdgeReserveDenied =
    Err("NOPERM User edge has no permissions to run the 'bf.reserve' command");

class AclDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = MakeServer();
    admin_ = std::make_unique<Session>(Connect(server_.get()));
    ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "on", ">pw", "~edge:*", "+bf.add",
                           "+bf.exists"}),
              kOk);
  }
  std::unique_ptr<ServerContext> server_;
  std::unique_ptr<Session> admin_;
};

TEST_F(AclDispatch, EdgeUserCanAddAndTestItsKeysAndNothingElse) {
  Session edge = Connect(server_.get(), 1);
  ASSERT_EQ(edge.Run({"AUTH", "edge", "pw"}), kOk);
  EXPECT_EQ(edge.Run({"ACL", "WHOAMI"}),
            Err("NOPERM User edge has no permissions to run the 'acl|whoami' command"));
  EXPECT_EQ(edge.Run({"BF.ADD", "edge:1", "x"}), Int(1));
  EXPECT_EQ(edge.Run({"BF.EXISTS", "edge:1", "x"}), Int(1));
  EXPECT_EQ(edge.Run({"BF.ADD", "core:1", "x"}), Err("NOPERM No permissions to access a key"));
  EXPECT_EQ(edge.Run({"BF.RESERVE", "edge:2", "0.01", "100"}), kEdgeReserveDenied);
  EXPECT_EQ(edge.Run({"DEL", "edge:1"}),
            Err("NOPERM User edge has no permissions to run the 'del' command"));
  EXPECT_EQ(edge.Run({"CONFIG", "SET", "requirepass", "x"}),
            Err("NOPERM User edge has no permissions to run the 'config|set' command"));
  // Nothing refused changed anything.
  EXPECT_EQ(server_->keyspace.Size(), 1u);
  EXPECT_EQ(admin_->Run({"EXISTS", "core:1", "edge:2"}), Int(0));
  // Arity is checked before permissions, as in Redis.
  EXPECT_EQ(edge.Run({"BF.RESERVE", "edge:2"}), testing::WrongArity("bf.reserve"));
  std::string info = admin_->Run({"INFO", "stats"});
  EXPECT_NE(info.find("acl_access_denied_cmd:4\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("acl_access_denied_key:1\r\n"), std::string::npos) << info;
}

TEST_F(AclDispatch, WrongPasswordsUnknownAndDisabledUsersGetTheSameReply) {
  Session s = Connect(server_.get(), 1);
  EXPECT_EQ(s.Run({"AUTH", "edge", "nope"}), Err(errors::kWrongPass));
  EXPECT_EQ(s.Run({"AUTH", "nobody", "pw"}), Err(errors::kWrongPass));
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "off"}), kOk);
  EXPECT_EQ(s.Run({"AUTH", "edge", "pw"}), Err(errors::kWrongPass));
  EXPECT_EQ(s.Run({"ACL", "WHOAMI"}), Bulk("default"));
  EXPECT_EQ(server_->auth_throttle.failures(), 3u);
}

TEST_F(AclDispatch, HelloAuthenticatesAsAUser) {
  Session s = Connect(server_.get(), 1);
  std::string reply = s.Run({"HELLO", "3", "AUTH", "edge", "pw"});
  EXPECT_EQ(reply.rfind("%7\r\n", 0), 0u) << reply;
  EXPECT_EQ(s.Run({"BF.ADD", "edge:1", "x"}), testing::kTrue3);
  EXPECT_EQ(s.Run({"BF.RESERVE", "edge:2", "0.01", "100"}), kEdgeReserveDenied);
}

TEST_F(AclDispatch, SetUserAppliesToConnectionsAlreadyAuthenticated) {
  Session edge = Connect(server_.get(), 1);
  ASSERT_EQ(edge.Run({"AUTH", "edge", "pw"}), kOk);
  EXPECT_EQ(edge.Run({"BF.RESERVE", "edge:r", "0.01", "100"}), kEdgeReserveDenied);
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "+bf.reserve"}), kOk);
  EXPECT_EQ(edge.Run({"BF.RESERVE", "edge:r", "0.01", "100"}), kOk);
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "resetkeys", "~other:*"}), kOk);
  EXPECT_EQ(edge.Run({"BF.ADD", "edge:r", "x"}), Err("NOPERM No permissions to access a key"));
  // "off" stops new logins only, as in Redis.
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "off"}), kOk);
  EXPECT_EQ(edge.Run({"BF.ADD", "other:1", "x"}), Int(1));
}

TEST_F(AclDispatch, MultiChecksWhenQueuedAndAgainAtExec) {
  Session edge = Connect(server_.get(), 1);
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "+multi", "+exec"}), kOk);
  ASSERT_EQ(edge.Run({"AUTH", "edge", "pw"}), kOk);

  // Refused when queued: the transaction aborts, nothing runs.
  ASSERT_EQ(edge.Run({"MULTI"}), kOk);
  EXPECT_EQ(edge.Run({"BF.ADD", "edge:1", "a"}), kQueued);
  EXPECT_EQ(edge.Run({"BF.RESERVE", "edge:2", "0.01", "100"}), kEdgeReserveDenied);
  EXPECT_EQ(edge.Run({"EXEC"}), Err(errors::kExecAbort));
  EXPECT_EQ(server_->keyspace.Size(), 0u);

  // Allowed when queued, revoked before EXEC: that command alone is refused.
  ASSERT_EQ(edge.Run({"MULTI"}), kOk);
  EXPECT_EQ(edge.Run({"BF.ADD", "edge:1", "a"}), kQueued);
  EXPECT_EQ(edge.Run({"BF.EXISTS", "edge:1", "a"}), kQueued);
  EXPECT_EQ(edge.Run({"BF.ADD", "edge:3", "a"}), kQueued);
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "-bf.exists", "resetkeys", "~edge:1"}), kOk);
  std::string prefix(errors::kAclChangedBeforeExec);
  EXPECT_EQ(edge.Run({"EXEC"}), Arr(3) + Int(1) + Err(prefix + std::string(errors::kAclReasonCommand)) +
                                    Err(prefix + std::string(errors::kAclReasonKey)));
  EXPECT_EQ(admin_->Run({"EXISTS", "edge:1", "edge:3"}), Int(1));
}

TEST_F(AclDispatch, DelUserClosesItsConnectionsAndSparesTheDefaultUser) {
  Session edge = Connect(server_.get(), 1);
  ASSERT_EQ(edge.Run({"AUTH", "edge", "pw"}), kOk);
  EXPECT_EQ(admin_->Run({"ACL", "DELUSER", "default", "edge"}),
            Err("ERR The 'default' user cannot be removed"));
  EXPECT_EQ(admin_->Run({"ACL", "DELUSER", "edge", "nobody"}), Int(1));
  // This session has no socket to close; the next command finds its user
  // gone and is refused, and the connection closes after that reply.
  EXPECT_EQ(edge.Run({"BF.EXISTS", "edge:1", "x"}), Err(errors::kNoAuth));
  EXPECT_TRUE(edge.client().close_after_reply);
  EXPECT_FALSE(edge.client().authenticated);
  EXPECT_EQ(admin_->Run({"ACL", "USERS"}), Arr(1) + Bulk("default"));
  EXPECT_EQ(admin_->Run({"ACL", "DELUSER", "edge"}), Int(0));
}

TEST_F(AclDispatch, ADeletedUserNeverFallsBackToTheDefaultUser) {
  // EXEC asks for the user once per queued command: a DELUSER on another
  // thread between two of them must refuse both, not let the second run as
  // "default" (+@all).
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "+multi", "+exec"}), kOk);
  Session edge = Connect(server_.get(), 1);
  ASSERT_EQ(edge.Run({"AUTH", "edge", "pw"}), kOk);
  ASSERT_NE(CurrentAclUser(*server_, edge.client()), nullptr);
  EXPECT_EQ(admin_->Run({"ACL", "DELUSER", "edge"}), Int(1));
  EXPECT_EQ(CurrentAclUser(*server_, edge.client()), nullptr);
  EXPECT_EQ(CurrentAclUser(*server_, edge.client()), nullptr);
  const CommandSpec& flushall = *server_->commands.Find("flushall");
  std::vector<std::string_view> args = {"FLUSHALL"};
  EXPECT_EQ(CheckClientAcl(*server_, edge.client(), flushall, args), AclDenial::kCommand);
  // A new AUTH as a user that exists starts afresh.
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "on", ">pw", "+ping"}), kOk);
  edge.client().authenticated = true;  // as the closing connection would not be, here
  EXPECT_EQ(edge.Run({"AUTH", "edge", "pw"}), kOk);
  EXPECT_EQ(edge.Run({"PING"}), "+PONG\r\n");
}

TEST_F(AclDispatch, DeletingYourOwnUserRepliesThenCloses) {
  ASSERT_EQ(admin_->Run({"ACL", "SETUSER", "root", "on", "nopass", "allkeys", "allcommands"}), kOk);
  Session root = Connect(server_.get(), 1);
  ASSERT_EQ(root.Run({"AUTH", "root", "x"}), kOk);
  EXPECT_EQ(root.Run({"ACL", "DELUSER", "root"}), Int(1));
  EXPECT_TRUE(root.client().close_after_reply);
}

TEST_F(AclDispatch, ListGetUserUsersAndCatDescribeTheUsers) {
  const std::string hash = Sha256Hex("pw");
  EXPECT_EQ(admin_->Run({"ACL", "LIST"}),
            Arr(2) + Bulk("user default on nopass ~* &* +@all") +
                Bulk("user edge on #" + hash + " ~edge:* resetchannels -@all +bf.add +bf.exists"));
  EXPECT_EQ(admin_->Run({"ACL", "USERS"}), Arr(2) + Bulk("default") + Bulk("edge"));
  EXPECT_EQ(admin_->Run({"ACL", "GETUSER", "edge"}),
            Arr(12) + Bulk("flags") + Arr(1) + Bulk("on") + Bulk("passwords") + Arr(1) +
                Bulk(hash) + Bulk("commands") + Bulk("-@all +bf.add +bf.exists") + Bulk("keys") +
                Bulk("~edge:*") + Bulk("channels") + Bulk("") + Bulk("selectors") + Arr(0));
  EXPECT_EQ(admin_->Run({"ACL", "GETUSER", "nobody"}), kNil);
  EXPECT_EQ(admin_->Run({"ACL", "WHOAMI"}), Bulk("default"));
  std::string categories = admin_->Run({"ACL", "CAT"});
  EXPECT_NE(categories.find(Bulk("bloom")), std::string::npos) << categories;
  EXPECT_NE(categories.find(Bulk("cuckoo")), std::string::npos) << categories;
  std::string bloom = admin_->Run({"ACL", "CAT", "bloom"});
  EXPECT_NE(bloom.find(Bulk("bf.add")), std::string::npos) << bloom;
  EXPECT_NE(bloom.find(Bulk("cbf.add")), std::string::npos) << bloom;
  EXPECT_EQ(bloom.find(Bulk("cf.add")), std::string::npos) << bloom;
  EXPECT_EQ(admin_->Run({"ACL", "CAT", "nosuch"}), Err("ERR Unknown category 'nosuch'"));
  EXPECT_EQ(admin_->Run({"ACL", "SETUSER", "a b"}),
            Err("ERR Usernames can't contain spaces or null characters"));
}

TEST_F(AclDispatch, ARefusedSetUserChangesNothing) {
  EXPECT_EQ(admin_->Run({"ACL", "SETUSER", "edge", "+bf.reserve", "nosuch"}),
            Err("ERR Error in ACL SETUSER modifier 'nosuch': Syntax error"));
  EXPECT_EQ(admin_->Run({"ACL", "SETUSER", "fresh", "on", "+nosuch"}),
            Err("ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name "
                "in ACL"));
  EXPECT_EQ(admin_->Run({"ACL", "GETUSER", "fresh"}), kNil);
  Session edge = Connect(server_.get(), 1);
  ASSERT_EQ(edge.Run({"AUTH", "edge", "pw"}), kOk);
  EXPECT_EQ(edge.Run({"BF.RESERVE", "edge:1", "0.01", "100"}), kEdgeReserveDenied);
}

TEST(AclReplay, TheLogIsReplayedWhateverTheUsersAreNow) {
  // The server restarts with a config whose "default" may run nothing: the
  // log's writes were acknowledged and must come back all the same.
  auto server = MakeServer();
  ASSERT_EQ(server->LoadConfiguredUsers({"default on nopass -@all"}), std::nullopt);
  JournalApplier applier(*server, JournalOrigin::kStartupReplay);
  LogRecord record;
  record.time_ms = NowMs();
  record.args = {"BF.ADD", "edge:1", "x"};
  ASSERT_TRUE(applier.Apply(record).ok());
  EXPECT_EQ(applier.failures(), 0u);
  EXPECT_EQ(server->keyspace.Size(), 1u);
  Session s = Connect(server.get());
  EXPECT_EQ(s.Run({"BF.EXISTS", "edge:1", "x"}),
            Err("NOPERM User default has no permissions to run the 'bf.exists' command"));
}

TEST(AclRequirepass, IsTheDefaultUsersPassword) {
  ServerConfig config;
  config.requirepass = "secret";
  auto server = MakeServer(config);
  Session s = Connect(server.get());
  EXPECT_FALSE(s.client().authenticated);
  EXPECT_FALSE(server->acl.DefaultUserNoPass());
  EXPECT_EQ(s.Run({"AUTH", "default", "secret"}), kOk);
  EXPECT_EQ(s.Run({"CONFIG", "SET", "requirepass", "other"}), kOk);
  Session t = Connect(server.get(), 1);
  EXPECT_EQ(t.Run({"AUTH", "secret"}), Err(errors::kWrongPass));
  EXPECT_EQ(t.Run({"AUTH", "other"}), kOk);
  // A password set by ACL SETUSER survives CONFIG SET of other settings.
  EXPECT_EQ(s.Run({"ACL", "SETUSER", "default", "resetpass", ">third"}), kOk);
  EXPECT_EQ(s.Run({"CONFIG", "SET", "maxclients", "100"}), kOk);
  Session u = Connect(server.get(), 1);
  EXPECT_EQ(u.Run({"AUTH", "third"}), kOk);
  // An empty requirepass is nopass: new connections are in at once.
  EXPECT_EQ(s.Run({"CONFIG", "SET", "requirepass", ""}), kOk);
  EXPECT_TRUE(server->acl.DefaultUserNoPass());
  Session v = Connect(server.get(), 1);
  EXPECT_TRUE(v.client().authenticated);
  EXPECT_EQ(v.Run({"AUTH", "x"}), Err(errors::kAuthNotConfigured));
}

TEST(AclConfiguredUsers, LoadAsSetUserWouldAndRefuseBadLines) {
  auto server = MakeServer();
  const std::string hash = Sha256Hex("pw");
  EXPECT_EQ(server->LoadConfiguredUsers({"edge on #" + hash + " ~edge:*  +bf.add",
                                         "default on >adminpw allkeys allcommands"}),
            std::nullopt);
  Session s = Connect(server.get());
  EXPECT_FALSE(s.client().authenticated);  // "default" was reset: no nopass now
  EXPECT_EQ(s.Run({"AUTH", "edge", "pw"}), kOk);
  EXPECT_EQ(s.Run({"BF.ADD", "edge:1", "x"}), Int(1));
  EXPECT_EQ(s.Run({"AUTH", "adminpw"}), kOk);

  auto other = MakeServer();
  EXPECT_EQ(other->LoadConfiguredUsers({"x on +nosuch"}),
            "user 'x': ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category "
            "name in ACL");
  EXPECT_EQ(other->LoadConfiguredUsers({"y on", "y off"}),
            "user 'y': Duplicate user found. A user can only be defined once in config files");
  EXPECT_NE(other->LoadConfiguredUsers({"   "}), std::nullopt);
}

}  // namespace
}  // namespace bloomgate
