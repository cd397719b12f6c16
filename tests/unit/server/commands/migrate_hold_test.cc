// What MIGRATE relies on to lose no acknowledged write: a key held for a
// read off the loop (KeyEntry::BeginOffLoopRead) and removed before the hold
// ends leaves its waiting writers to find it gone, never to write into the
// removed filter.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "server/keyspace/snapshot_copier.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

// Polls `done` until it holds or 10 s pass (a parked writer's threads are
// not ours to join on); whether it held.
template <typename Done>
bool WaitFor(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// `BF.ADD k y` from a session of its own, started once `k` is held and
// returned once it parked on the hold; its reply lands in *reply.
std::thread ParkedWriterOfK(ServerContext* server, std::string* reply) {
  const uint64_t requests_before = server->snapshot_copier.requests();
  std::thread writer([server, reply] {
    Session s(server, /*worker=*/1);
    *reply = s.Run({"BF.ADD", "k", "y"});
  });
  // The writer waits for the hold: parked, not on its loop.
  EXPECT_TRUE(WaitFor([&] { return server->snapshot_copier.requests() > requests_before; }))
      << "the writer did not park";
  return writer;
}

TEST(MigrateHold, AWriterHeldOffARemovedKeyWritesWhereTheNextReaderLooks) {
  auto server = MakeServer();
  Session setup(server.get(), /*worker=*/0);
  ASSERT_EQ(setup.Run({"BF.ADD", "k", "x"}), Int(1));  // a small filter: < 1 MiB
  EntryPtr moving = server->keyspace.Find("k", NowMs());
  EntryReadHold hold(moving);
  std::string reply;
  std::thread writer = ParkedWriterOfK(server.get(), &reply);
  // The move: the target has it, the source deletes it, then lets go.
  ASSERT_TRUE(server->keyspace.EraseIfSame(MakeKeyRef("k"), moving.get(), NowMs(), nullptr));
  hold.Release();
  writer.join();
  EXPECT_EQ(reply, Int(1));
  // The acknowledged add is in the key readers find (re-created here), not
  // in the filter that left.
  EXPECT_EQ(setup.Run({"BF.EXISTS", "k", "y"}), Int(1));
  EXPECT_EQ(setup.Run({"BF.EXISTS", "k", "x"}), Int(0));
}

TEST(MigrateHold, AWriterHeldOffAKeyLeavesTheSnapshotCopierFreeForOtherCopies) {
  auto server = MakeServer();
  Session setup(server.get(), /*worker=*/0);
  ASSERT_EQ(setup.Run({"BF.ADD", "k", "x"}), Int(1));
  // ~10 MB of counters: its copy is the copier's (SnapshotCopier::kInlineCopyBytes).
  ASSERT_EQ(setup.Run({"CBF.RESERVE", "big", "0.01", "2000000"}), kOk);
  EntryReadHold hold(server->keyspace.Find("k", NowMs()));
  std::string reply;
  std::thread writer = ParkedWriterOfK(server.get(), &reply);
  // A snapshot cut owes itself a copy of `big`; its writer parks for it.
  EntryPtr big = server->keyspace.Find("big", NowMs());
  EXPECT_GE(big->MemoryUsage(), SnapshotCopier::kInlineCopyBytes);
  big->ArmSnapshotCopy(std::make_shared<SnapshotCopy>());
  std::string big_reply;
  std::thread big_writer([&] {
    Session s(server.get(), /*worker=*/2);
    big_reply = s.Run({"CBF.ADD", "big", "z"});
  });
  // The copier makes it while `k` is still held: the writer of `k` waits in
  // the entry's own list, not on the copier's one thread.
  EXPECT_TRUE(WaitFor([&] { return server->snapshot_copier.copies_made() == 1; }))
      << "the copy of `big` waited for the hold on `k` to end";
  EXPECT_TRUE(reply.empty()) << "the writer of `k` went on while it was held";
  hold.Release();
  writer.join();
  big_writer.join();
  EXPECT_EQ(reply, Int(1));
  EXPECT_EQ(big_reply, Int(1));
}

}  // namespace
}  // namespace bloomgate
