// The LOADCHUNK loader for every family over any chunks. It must refuse
// damage with an error (no crash, UB, leak or unbounded allocation), and
// "whatever the chunk loader accepts can be saved and loaded back": a filter
// it finishes must dump and reload through chunks again, take more items,
// and survive a snapshot round trip (WriteSnapshot + ReadSnapshot), before
// and after those adds. A refusal there aborts.
//
// Input: byte 0 = the family LOADCHUNK expects (low 6 bits % 7: Bloom,
// counting, cuckoo, count-min, top-k, windowed Bloom, windowed counting),
// bit 7 set = leave the chunks as they are (else each
// chunk's header id and checksum are recomputed, so the header and payload
// decoders behind them are reached). Then the chunks, each a u32
// little-endian length and its bytes (SplitPieces).
//
// Bit 6 set = RedisBloom's CF.SCANDUMP format instead (cuckoo; persistence/
// redisbloom_cuckoo_chunk.h): the first chunk is the 38-byte header, each
// later one a u64 little-endian LOADCHUNK iterator and the chunk's bytes (a
// piece under 9 bytes: all data, at the iterator that continues the load).
// What loads must dump in RedisBloom's format and load back the same, and
// pass the same snapshot and add checks.
//
// For Bloom, a first chunk that is not ours is read as RedisBloom's
// BF.SCANDUMP header (as BF.LOADCHUNK reads one at iterator 1) and the chunks
// after it as RedisBloom data chunks, each at the iterator that places it
// right after the previous one; such a filter must also dump in RedisBloom's
// format and load back from that, the same filter.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "filters/key_hash.h"
#include "persistence/byte_io.h"
#include "persistence/dump_chunk.h"
#include "persistence/filter_codec.h"
#include "persistence/redisbloom_cuckoo_chunk.h"
#include "persistence/redisbloom_dump.h"
#include "tests/fuzz/fuzz_support.h"

