// What the event loops' threads allocate for filters: 4 KiB pages, never
// advised MADV_HUGEPAGE, since the loop itself faults them in under the
// first adds (a 2 MiB first touch costs ~77 ms on a loaded 2-core VM, a
// 4 KiB one ~22 us). The advice is visible in /proc/self/smaps ("hg").
#include "server/net/io_context_pool.h"

#include <gtest/gtest.h>

#include <future>
#include <string>

#include "../../filters/vm_flags.h"
#include "filters/block_words.h"

namespace bloomgate {
namespace {

using internal::DeleteBlockWords;
using internal::kHugePageArrayBytes;
using internal::NewZeroedBlockWords;

// The VmFlags of a big block-words array made on the calling thread.
std::string FlagsOfABigArray() {
  std::atomic<uint64_t>* words = NewZeroedBlockWords(kHugePageArrayBytes);
  if (words == nullptr) return "unallocated";
  std::string flags = testing::VmFlagsOf(words);
  DeleteBlockWords(words, kHugePageArrayBytes);
  return flags;
}

TEST(IoContextPool, ALoopThreadsBigFilterArraysAreNotAdvisedHugePages) {
  const std::string here = FlagsOfABigArray();
  if (here.empty()) GTEST_SKIP() << "/proc/self/smaps not readable";
  ASSERT_TRUE(testing::HasVmFlag(here, "hg")) << "elsewhere big arrays get the advice: " << here;

  IoContextPool pool(1);
  pool.Start();
  std::promise<std::string> on_loop;
  asio::post(pool.context(0), [&on_loop] { on_loop.set_value(FlagsOfABigArray()); });
  const std::string flags = on_loop.get_future().get();
  pool.ReleaseWork();
  pool.Join();
  EXPECT_NE(flags, "unallocated");
  EXPECT_FALSE(testing::HasVmFlag(flags, "hg")) << flags;
}

}  // namespace
}  // namespace bloomgate
