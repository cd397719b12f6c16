// Issue 15, the ordering window between a lazy expiry and an order-free
// Bloom add: two commands holding one key's stripe shared, whose clocks read
// either side of its deadline. The add (clock before the deadline) writes
// into the filter; the other (clock after) removes the key and journals DEL.
// If the add's record reached the log after that DEL, replay would run the
// the add after the DEL: into nothing (harmless), or into the filter a third
// client created under the name since, which never held the item. The fix: a shared
// locker that will find its key due takes the key exclusively, so it waits
// for the add (and its record) to finish first.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "../../config/temp_dir.h"
#include "../durable_session.h"
#include "server/catalogue/command_table.h"
#include "server/commands/command_dispatcher.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

// Holds the first BF.ADD after its handler, before its record is journaled,
// until released.
struct AddHold {
  std::mutex mutex;
  std::condition_variable wake;
  bool held = false;
  bool released = false;
};
AddHold* hold = nullptr;

void HoldBloomAdd(const CommandSpec& spec) {
  if (hold == nullptr || spec.name != "bf.add") return;
  std::unique_lock lock(hold->mutex);
  if (hold->held) return;
  hold->held = true;
  hold->wake.notify_all();
  hold->wake.wait(lock, [] { return hold->released; });
}

void WaitUntilAfter(int64_t deadline_ms) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (NowMs() <= deadline_ms && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  ASSERT_GT(NowMs(), deadline_ms);
}

TEST(ExpiryOrder, ALookupThatExpiresAKeyWaitsForASharedAddInFlight) {
  testutil::TempDir dir;
  ServerConfig config = DurableConfigIn(dir, ServerConfig::AppendFsync::kAlways);
  auto server = MakeServer(config, /*workers=*/3);
  server->UseFileSystem(DefaultFileSystem());
  ASSERT_TRUE(LoadDurableState(*server).ok());
  Session adder(server.get(), 0);
  Session reader(server.get(), 1);
  Session creator(server.get(), 2);
  ASSERT_EQ(RunDurably(*server, adder, {"BF.ADD", "k", "before"}), Int(1));
  // 100 ms: the add below must read its clock before the deadline even on
  // a loaded machine.
  const int64_t deadline = NowMs() + 100;
  ASSERT_EQ(RunDurably(*server, adder, {"PEXPIREAT", "k", std::to_string(deadline)}), Int(1));

  AddHold add_hold;
  hold = &add_hold;
  after_handler_hook = &HoldBloomAdd;
  auto add = std::async(std::launch::async, [&] {
    return RunDurably(*server, adder, {"BF.ADD", "k", "racing"});
  });
  {
    std::unique_lock lock(add_hold.mutex);
    add_hold.wake.wait(lock, [&] { return add_hold.held; });
  }
  // The add ran on the live key and is held before its record. Now the key
  // is due, and a read looks at it.
  WaitUntilAfter(deadline);
  auto look = std::async(std::launch::async, [&] {
    return RunDurably(*server, reader, {"BF.EXISTS", "k", "racing"});
  });
  // Fixed, the read waits for the add's stripe; without the fix it removes
  // the key at once and journals its DEL ahead of the add. Either way the
  // add is let go after this bounded wait, which decides nothing by itself.
  (void)look.wait_for(std::chrono::milliseconds(300));
  // And a third client adds to the name, creating a new filter there.
  auto create = std::async(std::launch::async, [&] {
    return RunDurably(*server, creator, {"BF.ADD", "k", "created"});
  });
  (void)create.wait_for(std::chrono::milliseconds(300));
  {
    std::lock_guard lock(add_hold.mutex);
    add_hold.released = true;
  }
  add_hold.wake.notify_all();
  EXPECT_EQ(add.get(), Int(1));
  EXPECT_EQ(look.get(), Int(0));
  EXPECT_EQ(create.get(), Int(1));
  after_handler_hook = nullptr;
  hold = nullptr;
  ASSERT_EQ(reader.Run({"BF.EXISTS", "k", "created"}), Int(1));
  ASSERT_EQ(reader.Run({"BF.EXISTS", "k", "racing"}), Int(0))
      << "the racing add went into the filter that expired";

  server.reset();  // kill -9
  auto restarted = StartOn(config, DefaultFileSystem());
  Session after(restarted.get());
  EXPECT_EQ(after.Run({"BF.EXISTS", "k", "created"}), Int(1));
  EXPECT_EQ(after.Run({"BF.EXISTS", "k", "racing"}), Int(0))
      << "replay put the racing add into the new filter: its record came after the DEL";
}

}  // namespace
}  // namespace bloomgate::testing