namespace bloomgate::fuzz {
namespace {

constexpr FilterKind kKinds[] = {FilterKind::kScalableBloom, FilterKind::kCountingBloom,
                                 FilterKind::kCuckoo,        FilterKind::kCountMinSketch,
                                 FilterKind::kTopK,          FilterKind::kWindowedBloom,
                                 FilterKind::kWindowedCountingBloom};
constexpr size_t kNumKinds = sizeof(kKinds) / sizeof(kKinds[0]);

// The LOADCHUNK loop as the server runs it: a header chunk starts a load,
// the others feed it; a refused chunk changes nothing.
bool LoadChunks(const std::vector<std::string>& chunks, FilterKind kind, MemoryBudget* budget,
                AnyFilter* out) {
  std::unique_ptr<ChunkedFilterLoad> load;
  for (const std::string& chunk : chunks) {
    if (kind == FilterKind::kScalableBloom && load == nullptr && !IsHeaderChunk(chunk)) {
      std::unique_ptr<ChunkedFilterLoad> started;
      if (ChunkedFilterLoad::StartRedisBloom(chunk, FuzzLimits(), budget, &started).ok()) {
        FUZZ_CHECK(started != nullptr && started->redisbloom(), "a RedisBloom load of no kind");
        load = std::move(started);
      } else {
        FUZZ_CHECK(started == nullptr, "a refused RedisBloom header left a load");
      }
    } else if (load != nullptr && load->redisbloom()) {
      const uint64_t before = load->loaded_bytes();
      if (!load->AddRedisBloom(before + chunk.size() + 1, chunk).ok()) {
        FUZZ_CHECK(load->loaded_bytes() == before, "a refused RedisBloom chunk changed the load");
      }
    } else if (IsHeaderChunk(chunk)) {
      std::unique_ptr<ChunkedFilterLoad> started;
      if (ChunkedFilterLoad::Start(chunk, kind, FuzzLimits(), budget, &started).ok()) {
        FUZZ_CHECK(started != nullptr && started->kind() == kind, "a started load of no kind");
        load = std::move(started);
      } else {
        FUZZ_CHECK(started == nullptr, "a refused header chunk left a load");
      }
    } else if (load != nullptr) {
      const uint64_t before = load->loaded_bytes();
      if (!load->Add(chunk).ok()) {
        FUZZ_CHECK(load->loaded_bytes() == before, "a refused chunk changed the load");
      }
    }
  }
  if (load == nullptr || !load->complete()) return false;
  return load->Finish(out).ok();
}

// The CF.LOADCHUNK loop over RedisBloom chunks (see the input format).
bool LoadRedisBloomChunks(const std::vector<std::string>& pieces, MemoryBudget* budget,
                          AnyFilter* out) {
  if (pieces.empty()) return false;
  std::unique_ptr<ChunkedFilterLoad> load;
  if (!ChunkedFilterLoad::StartRedisBloomCuckoo(pieces[0], kDefaultCuckooMaxExpansions,
                                                FuzzLimits(), budget, &load)
           .ok()) {
    FUZZ_CHECK(load == nullptr, "a refused RedisBloom header left a load");
    return false;
  }
  for (size_t i = 1; i < pieces.size(); ++i) {
    std::string_view piece = pieces[i];
    uint64_t iterator = load->loaded_bytes() + piece.size() + 1;
    if (piece.size() >= 9) {
      ByteReader(piece.substr(0, 8)).GetU64(&iterator);
      piece.remove_prefix(8);
    }
    const uint64_t before = load->loaded_bytes();
    if (!load->AddRedisBloom(iterator, piece).ok()) {
      FUZZ_CHECK(load->loaded_bytes() == before, "a refused RedisBloom chunk changed the load");
    }
  }
  if (!load->complete()) return false;
  return load->Finish(out).ok();
}

// A loaded RedisBloom-format filter dumps in that format and loads back.
void CheckRedisBloomRoundTrip(const AnyFilter& filter, MemoryBudget* budget) {
  const CuckooFilter& cuckoo = *std::get<std::unique_ptr<CuckooFilter>>(filter);
  FUZZ_CHECK(cuckoo.scheme() == CuckooScheme::kRedisBloom, "a RedisBloom load of another scheme");
  if (cuckoo.items() == 0) return;  // RedisBloom dumps no empty filter
  std::vector<std::string> dump;
  for (uint64_t it = 0;;) {
    uint64_t next = 0;
    std::string chunk;
    bool end = false;
    NextRedisBloomCuckooChunk(cuckoo, it, &next, &chunk, &end, /*max_chunk_bytes=*/4096);
    if (end) break;
    if (it != 0) {
      std::string framed;
      ByteWriter(&framed).PutU64(next);
      chunk = framed + chunk;
    }
    dump.push_back(std::move(chunk));
    it = next;
  }
  AnyFilter reloaded;
  FUZZ_CHECK(LoadRedisBloomChunks(dump, budget, &reloaded), "LOADCHUNK refused its own RedisBloom dump");
  const FilterHeader a = DescribeFilter(filter);
  const FilterHeader b = DescribeFilter(reloaded);
  FUZZ_CHECK(a.bytes == b.bytes && PayloadOf(filter, a) == PayloadOf(reloaded, b),
             "the RedisBloom dump of a loaded filter loads as another filter");
}

void AddItems(const AnyFilter& filter, int count) {
  for (int i = 0; i < count; ++i) {
    const KeyHash h = HashKey("fuzz:" + std::to_string(i));
    std::visit(
        [&](const auto& f) {
          using T = std::decay_t<decltype(*f)>;
          if constexpr (std::is_same_v<T, ScalableBloomFilter>) {
            bool added = false;
            if (f->Add(h, &added) == FilterStatus::kOk) {
              FUZZ_CHECK(f->MayContain(h), "a Bloom add that was ok is not found");
            }
          } else if constexpr (std::is_same_v<T, CountingBloomFilter>) {
            bool was_new = false;
            if (f->Add(h, &was_new) == FilterStatus::kOk) {
              FUZZ_CHECK(f->MayContain(h), "a counting add that was ok is not found");
            }
          } else if constexpr (std::is_same_v<T, CuckooFilter>) {
            if (f->Add(h) == FilterStatus::kOk) {
              FUZZ_CHECK(f->MayContain(h), "a cuckoo add that was ok is not found");
            }
          }
          // Count-min sketches and top-k lists take no adds here: their
          // chunks are decoded, saved and loaded back like the others.
        },
        filter);
  }
}

}  // namespace
}  // namespace bloomgate::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bloomgate;
  using namespace bloomgate::fuzz;
  if (size < 1) return 0;
  const FilterKind kind = kKinds[(data[0] & 0x3f) % kNumKinds];
  std::vector<std::string> chunks =
      SplitPieces(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  if ((data[0] & 0x40) != 0) {
    MemoryBudget budget(kFuzzBudgetBytes);
    AnyFilter filter;
    if (!LoadRedisBloomChunks(chunks, &budget, &filter)) return 0;
    CheckRedisBloomRoundTrip(filter, &budget);
    CheckSnapshotRoundTrip(filter);
    AddItems(filter, 40);
    CheckRedisBloomRoundTrip(filter, &budget);
    CheckSnapshotRoundTrip(filter);
    ExerciseFilter(&filter);
    return 0;
  }
  if ((data[0] & 0x80) == 0) {
    uint64_t header_id = 0;
    for (std::string& chunk : chunks) FixChunkChecksums(&chunk, &header_id);
  }

  MemoryBudget budget(kFuzzBudgetBytes);
  AnyFilter filter;
  if (!LoadChunks(chunks, kind, &budget, &filter)) return 0;
  FUZZ_CHECK(DescribeFilter(filter).kind == kind, "LOADCHUNK built another family");

  // A RedisBloom-layout filter dumps in RedisBloom's format and loads back.
  if (const auto* bloom = std::get_if<std::unique_ptr<ScalableBloomFilter>>(&filter);
      bloom != nullptr && (*bloom)->layout() == BloomLayout::kRedisBloom) {
    std::vector<std::string> rb;
    for (uint64_t it = 0;;) {
      uint64_t next = 0;
      std::string chunk;
      NextRedisBloomChunk(**bloom, it, &next, &chunk, /*max_chunk_bytes=*/4096);
      if (next == 0) break;
      rb.push_back(std::move(chunk));
      it = next;
    }
    AnyFilter back;
    FUZZ_CHECK(LoadChunks(rb, kind, &budget, &back), "LOADCHUNK refused a RedisBloom re-export");
    FUZZ_CHECK(DescribeFilter(back).bytes == DescribeFilter(filter).bytes &&
                   PayloadOf(back, DescribeFilter(back)) == PayloadOf(filter, DescribeFilter(filter)),
               "a RedisBloom re-export loads as another filter");
  }

  // It dumps and loads again through chunks, byte for byte the same.
  std::vector<std::string> dump;
  for (uint64_t it = 0;;) {
    uint64_t next = 0;
    std::string chunk;
    NextDumpChunk(filter, it, &next, &chunk, /*max_payload_bytes=*/4096);
    if (next == 0) break;
    dump.push_back(std::move(chunk));
    it = next;
  }
  AnyFilter reloaded;
  FUZZ_CHECK(LoadChunks(dump, kind, &budget, &reloaded), "LOADCHUNK refused its own dump");
  const FilterHeader a = DescribeFilter(filter);
  const FilterHeader b = DescribeFilter(reloaded);
  FUZZ_CHECK(a.bytes == b.bytes && PayloadOf(filter, a) == PayloadOf(reloaded, b),
             "the dump of a loaded filter loads as another filter");

  // It saves and loads back, before and after it takes more items.
  CheckSnapshotRoundTrip(filter);
  AddItems(filter, 40);
  CheckSnapshotRoundTrip(filter);
  // What a client runs next (every family): info, exists, add.
  ExerciseFilter(&filter);
  CheckSnapshotRoundTrip(filter);
  return 0;
}
