// Big filters are freed off the key locks (issue 15 bug 4: DEL of an 825 MB
// filter took 66 ms inside the command): DEL, UNLINK, FLUSHALL, RENAME over
// a key and expiry hand a filter of LazyFreer::kLazyFreeBytes or more to the
// lazy freer's thread, which frees it after the command; its bytes stay
// charged to maxmemory until then.
#include <gtest/gtest.h>

#include "server/keyspace/lazy_freer.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

// ~4.6 MB of 4-bit counters: above LazyFreer::kLazyFreeBytes.
constexpr const char* kLazyFreeCapacity = "1000000";

TEST(LazyFree, EveryWayABigFilterIsRemovedFreesItOnTheFreersThread) {
  auto server = MakeServer();
  Session s(server.get());
  const uint64_t empty = server->budget.used();
  const Args removals[] = {
      {"DEL", "big"}, {"UNLINK", "big"}, {"FLUSHALL"}, {"RENAME", "other", "big"}};
  const uint64_t under_locks = KeyEntry::freed_under_key_locks();
  for (const Args& removal : removals) {
    const uint64_t freed_before = server->lazy_freer.freed();
    ASSERT_EQ(s.Run({"CBF.RESERVE", "big", "0.01", kLazyFreeCapacity}), kOk);
    ASSERT_GE(server->keyspace.Find("big", NowMs())->MemoryUsage(), LazyFreer::kLazyFreeBytes);
    ASSERT_EQ(s.Run({"CBF.ADD", "other", "x"}), Int(1));  // small: freed inline
    ASSERT_NE(s.Run(removal)[0], '-') << removal[0];
    server->lazy_freer.WaitIdle();
    EXPECT_GT(server->lazy_freer.freed(), freed_before)
        << removal[0] << " handed the big filter to the lazy freer";
    (void)s.Run({"DEL", "big", "other"});
    server->lazy_freer.WaitIdle();
    EXPECT_EQ(server->budget.used(), empty) << "and every byte is given back once freed";
  }
  EXPECT_EQ(KeyEntry::freed_under_key_locks(), under_locks);
}

TEST(LazyFree, TheFreerReportsPendingObjectsInInfoMemory) {
  auto server = MakeServer();
  Session s(server.get());
  std::string info = s.Run({"INFO", "memory"});
  EXPECT_NE(info.find("lazyfree_pending_objects:0\r\n"), std::string::npos) << info;
  EXPECT_NE(info.find("lazyfreed_objects:0\r\n"), std::string::npos) << info;
  ASSERT_EQ(s.Run({"CBF.RESERVE", "big", "0.01", kLazyFreeCapacity}), kOk);
  ASSERT_EQ(s.Run({"DEL", "big"}), Int(1));
  server->lazy_freer.WaitIdle();
  info = s.Run({"INFO", "memory"});
  EXPECT_NE(info.find("lazyfreed_objects:1\r\n"), std::string::npos) << info;
}

}  // namespace
}  // namespace bloomgate::testing
