#include "server/commands/command_dispatcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/base/clock.h"
#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

const CommandCounters& Counters(ServerContext& server, std::string_view command,
                                std::string_view sub = {}, size_t worker = 0) {
  const CommandSpec* spec = server.commands.Find(command);
  EXPECT_NE(spec, nullptr);
  if (!sub.empty()) spec = CommandTable::FindSubcommand(*spec, sub);
  EXPECT_NE(spec, nullptr);
  return server.stats.worker(worker).commands[spec->id];
}

uint64_t Calls(ServerContext& server, std::string_view command, std::string_view sub = {}) {
  return Counters(server, command, sub).calls.load();
}

TEST(Dispatcher, RunsAKnownCommandInAnyCase) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(s.Run({"ping"}), "+PONG\r\n");
  EXPECT_EQ(s.Run({"PiNg", "hello"}), Bulk("hello"));
}

TEST(Dispatcher, TheConnectionsLastCommandNameResolvesOnlyItsOwnBytes) {
  // The connection remembers the last name it sent (ClientState::
  // last_command_name); the next name is the table's unless byte-equal.
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(s.Run({"PING"}), "+PONG\r\n");
  EXPECT_EQ(s.Run({"ping"}), "+PONG\r\n");
  EXPECT_EQ(s.Run({"PIN"}), Err("ERR unknown command 'PIN', with args beginning with: "));
  EXPECT_EQ(s.Run({"PINGG"}), Err("ERR unknown command 'PINGG', with args beginning with: "));
  EXPECT_EQ(s.Run({"ping"}), "+PONG\r\n");
  // Longer than the remembered name in the same case: not that name.
  EXPECT_EQ(s.Run({"pingg"}), Err("ERR unknown command 'pingg', with args beginning with: "));
  EXPECT_EQ(s.Run({"ECHO", "x"}), Bulk("x"));
  EXPECT_EQ(s.Run({"ping"}), "+PONG\r\n");
  EXPECT_EQ(Calls(*server, "ping"), 5u);
  EXPECT_EQ(Calls(*server, "echo"), 1u);
}

TEST(Dispatcher, UnknownCommandQuotesItsArgumentsWithATrailingSpace) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"FOO", "a", "b c"}),
            Err("ERR unknown command 'FOO', with args beginning with: 'a' 'b c' "));
}

TEST(Dispatcher, UnknownCommandWithoutArgumentsEndsWithTheColonAndASpace) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"nosuch"}), Err("ERR unknown command 'nosuch', with args beginning with: "));
}

TEST(Dispatcher, UnknownCommandCapsTheNameAt128Bytes) {
  auto server = MakeServer();
  Session s(server.get());
  const std::string name(300, 'x');
  EXPECT_EQ(s.Run({name}), Err("ERR unknown command '" + std::string(128, 'x') +
                               "', with args beginning with: "));
}

TEST(Dispatcher, UnknownCommandCapsTheQuotedArgumentsAt128Bytes) {
  // Redis: each argument is printed with "%.*s" and 128 - (bytes so far) as
  // the precision, and no more arguments once the list reaches 128 bytes.
  auto server = MakeServer();
  Session s(server.get());
  const std::string big(200, 'a');
  EXPECT_EQ(s.Run({"foo", big, "next"}),
            Err("ERR unknown command 'foo', with args beginning with: '" +
                std::string(128, 'a') + "' "));

  const std::string arg(60, 'b');  // "'bbb...b' " is 63 bytes
  EXPECT_EQ(s.Run({"foo", arg, arg, arg, arg}),
            Err("ERR unknown command 'foo', with args beginning with: '" + arg + "' '" + arg +
                "' '" + std::string(2, 'b') + "' "));
}

TEST(Dispatcher, UnknownCommandTextNeverCarriesCrOrLf) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"x\r\ny", "a\nb"}),
            Err("ERR unknown command 'x  y', with args beginning with: 'a b' "));
}

TEST(Dispatcher, WrongArityNamesTheCommandInLowerCase) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"BF.ADD", "k"}), WrongArity("bf.add"));
  EXPECT_EQ(s.Run({"bf.add", "k", "a", "b"}), WrongArity("bf.add"));
  EXPECT_EQ(s.Run({"BF.INFO", "k", "CAPACITY", "SIZE"}), WrongArity("bf.info"));
  EXPECT_EQ(s.Run({"PING", "a", "b"}), WrongArity("ping"));
  EXPECT_EQ(server->keyspace.Size(), 0u);  // nothing ran
}

