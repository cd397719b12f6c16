// CLUSTER FAILOVER's handshake, step by step over a made-up clock: the
// replica starts its election only once it applied the paused master's
// offset (or at once with FORCE), everything is given up at the deadline,
// and a master's pause ends with the failover or the deadline.
#include "server/cluster_bus/manual_failover.h"

#include <gtest/gtest.h>

namespace bloomgate {
namespace manual_failover_test {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
const std::string kReplica(40, 'b');

TEST(ManualFailover, TheReplicaWaitsForThePausedMastersOffset) {
  ManualFailover mf;
  EXPECT_FALSE(mf.StartOnReplica(/*force=*/false, kNow));
  EXPECT_TRUE(mf.in_progress());
  EXPECT_EQ(mf.end_ms(), kNow + 5000);
  // No offset from the master yet: nothing to do, whatever was applied.
  ManualFailover::Step step = mf.Tick(kNow + 100, /*i_am_master=*/false, 1000);
  EXPECT_FALSE(step.start_election);
  mf.OnMasterPaused(1500);
  mf.OnMasterPaused(1700);  // the first offset of this failover is the one
  EXPECT_FALSE(mf.Tick(kNow + 200, false, 1000).start_election);
  EXPECT_FALSE(mf.can_start());
  step = mf.Tick(kNow + 300, false, 1500);
  EXPECT_TRUE(step.start_election);
  EXPECT_TRUE(mf.can_start());
  // Asked once; the election runs on its own from there.
  EXPECT_FALSE(mf.Tick(kNow + 400, false, 1500).start_election);
  EXPECT_TRUE(mf.in_progress());
  // Promoted: the failover is over.
  step = mf.Tick(kNow + 500, /*i_am_master=*/true, 1500);
  EXPECT_FALSE(step.unpause_writes);
  EXPECT_FALSE(mf.in_progress());
}

TEST(ManualFailover, ForceStartsTheElectionAtOnce) {
  ManualFailover mf;
  mf.StartOnReplica(/*force=*/true, kNow);
  EXPECT_TRUE(mf.Tick(kNow + 100, false, 0).start_election);
}

TEST(ManualFailover, TheDeadlineGivesItUp) {
  ManualFailover mf;
  mf.StartOnReplica(false, kNow);
  EXPECT_FALSE(mf.Tick(kNow + 5000, false, 0).timed_out);
  const ManualFailover::Step step = mf.Tick(kNow + 5001, false, 0);
  EXPECT_TRUE(step.timed_out);
  EXPECT_FALSE(step.unpause_writes);  // a replica paused nothing
  EXPECT_FALSE(mf.in_progress());
  // An offset arriving after the reset is not taken for the next one.
  mf.OnMasterPaused(10);
  mf.StartOnReplica(false, kNow + 6000);
  EXPECT_FALSE(mf.Tick(kNow + 6100, false, 10).start_election);
}

TEST(ManualFailover, TheMasterPausesSaysSoOnceSettledAndUnpausesAtTheEnd) {
  ManualFailover mf;
  EXPECT_EQ(mf.StartOnMaster(kReplica, kNow), kNow + 10000);
  EXPECT_EQ(mf.replica_id(), kReplica);
  // PAUSED only a cron tick after the pause began.
  EXPECT_FALSE(mf.SaysPaused(kNow));
  EXPECT_FALSE(mf.SaysPaused(kNow + 99));
  EXPECT_TRUE(mf.SaysPaused(kNow + 100));
  // A master never starts an election, whatever its offset.
  EXPECT_FALSE(mf.Tick(kNow + 200, /*i_am_master=*/true, 0).start_election);
  // Its replica took its slots: it is a replica now, and unpauses.
  const ManualFailover::Step step = mf.Tick(kNow + 300, /*i_am_master=*/false, 0);
  EXPECT_TRUE(step.unpause_writes);
  EXPECT_FALSE(mf.in_progress());
  EXPECT_FALSE(mf.SaysPaused(kNow + 300));
}

TEST(ManualFailover, APausedMasterUnpausesAtTheDeadlineOrOnReset) {
  ManualFailover mf;
  mf.StartOnMaster(kReplica, kNow);
  ManualFailover::Step step = mf.Tick(kNow + 5001, true, 0);
  EXPECT_TRUE(step.timed_out);
  EXPECT_TRUE(step.unpause_writes);
  mf.StartOnMaster(kReplica, kNow);
  EXPECT_TRUE(mf.Reset());
  EXPECT_FALSE(mf.Reset());
  // A second MFSTART restarts the clock; the paused master ignores
  // PAUSED flags (only a replica reads them).
  mf.StartOnMaster(kReplica, kNow);
  mf.OnMasterPaused(5);
  EXPECT_EQ(mf.StartOnMaster(kReplica, kNow + 1000), kNow + 11000);
  EXPECT_EQ(mf.end_ms(), kNow + 6000);
  // A replica's CLUSTER FAILOVER on a node that was a paused master (it
  // has just become a replica) lifts that pause.
  EXPECT_TRUE(mf.StartOnReplica(false, kNow + 2000));
}

}  // namespace
}  // namespace manual_failover_test
}  // namespace bloomgate
