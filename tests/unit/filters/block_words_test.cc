// The word arrays under every blocked layer: aligned, zeroed, and for big
// arrays their own 2 MiB-aligned mapping advised MADV_HUGEPAGE before the
// first write (issue 14 target 7). Whether the kernel then really hands out
// 2 MiB pages depends on the machine (THP mode, free huge pages), so that is
// measured by the bench (paired_huge rows: huge_MiB), not asserted here; the
// advice itself is visible in /proc/self/smaps ("hg" in VmFlags).
#include "filters/block_words.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "filters/blocked_bloom.h"
#include "vm_flags.h"

namespace bloomgate {
namespace {

using internal::DeleteBlockWords;
using internal::kHugePageArrayBytes;
using internal::kHugePageBytes;
using internal::NewZeroedBlockWords;

using testing::HasVmFlag;
using testing::VmFlagsOf;

TEST(BlockWords, SmallArraysAreLineAlignedAndZeroed) {
  const uint64_t bytes = 64 * 1000;
  std::atomic<uint64_t>* words = NewZeroedBlockWords(bytes);
  ASSERT_NE(words, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(words) % 64, 0u);
  for (uint64_t i = 0; i < bytes / 8; ++i) ASSERT_EQ(words[i].load(), 0u) << i;
  DeleteBlockWords(words, bytes);
}

TEST(BlockWords, BigArraysStartOnA2MiBBoundaryAreZeroedAndAdvisedHugePages) {
  // Not a multiple of 2 MiB or of 4 KiB: the tail is mapped to the next 4 KiB.
  const uint64_t bytes = kHugePageArrayBytes + 3 * kHugePageBytes + 64 * 7;
  std::atomic<uint64_t>* words = NewZeroedBlockWords(bytes);
  ASSERT_NE(words, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(words) % kHugePageBytes, 0u);
  for (uint64_t i = 0; i < bytes / 8; i += 511) ASSERT_EQ(words[i].load(), 0u) << i;
  words[bytes / 8 - 1].store(~uint64_t{0});  // the last word is ours to write
  EXPECT_EQ(words[bytes / 8 - 1].load(), ~uint64_t{0});
  const std::string flags = VmFlagsOf(words);
  if (flags.empty()) {
    DeleteBlockWords(words, bytes);
    GTEST_SKIP() << "/proc/self/smaps not readable";
  }
  EXPECT_TRUE(HasVmFlag(flags, "hg")) << flags;  // MADV_HUGEPAGE
  DeleteBlockWords(words, bytes);
}

TEST(BlockWords, ABigBloomLayerGetsTheHugePageMapping) {
  BloomShape shape = ChooseBlockedBloomShape(0.01, 1000);
  shape.bits = kHugePageArrayBytes * 8;  // exactly the threshold
  const auto filter = BlockedBloom::Create(shape);
  ASSERT_NE(filter, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(filter->words()) % kHugePageBytes, 0u);
  const auto small = BlockedBloom::Create(ChooseBlockedBloomShape(0.01, 1000));
  ASSERT_NE(small, nullptr);
  const std::string flags = VmFlagsOf(filter->words());
  if (!flags.empty()) {
    EXPECT_TRUE(HasVmFlag(flags, "hg")) << flags;
  }
}

TEST(BlockWords, UnderASmallPagesScopeABigArrayIsNotAdvisedHugePages) {
  const uint64_t bytes = kHugePageArrayBytes;
  std::atomic<uint64_t>* words = nullptr;
  {
    internal::SmallPagesScope small_pages;
    words = NewZeroedBlockWords(bytes);
  }
  ASSERT_NE(words, nullptr);
  for (uint64_t i = 0; i < bytes / 8; i += 4099) ASSERT_EQ(words[i].load(), 0u) << i;
  const std::string flags = VmFlagsOf(words);
  std::atomic<uint64_t>* after = NewZeroedBlockWords(bytes);  // the scope has ended
  ASSERT_NE(after, nullptr);
  const std::string after_flags = VmFlagsOf(after);
  DeleteBlockWords(words, bytes);
  DeleteBlockWords(after, bytes);
  if (flags.empty()) GTEST_SKIP() << "/proc/self/smaps not readable";
  EXPECT_FALSE(HasVmFlag(flags, "hg")) << flags;
  EXPECT_TRUE(HasVmFlag(after_flags, "hg")) << after_flags;
}

}  // namespace
}  // namespace bloomgate