TEST(Dispatcher, ContainerWithoutSubcommandIsAnArityError) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CLIENT"}), WrongArity("client"));
  EXPECT_EQ(s.Run({"memory"}), WrongArity("memory"));
}

TEST(Dispatcher, SubcommandArityNamesContainerAndSubcommand) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CLIENT", "SETNAME"}), WrongArity("client|setname"));
  EXPECT_EQ(s.Run({"client", "setname", "a", "b"}), WrongArity("client|setname"));
  EXPECT_EQ(s.Run({"MEMORY", "USAGE"}), WrongArity("memory|usage"));
}

TEST(Dispatcher, UnknownSubcommandSuggestsHelp) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"client", "nosuch"}), Err("ERR unknown subcommand 'nosuch'. Try CLIENT HELP."));
  EXPECT_EQ(s.Run({"CONFIG", "Frob", "x"}), Err("ERR unknown subcommand 'Frob'. Try CONFIG HELP."));
}

TEST(Dispatcher, UnknownSubcommandCapsItsNameAt128Bytes) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"client", std::string(200, 'z')}),
            Err("ERR unknown subcommand '" + std::string(128, 'z') + "'. Try CLIENT HELP."));
}

TEST(Dispatcher, SubcommandsMatchInAnyCase) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CLIENT", "SetName", "conn1"}), kOk);
  EXPECT_EQ(s.Run({"Command", "COUNT"}), Int(server->commands.commands().size()));
}

TEST(Dispatcher, ContainerWithItsOwnHandlerRunsAlone) {
  auto server = MakeServer();
  Session s(server.get());
  std::string reply = s.Run({"COMMAND"});
  EXPECT_EQ(reply.rfind("*" + std::to_string(server->commands.commands().size()) + "\r\n", 0),
            0u)
      << reply.substr(0, 40);
}

TEST(Dispatcher, UnauthenticatedClientGetsNoauth) {
  ServerConfig config;
  config.requirepass = "secret";
  auto server = MakeServer(config);
  Session s(server.get());
  s.client().authenticated = false;
  EXPECT_EQ(s.Run({"PING"}), Err("NOAUTH Authentication required."));
  EXPECT_EQ(s.Run({"BF.ADD", "k", "a"}), Err("NOAUTH Authentication required."));
  EXPECT_EQ(s.Run({"CLIENT", "ID"}), Err("NOAUTH Authentication required."));
  EXPECT_EQ(s.Run({"MULTI"}), Err("NOAUTH Authentication required."));
  EXPECT_EQ(server->keyspace.Size(), 0u);
  EXPECT_FALSE(s.client().in_multi);
}

TEST(Dispatcher, ExistenceAndArityAreCheckedBeforeAuthentication) {
  // Redis's order in processCommand: lookup, arity, then authentication.
  auto server = MakeServer();
  Session s(server.get());
  s.client().authenticated = false;
  EXPECT_EQ(s.Run({"nosuch"}), Err("ERR unknown command 'nosuch', with args beginning with: "));
  EXPECT_EQ(s.Run({"BF.ADD", "k"}), WrongArity("bf.add"));
}

TEST(Dispatcher, AuthHelloAndQuitAreAllowedBeforeAuthentication) {
  ServerConfig config;
  config.requirepass = "secret";
  auto server = MakeServer(config);
  Session s(server.get());
  s.client().authenticated = false;

  EXPECT_EQ(s.Run({"AUTH", "wrong"}), Err(errors::kWrongPass));
  EXPECT_FALSE(s.client().authenticated);
  EXPECT_EQ(s.Run({"HELLO"}).rfind("-NOAUTH HELLO must be called with the client already "
                                   "authenticated",
                                   0),
            0u);
  EXPECT_EQ(s.Run({"QUIT"}), kOk);
  EXPECT_TRUE(s.client().close_after_reply);

  EXPECT_EQ(s.Run({"AUTH", "secret"}), kOk);
  EXPECT_TRUE(s.client().authenticated);
  EXPECT_EQ(s.Run({"PING"}), "+PONG\r\n");
}

