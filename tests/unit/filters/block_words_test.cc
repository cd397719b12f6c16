// The word arrays under every blocked layer: aligned, zeroed, and for big
// arrays their own 2 MiB-aligned mapping advised MADV_HUGEPAGE before the
// first write (issue 14 target 7). Whether the kernel then really hands out
// 2 MiB pages depends on the machine (THP mode, free huge pages), so that is
// measured by the bench (paired_huge rows: huge_MiB), not asserted here; the
// advice itself is visible in /proc/self/smaps ("hg" in VmFlags).
#include "filters/block_words.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "filters/blocked_bloom.h"

namespace bloomgate {
namespace {

using internal::DeleteBlockWords;
using internal::kHugePageArrayBytes;
using internal::kHugePageBytes;
using internal::NewZeroedBlockWords;

// The VmFlags line of the mapping holding `p`, or "" if smaps is unreadable.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool HasFlag(const std::string& vm_flags, const std::string& flag) {
  std::istringstream words(vm_flags);
  std::string word;
  while (words >> word) {
    if (word == flag) return true;
  }
  return false;
}

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
  EXPECT_TRUE(HasFlag(flags, "hg")) << flags;  // MADV_HUGEPAGE
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
    EXPECT_TRUE(HasFlag(flags, "hg")) << flags;
  }
}

}  // namespace
}  // namespace bloomgate
