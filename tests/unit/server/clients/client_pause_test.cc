// CLIENT PAUSE / UNPAUSE: the pause state as a value, the dispatcher's
// decision which commands wait (CommandOutcome::kPaused), and Redis's hold
// on expiry while paused. The waiting itself (parked connections, resumed
// from a timer or UNPAUSE) is the connection's, tested end to end in
// tests/e2e/test_pause_monitor.py.
#include "server/clients/client_pause.h"

#include <gtest/gtest.h>

#include "server/base/clock.h"
#include "server/commands/errors.h"
#include "server/keyspace/keyspace.h"
#include "../session.h"

namespace bloomgate {
namespace {

using testing::Err;
using testing::Int;
using testing::MakeServer;
using testing::Session;
using testing::Simple;

constexpr PausePurpose kClient = PausePurpose::kClientCommand;
constexpr PausePurpose kFailover = PausePurpose::kFailover;

TEST(ClientPause, AModeHoldsUntilItsEnd) {
  ClientPause pause;
  EXPECT_FALSE(pause.engaged());
  pause.Pause(kClient, PauseMode::kWrite, /*end_ms=*/200, /*now_ms=*/100);
  EXPECT_TRUE(pause.engaged());
  EXPECT_EQ(pause.ModeAt(199), PauseMode::kWrite);
  EXPECT_EQ(pause.ModeAt(200), PauseMode::kNone);
  pause.ClearIfEnded(200);
  EXPECT_FALSE(pause.engaged());
}

TEST(ClientPause, ALaterPauseKeepsTheLaterEndAndTheStricterMode) {
  ClientPause pause;
  pause.Pause(kClient, PauseMode::kAll, 300, 100);
  pause.Pause(kClient, PauseMode::kWrite, 150, 110);  // shorter and milder: changes nothing
  EXPECT_EQ(pause.ModeAt(290), PauseMode::kAll);
  pause.Pause(kClient, PauseMode::kWrite, 500, 120);  // longer: extends, stays ALL
  EXPECT_EQ(pause.end_ms(), 500);
  EXPECT_EQ(pause.ModeAt(490), PauseMode::kAll);
}

TEST(ClientPause, APauseAfterTheLastOneEndedStartsAfresh) {
  ClientPause pause;
  pause.Pause(kClient, PauseMode::kAll, 200, 100);
  pause.Pause(kClient, PauseMode::kWrite, 400, 250);
  EXPECT_EQ(pause.ModeAt(300), PauseMode::kWrite);
}

TEST(ClientPause, UnpauseEndsItAndWakesEveryWaiterOnce) {
  ClientPause pause;
  pause.Pause(kClient, PauseMode::kAll, 1000, 0);
  int woken = 0;
  pause.AddWaiter([&] { ++woken; });
  uint64_t gone = pause.AddWaiter([&] { woken += 100; });
  pause.AddWaiter([&] { ++woken; });
  pause.RemoveWaiter(gone);  // closed while parked
  EXPECT_EQ(pause.waiting(), 2u);
  pause.Unpause(kClient);
  EXPECT_EQ(woken, 2);
  EXPECT_EQ(pause.waiting(), 0u);
  EXPECT_EQ(pause.ModeAt(10), PauseMode::kNone);
  pause.Unpause(kClient);
  EXPECT_EQ(woken, 2);
}

// ------------------------------------------------------- the dispatcher ---

TEST(ClientPause, AFailoverPauseSurvivesClientUnpause) {
  ClientPause pause;
  pause.Pause(kFailover, PauseMode::kWrite, 1000, 0);
  pause.Pause(kClient, PauseMode::kAll, 500, 0);
  int woken = 0;
  pause.AddWaiter([&] { ++woken; });
  pause.Unpause(kClient);
  EXPECT_EQ(woken, 1) << "a parked read may run now; a parked write parks again";
  EXPECT_TRUE(pause.engaged());
  EXPECT_EQ(pause.ModeAt(10), PauseMode::kWrite);
  EXPECT_EQ(pause.ModeAt(kClient, 10), PauseMode::kNone);
  EXPECT_EQ(pause.end_ms(), 1000);
}

TEST(ClientPause, TheFailoversEndLeavesAClientPauseInPlace) {
  ClientPause pause;
  pause.Pause(kClient, PauseMode::kWrite, 2000, 0);
  pause.Pause(kFailover, PauseMode::kWrite, 1000, 0);
  pause.Unpause(kFailover);
  EXPECT_EQ(pause.ModeAt(1500), PauseMode::kWrite);
  EXPECT_EQ(pause.ModeAt(kFailover, 10), PauseMode::kNone);
  EXPECT_EQ(pause.end_ms(), 2000);
  pause.Unpause(kClient);
  EXPECT_FALSE(pause.engaged());
  EXPECT_EQ(pause.end_ms(), 0);
}

TEST(ClientPause, TheCombinedModeIsTheStrictestAndEachEndsAtItsOwnTime) {
  ClientPause pause;
  pause.Pause(kClient, PauseMode::kAll, 300, 0);
  pause.Pause(kFailover, PauseMode::kWrite, 500, 0);
  // One purpose's pause never merges into the other's.
  EXPECT_EQ(pause.ModeAt(kFailover, 10), PauseMode::kWrite);
  EXPECT_EQ(pause.ModeAt(299), PauseMode::kAll);
  EXPECT_EQ(pause.NextEndAfter(10), 300) << "a parked read wakes when ALL ends";
  EXPECT_EQ(pause.end_ms(), 500) << "expiry is held until the last pause ends";
  EXPECT_EQ(pause.ModeAt(300), PauseMode::kWrite);
  EXPECT_EQ(pause.NextEndAfter(300), 500);
  pause.ClearIfEnded(300);
  EXPECT_TRUE(pause.engaged());
  EXPECT_EQ(pause.ModeAt(499), PauseMode::kWrite);
  EXPECT_EQ(pause.ModeAt(500), PauseMode::kNone);
  pause.ClearIfEnded(500);
  EXPECT_FALSE(pause.engaged());
  EXPECT_EQ(pause.NextEndAfter(500), 0);
}

TEST(ClientPauseDispatch, ClientUnpauseLeavesTheFailoversPause) {
  auto server = MakeServer();
  Session s(server.get());
  server->PauseClients(PausePurpose::kFailover, PauseMode::kWrite, NowMs() + 100000, NowMs());
  ASSERT_EQ(s.Run({"CLIENT", "PAUSE", "100000", "ALL"}), Simple("OK"));
  ASSERT_EQ(s.Run({"CLIENT", "UNPAUSE"}), Simple("OK"));
  EXPECT_EQ(server->pause.ModeAt(NowMs()), PauseMode::kWrite);
  EXPECT_EQ(s.Run({"BF.ADD", "f", "x"}), "");
  EXPECT_EQ(s.last_outcome(), CommandOutcome::kPaused);
  EXPECT_EQ(s.Run({"PING"}), Simple("PONG")) << "the client's ALL is gone";
}

TEST(ClientPauseExpiry, TheFailoversEndKeepsTheClientPausesHold) {
  auto server = MakeServer();
  Session s(server.get());
  server->keyspace.Put("k", testing::MakeBloomEntry(), /*expire_at_ms=*/NowMs() - 1);
  server->PauseClients(PausePurpose::kFailover, PauseMode::kWrite, NowMs() + 100000, NowMs());
  ASSERT_EQ(s.Run({"CLIENT", "PAUSE", "100000", "WRITE"}), Simple("OK"));
  server->UnpauseClients(PausePurpose::kFailover);
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(server->keyspace.Size(), 1u) << "expiry stays held by the client's pause";
  ASSERT_EQ(s.Run({"CLIENT", "UNPAUSE"}), Simple("OK"));
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(server->keyspace.Size(), 0u);
}

TEST(ClientPauseDispatch, WriteModeHoldsWritesOnlyAndNothingRuns) {
  auto server = MakeServer();
  Session admin(server.get()), other(server.get());
  ASSERT_EQ(other.Run({"BF.ADD", "k", "a"}), Int(1));
  ASSERT_EQ(admin.Run({"CLIENT", "PAUSE", "100000", "WRITE"}), Simple("OK"));
  EXPECT_EQ(other.Run({"BF.ADD", "k", "b"}), "");
  EXPECT_EQ(other.last_outcome(), CommandOutcome::kPaused);
  EXPECT_EQ(other.Run({"BF.EXISTS", "k", "b"}), Int(0)) << "the held add did not run";
  EXPECT_EQ(other.Run({"PING"}), Simple("PONG"));
  EXPECT_EQ(other.last_outcome(), CommandOutcome::kDone);
  // A wrong command is answered at once, as in Redis.
  EXPECT_EQ(other.Run({"BF.ADD", "k"}), Err(errors::WrongArity("bf.add")));
  ASSERT_EQ(admin.Run({"CLIENT", "UNPAUSE"}), Simple("OK"));
  EXPECT_EQ(other.Run({"BF.ADD", "k", "b"}), Int(1));
}

TEST(ClientPauseDispatch, WriteModeHoldsExecOnlyWhenTheTransactionQueuedAWrite) {
  auto server = MakeServer();
  Session admin(server.get()), reader(server.get()), writer(server.get());
  ASSERT_EQ(writer.Run({"MULTI"}), Simple("OK"));
  ASSERT_EQ(writer.Run({"BF.ADD", "k", "a"}), Simple("QUEUED"));
  ASSERT_EQ(reader.Run({"MULTI"}), Simple("OK"));
  ASSERT_EQ(reader.Run({"BF.EXISTS", "k", "a"}), Simple("QUEUED"));
  ASSERT_EQ(admin.Run({"CLIENT", "PAUSE", "100000", "WRITE"}), Simple("OK"));
  EXPECT_EQ(reader.Run({"EXEC"}), testing::Arr(1) + Int(0));
  EXPECT_EQ(writer.Run({"EXEC"}), "");
  EXPECT_EQ(writer.last_outcome(), CommandOutcome::kPaused);
  EXPECT_TRUE(writer.client().in_multi) << "the transaction waits intact";
  admin.Run({"CLIENT", "UNPAUSE"});
  EXPECT_EQ(writer.Run({"EXEC"}), testing::Arr(1) + Int(1));
}

TEST(ClientPauseDispatch, AllModeHoldsEverythingButUnpause) {
  auto server = MakeServer();
  Session admin(server.get()), other(server.get());
  ASSERT_EQ(admin.Run({"CLIENT", "PAUSE", "100000"}), Simple("OK"));  // ALL by default
  other.Run({"PING"});
  EXPECT_EQ(other.last_outcome(), CommandOutcome::kPaused);
  other.Run({"CLIENT", "PAUSE", "10", "WRITE"});
  EXPECT_EQ(other.last_outcome(), CommandOutcome::kPaused);
  EXPECT_EQ(other.Run({"CLIENT", "UNPAUSE"}), Simple("OK"));
  EXPECT_EQ(other.Run({"PING"}), Simple("PONG"));
}

TEST(ClientPauseDispatch, AnEndedPauseHoldsNothing) {
  auto server = MakeServer();
  Session admin(server.get()), other(server.get());
  ASSERT_EQ(admin.Run({"CLIENT", "PAUSE", "0", "ALL"}), Simple("OK"));
  EXPECT_EQ(other.Run({"PING"}), Simple("PONG"));
  EXPECT_FALSE(server->pause.engaged()) << "the first command after the end disengages it";
}

TEST(ClientPauseDispatch, BadArgumentsGetRedisTextsAndPauseNothing) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CLIENT", "PAUSE", "10", "READ"}), Err(errors::kPauseMode));
  // The mode is checked before the timeout, as Redis does.
  EXPECT_EQ(s.Run({"CLIENT", "PAUSE", "x", "READ"}), Err(errors::kPauseMode));
  EXPECT_EQ(s.Run({"CLIENT", "PAUSE", "x"}), Err(errors::kTimeoutNotInteger));
  EXPECT_EQ(s.Run({"CLIENT", "PAUSE", "1.5"}), Err(errors::kTimeoutNotInteger));
  EXPECT_EQ(s.Run({"CLIENT", "PAUSE", "-1"}), Err(errors::kTimeoutNegative));
  EXPECT_EQ(s.Run({"CLIENT", "PAUSE", "9223372036854775807"}), Err(errors::kTimeoutOutOfRange));
  EXPECT_EQ(s.Run({"CLIENT", "PAUSE", "10", "WRITE", "x"}),
            Err(errors::WrongArity("client|pause")));
  EXPECT_FALSE(server->pause.engaged());
  EXPECT_EQ(s.Run({"BF.ADD", "k", "a"}), Int(1));
}

// --------------------------------------------------------------- expiry ---

constexpr int64_t kPauseNow = 1'000'000;

TEST(ClientPauseExpiry, AnExpiredKeyReadsAsMissingButStaysUntilThePauseEnds) {
  Keyspace keyspace;
  keyspace.Put("k", testing::MakeBloomEntry(), /*expire_at_ms=*/kPauseNow + 10);
  keyspace.HoldExpiry(kPauseNow + 1000);
  EXPECT_EQ(keyspace.Find("k", kPauseNow + 20), nullptr);
  EXPECT_EQ(keyspace.SweepExpired(kPauseNow + 20, SIZE_MAX), 0u);
  EXPECT_EQ(keyspace.Size(), 1u);
  EXPECT_EQ(keyspace.expired_keys(), 0u);
  // Held until the end passed, then removed on the next look.
  EXPECT_EQ(keyspace.Find("k", kPauseNow + 1000), nullptr);
  EXPECT_EQ(keyspace.Size(), 0u);
  EXPECT_EQ(keyspace.expired_keys(), 1u);
}

TEST(ClientPauseExpiry, UnpauseReleasesTheHold) {
  auto server = MakeServer();
  Session s(server.get());
  server->keyspace.Put("k", testing::MakeBloomEntry(), /*expire_at_ms=*/NowMs() - 1);
  ASSERT_EQ(s.Run({"CLIENT", "PAUSE", "100000", "WRITE"}), Simple("OK"));
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(server->keyspace.Size(), 1u);
  ASSERT_EQ(s.Run({"CLIENT", "UNPAUSE"}), Simple("OK"));
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(server->keyspace.Size(), 0u);
  EXPECT_EQ(server->keyspace.expired_keys(), 1u);
}

}  // namespace
}  // namespace bloomgate