TEST(Dispatcher, HelloWithAuthAuthenticatesAndSwitchesToResp3) {
  ServerConfig config;
  config.requirepass = "secret";
  auto server = MakeServer(config);
  Session s(server.get());
  s.client().authenticated = false;
  std::string reply = s.Run({"HELLO", "3", "AUTH", "default", "secret"});
  EXPECT_EQ(reply.rfind("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("$5\r\nproto\r\n:3\r\n"), std::string::npos) << reply;
  EXPECT_TRUE(s.client().authenticated);
  EXPECT_TRUE(s.client().resp3);
  EXPECT_EQ(s.Run({"BF.ADD", "k", "a"}), kTrue3);
}

TEST(Dispatcher, CommandstatsCountCallsOfTheRowThatRan) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(Calls(*server, "bf.add"), 0u);
  s.Run({"BF.ADD", "k", "a"});
  s.Run({"bf.add", "k", "b"});
  s.Run({"CLIENT", "SETNAME", "x"});
  EXPECT_EQ(Calls(*server, "bf.add"), 2u);
  EXPECT_EQ(Counters(*server, "bf.add").failed_calls.load(), 0u);
  EXPECT_EQ(Counters(*server, "bf.add").rejected_calls.load(), 0u);
  EXPECT_EQ(Calls(*server, "client", "setname"), 1u);
  EXPECT_EQ(Calls(*server, "client"), 0u);  // the container itself never runs
  EXPECT_EQ(server->stats.worker(0).commands_processed.load(), 3u);
}

TEST(Dispatcher, CommandstatsCountAnErrorReplyAsAFailedCall) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"BF.INFO", "missing"});
  EXPECT_EQ(Calls(*server, "bf.info"), 1u);
  EXPECT_EQ(Counters(*server, "bf.info").failed_calls.load(), 1u);
  EXPECT_EQ(Counters(*server, "bf.info").rejected_calls.load(), 0u);
}

// A command's outcome is a value, not its reply's first byte: a refused
// command, a handler's error, a success and a queued command each say so.
TEST(Dispatcher, EveryCommandReturnsItsOutcome) {
  auto server = MakeServer();
  ClientState client;
  client.authenticated = true;
  auto run = [&](std::vector<std::string_view> args) {
    std::string out;
    ReplyBuilder reply(&out);
    return DispatchCommand(*server, client, args, reply);
  };
  EXPECT_EQ(run({"NOSUCH"}), CommandOutcome::kFailed);
  EXPECT_EQ(run({"BF.ADD", "k"}), CommandOutcome::kFailed) << "wrong arity";
  EXPECT_EQ(run({"BF.ADD", "k", "x"}), CommandOutcome::kDone);
  EXPECT_EQ(run({"BF.INFO", "k", "NOSUCHFIELD"}), CommandOutcome::kFailed);
  EXPECT_EQ(run({"BF.RESERVE", "k", "0.01", "10"}), CommandOutcome::kFailed) << "item exists";
  EXPECT_EQ(run({"MULTI"}), CommandOutcome::kDone);
  EXPECT_EQ(run({"BF.ADD", "k", "y"}), CommandOutcome::kQueued);
  EXPECT_EQ(run({"EXEC"}), CommandOutcome::kDone);
  EXPECT_EQ(run({"BF.MADD", "k", "z"}), CommandOutcome::kDone);
}

TEST(Dispatcher, CommandstatsCountARefusedCommandAsRejectedNotCalled) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"BF.ADD", "k"});
  s.Run({"CLIENT", "SETNAME"});
  s.Run({"CLIENT", "nosuch"});
  EXPECT_EQ(Calls(*server, "bf.add"), 0u);
  EXPECT_EQ(Counters(*server, "bf.add").rejected_calls.load(), 1u);
  EXPECT_EQ(Counters(*server, "client", "setname").rejected_calls.load(), 1u);
  EXPECT_EQ(Counters(*server, "client").rejected_calls.load(), 1u);

  s.client().authenticated = false;
  s.Run({"BF.CARD", "k"});
  EXPECT_EQ(Calls(*server, "bf.card"), 0u);
  EXPECT_EQ(Counters(*server, "bf.card").rejected_calls.load(), 1u);
}

TEST(Dispatcher, RefusedCommandsAreNotCountedAsProcessed) {
  // Redis counts total_commands_processed in call(), which a command refused
  // by processCommand (unknown, arity, NOAUTH) never reaches.
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"PING"});
  s.Run({"nosuch"});
  s.Run({"BF.ADD", "k"});
  s.Run({"CLIENT", "nosuch"});
  s.client().authenticated = false;
  s.Run({"BF.CARD", "k"});
  EXPECT_EQ(server->stats.worker(0).commands_processed.load(), 1u);
}

