// What MIGRATE relies on to lose no acknowledged write: a key held for a
// read off the loop (KeyEntry::BeginOffLoopRead) and removed before the hold
// ends leaves its waiting writers to find it gone, never to write into the
// removed filter.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

TEST(MigrateHold, AWriterHeldOffARemovedKeyWritesWhereTheNextReaderLooks) {
  auto server = MakeServer();
  Session setup(server.get(), /*worker=*/0);
  ASSERT_EQ(setup.Run({"BF.ADD", "k", "x"}), Int(1));  // a small filter: < 1 MiB
  EntryPtr moving = server->keyspace.Find("k", NowMs());
  EntryReadHold hold(moving);
  const uint64_t requests_before = server->snapshot_copier.requests();
  std::string reply;
  std::thread writer([&] {
    Session s(server.get(), /*worker=*/1);
    reply = s.Run({"BF.ADD", "k", "y"});
  });
  // The writer waits for the hold: parked on the copier, not on its loop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server->snapshot_copier.requests() == requests_before &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_GT(server->snapshot_copier.requests(), requests_before) << "the writer did not park";
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

}  // namespace
}  // namespace bloomgate
