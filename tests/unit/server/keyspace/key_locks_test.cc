// The key locks: one global reader/writer lock in front of the stripes, so a
// whole-keyspace locker (the snapshot cut, FLUSHALL) takes one lock, never
// waits while holding part of the lock set, and is not starved by a read
// flood; and filters removed by a command are freed after its locks.
#include "server/keyspace/key_locks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "server/keyspace/keyspace.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

// Polls `done` until it holds or `timeout` passes; true if it held.
template <typename Predicate>
bool PollUntil(Predicate done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(KeyLocks, LockingTheWholeKeyspaceExclusivelyIsOneLock) {
  KeyLocks locks;
  {
    KeyLocks::Guard all = locks.LockAll(/*exclusive=*/true);
    EXPECT_EQ(KeyLocks::HeldByThisThread(), 1u);
  }
  EXPECT_EQ(KeyLocks::HeldByThisThread(), 0u);
  {
    // KEYS / SCAN: the global lock shared and the writers' lock exclusively.
    KeyLocks::Guard all = locks.LockAll(/*exclusive=*/false);
    EXPECT_EQ(KeyLocks::HeldByThisThread(), 2u);
  }
  EXPECT_EQ(KeyLocks::HeldByThisThread(), 0u);
}

TEST(KeyLocks, AWideLockSetBecomesTheWholeKeyspaceLock) {
  KeyLocks locks;
  std::vector<size_t> wide;
  for (size_t i = 0; i <= KeyLocks::kMaxStripesPerLocker; ++i) wide.push_back(i * 7);
  KeyLocks::Guard guard = locks.Lock(wide, /*exclusive=*/true);
  EXPECT_EQ(KeyLocks::HeldByThisThread(), 1u);
}

TEST(KeyLocks, ACommandHoldsTheGlobalLockSharedInFrontOfItsStripes) {
  KeyLocks locks;
  KeyLocks::Guard read = locks.Lock({3, 3, 900}, /*exclusive=*/false);
  EXPECT_EQ(KeyLocks::HeldByThisThread(), 3u) << "global + 2 distinct stripes";
  KeyLocks::Guard none = locks.Lock({}, /*exclusive=*/true);
  EXPECT_EQ(KeyLocks::HeldByThisThread(), 3u) << "no keys, no locks";
}

// Issue 15 bug 4: a cut waiting behind a command in flight must go before
// commands that arrive after it started waiting (a read flood), and must not
// hold any part of the lock set while it waits.
TEST(KeyLocks, AWaitingCutGoesBeforeReadersThatArriveAfterIt) {
  KeyLocks locks;
  std::optional<KeyLocks::Guard> in_flight(locks.Lock({7}, /*exclusive=*/false));
  std::atomic<int> order{0};
  int cut_at = 0, reader_at = 0;
  std::thread cut([&] {
    KeyLocks::Guard all = locks.LockAll(/*exclusive=*/true);
    cut_at = order.fetch_add(1) + 1;
  });
  ASSERT_TRUE(PollUntil([&] { return locks.exclusive_waiters() == 1; },
                        std::chrono::seconds(10)));
  std::atomic<bool> reader_done{false};
  std::thread reader([&] {
    // Another stripe: the old cut, holding stripes 0..6 and waiting for 7,
    // let this one through, and held 0..6 against everyone else meanwhile.
    KeyLocks::Guard read = locks.Lock({9}, /*exclusive=*/false);
    reader_at = order.fetch_add(1) + 1;
    reader_done = true;
  });
  // A reader that may go first does so within microseconds; one queued
  // behind the cut never does while the command in flight holds on.
  EXPECT_FALSE(PollUntil([&] { return reader_done.load(); }, std::chrono::milliseconds(200)))
      << "a reader that arrived after the waiting cut went first";
  in_flight.reset();
  cut.join();
  reader.join();
  EXPECT_EQ(cut_at, 1);
  EXPECT_EQ(reader_at, 2);
}

class FreedAfterLocks : public ::testing::Test {
 protected:
  FreedAfterLocks() : server_(MakeServer()), s_(server_.get()) {}
  void Create(const std::string& key) { ASSERT_EQ(s_.Run({"BF.ADD", key, "x"}), Int(1)); }
  std::unique_ptr<ServerContext> server_;
  Session s_;
};

TEST_F(FreedAfterLocks, DelFreesTheFilterAfterReleasingTheKeyLocks) {
  Create("a");
  Create("b");
  uint64_t before = KeyEntry::freed_under_key_locks();
  ASSERT_EQ(s_.Run({"DEL", "a", "b"}), Int(2));
  EXPECT_EQ(KeyEntry::freed_under_key_locks(), before);
  EXPECT_EQ(s_.Run({"EXISTS", "a", "b"}), Int(0));
}

TEST_F(FreedAfterLocks, FlushallFreesEveryFilterAfterReleasingTheKeyLocks) {
  for (int i = 0; i < 100; ++i) Create("k" + std::to_string(i));
  uint64_t before = KeyEntry::freed_under_key_locks();
  ASSERT_EQ(s_.Run({"FLUSHALL"}), kOk);
  EXPECT_EQ(KeyEntry::freed_under_key_locks(), before);
  EXPECT_EQ(s_.Run({"DBSIZE"}), Int(0));
}

TEST_F(FreedAfterLocks, RenameOverATargetAndATransactionFreeAfterTheirLocks) {
  Create("src");
  Create("dst");
  Create("t");
  uint64_t before = KeyEntry::freed_under_key_locks();
  ASSERT_EQ(s_.Run({"RENAME", "src", "dst"}), kOk);
  ASSERT_EQ(s_.Run({"MULTI"}), kOk);
  ASSERT_EQ(s_.Run({"DEL", "t"}), kQueued);
  ASSERT_EQ(s_.Run({"EXEC"}), Arr(1) + Int(1));
  EXPECT_EQ(KeyEntry::freed_under_key_locks(), before);
}

TEST_F(FreedAfterLocks, AnExpiredKeyFoundByACommandIsFreedAfterItsLocks) {
  Create("short");
  ASSERT_EQ(s_.Run({"PEXPIREAT", "short", "1"}), Int(1)) << "a deadline in the past deletes";
  Create("later");
  // A deadline 1 ms ahead; once it has passed, the next command to find the
  // key removes it.
  ASSERT_EQ(s_.Run({"PEXPIRE", "later", "1"}), Int(1));
  int64_t deadline = NowMs() + 2;
  ASSERT_TRUE(PollUntil([&] { return NowMs() > deadline; }, std::chrono::seconds(5)));
  uint64_t before = KeyEntry::freed_under_key_locks();
  EXPECT_EQ(s_.Run({"BF.EXISTS", "later", "x"}), Int(0));
  EXPECT_EQ(KeyEntry::freed_under_key_locks(), before);
}

}  // namespace
}  // namespace bloomgate