TEST(Dispatcher, CommandstatsGoToTheClientsWorkerSlot) {
  auto server = MakeServer(ServerConfig{}, /*workers=*/2);
  Session s0(server.get(), /*worker=*/0);
  Session s1(server.get(), /*worker=*/1);
  s1.Run({"BF.ADD", "k", "a"});
  const CommandSpec* add = server->commands.Find("bf.add");
  EXPECT_EQ(server->stats.worker(0).commands[add->id].calls.load(), 0u);
  EXPECT_EQ(server->stats.worker(1).commands[add->id].calls.load(), 1u);
}

TEST(Dispatcher, InfoCommandstatsReportsTheCounters) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"BF.ADD", "k", "a"});
  s.Run({"BF.ADD", "k", "b"});
  s.Run({"BF.ADD", "k"});
  s.Run({"BF.INFO", "nosuch"});
  std::string info = s.Run({"INFO", "commandstats"});
  EXPECT_NE(info.find("cmdstat_bf.add:calls=2,"), std::string::npos) << info;
  EXPECT_NE(info.find(",rejected_calls=1,failed_calls=0\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("cmdstat_bf.info:calls=1,"), std::string::npos) << info;
}

TEST(Dispatcher, ErrorReplyCountsMatchWhatTheBuilderWrote) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"nosuch"});
  s.Run({"BF.ADD", "k"});
  s.Run({"BF.INFO", "k"});
  s.Run({"PING"});
  EXPECT_EQ(s.errors_written(), 3u);
}

TEST(Dispatcher, CommandStripesFollowTheKeyPositions) {
  auto server = MakeServer();
  std::vector<std::string_view> args = {"rename", "a", "b"};
  std::vector<size_t> stripes;
  bool all = true;
  CommandStripes(*server->commands.Find("rename"), args, &stripes, &all);
  EXPECT_FALSE(all);
  EXPECT_EQ(stripes, (std::vector<size_t>{KeyLocks::StripeOf("a"), KeyLocks::StripeOf("b")}));

  std::vector<std::string_view> keys = {"keys", "*"};
  CommandStripes(*server->commands.Find("keys"), keys, &stripes, &all);
  EXPECT_TRUE(all);
  EXPECT_TRUE(stripes.empty());
}


// The window clock is read once per command, by the dispatcher, and every
// part of the command sees that one reading: the store, the handler, a
// windowed filter's generations.
int window_clock_reads = 0;
int64_t CountingWindowClock() {
  ++window_clock_reads;
  return 1'000'000;
}

TEST(Dispatcher, ACommandReadsTheWindowClockOnce) {
  auto server = MakeServer();
  Session s(server.get());
  SetWindowClockForTesting(CountingWindowClock);
  EXPECT_EQ(s.Run({"BF.RESERVE", "w", "0.01", "1000", "WINDOW", "60"}), "+OK\r\n");
  EXPECT_EQ(s.Run({"CBF.RESERVE", "c", "0.01", "1000", "WINDOW", "60"}), "+OK\r\n");
  const std::vector<std::vector<std::string>> commands = {
      {"BF.ADD", "w", "a"},     {"BF.EXISTS", "w", "a"},  {"BF.MEXISTS", "w", "a", "b"},
      {"BF.CARD", "w"},         {"BF.ADD", "plain", "a"}, {"BF.EXISTS", "plain", "a"},
      {"CBF.ADD", "c", "a"},    {"CBF.EXISTS", "c", "a"}, {"CBF.COUNT", "c", "a"},
      {"CBF.MEXISTS", "c", "a"}, {"CBF.CARD", "c"},       {"BF.INFO", "w"}};
  for (const auto& command : commands) {
    window_clock_reads = 0;
    s.Run(command);
    EXPECT_EQ(window_clock_reads, 1) << command[0] << " " << command[1];
  }
  // The reading is what the filter ages by: an item added at it is found there.
  EXPECT_EQ(s.Run({"BF.EXISTS", "w", "a"}), ":1\r\n");
  SetWindowClockForTesting(nullptr);
}

}  // namespace
}  // namespace bloomgate
