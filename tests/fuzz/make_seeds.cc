// Writes the seed corpora of the fuzz targets into <dir>/<target>/ with the
// real writers (WriteSnapshot, AppendLogWriter, NextDumpChunk), so every seed
// is a valid input that the mutations start from. Usage:
//   fuzz_make_seeds tests/fuzz/corpus      (scripts/fuzz.sh --seeds)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "filters/key_hash.h"
#include "persistence/append_log.h"
#include "persistence/byte_io.h"
#include "persistence/dump_chunk.h"
#include "persistence/dump_payload.h"
#include "persistence/redisbloom_cuckoo_chunk.h"
#include "persistence/snapshot_file.h"
#include "server/cluster_bus/bus_codec.h"
#include "tests/fuzz/command_program.h"
#include "tests/fuzz/fuzz_support.h"

namespace bloomgate::fuzz {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& dir, const std::string& name, std::string_view bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary).write(bytes.data(), bytes.size());
}

KeyHash Item(uint64_t i) { return HashKey("item:" + std::to_string(i)); }

AnyFilter Bloom(uint64_t capacity, uint64_t items) {
  std::unique_ptr<ScalableBloomFilter> f;
  ScalableBloomFilter::Create(ScalableBloomOptions{0.01, capacity, 2}, FilterLimits{}, nullptr, &f);
  bool added = false;
  for (uint64_t i = 0; i < items; ++i) (void)f->Add(Item(i), &added);
  return f;
}

AnyFilter Counting(uint64_t items) {
  std::unique_ptr<CountingBloomFilter> f;
  CountingBloomFilter::Create(CountingBloomOptions{0.05, 20, 2, 4}, FilterLimits{}, nullptr, &f);
  bool was_new = false;
  for (uint64_t i = 0; i < items; ++i) (void)f->Add(Item(i), &was_new);
  return f;
}

AnyFilter Cuckoo(uint64_t items) {
  CuckooFilterOptions options;
  options.capacity = 8;
  options.expansion = 2;
  std::unique_ptr<CuckooFilter> f;
  CuckooFilter::Create(options, FilterLimits{}, nullptr, &f);
  for (uint64_t i = 0; i < items; ++i) (void)f->Add(Item(i));
  return f;
}

// A windowed filter made at kSeedClockMs that took adds over three periods
// (it turned over twice): the ring has slots of several generations.
constexpr int64_t kSeedClockMs = 1'700'000'000'000;

AnyFilter WindowedBloom(uint64_t items) {
  WindowedBloomOptions options;
  options.capacity = 20;
  options.window_ms = 4000;
  options.generations = 4;
  std::unique_ptr<WindowedBloomFilter> f;
  WindowedBloomFilter::Create(options, kSeedClockMs, FilterLimits{}, nullptr, &f);
  for (uint64_t i = 0; i < items; ++i) {
    bool seen = false, added = false;
    uint64_t generation = 0;
    (void)f->Add(Item(i), kSeedClockMs + int64_t(i % 3) * 1000, &seen, &generation, &added);
  }
  return f;
}

AnyFilter WindowedCounting(uint64_t items) {
  WindowedCountingBloomOptions options;
  options.capacity = 20;
  options.window_ms = 3000;
  options.generations = 2;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  WindowedCountingBloomFilter::Create(options, kSeedClockMs, FilterLimits{}, nullptr, &f);
  for (uint64_t i = 0; i < items; ++i) {
    bool was_new = false;
    uint64_t count = 0, generation = 0;
    (void)f->Add(Item(i % 10), kSeedClockMs + int64_t(i % 3) * 1500, &was_new, &count,
                 &generation);
  }
  return f;
}

AnyFilter CountMin(uint64_t items) {
  std::unique_ptr<CountMinSketch> f;
  CountMinSketch::Create(/*width=*/21, /*depth=*/3, FilterLimits{}, nullptr, &f);  // odd cells
  for (uint64_t i = 0; i < items; ++i) f->IncrBy(Item(i % 7), i + 1);
  return f;
}

AnyFilter TopKList(uint64_t items) {
  std::unique_ptr<TopK> f;
  TopK::Create(TopKOptions{.k = 4, .width = 8, .depth = 3, .decay = 0.9, .prng_state = 5},
               FilterLimits{}, nullptr, &f);
  for (uint64_t i = 0; i < items; ++i) {
    const std::string item = "top:" + std::to_string(i % 9);
    std::string expelled;
    f->Add(HashKey(item), item, uint32_t(i % 4 + 1), &expelled);
  }
  return f;
}

// Merged centroids and unmerged values both: 70 slots, 100 samples.
AnyFilter TDigestSample() {
  std::unique_ptr<TDigest> f;
  TDigest::Create(/*compression=*/10, FilterLimits{}, nullptr, &f);
  for (int i = 0; i < 100; ++i) f->Add(std::sqrt(i * 7.0));
  return f;
}

std::string Multibulk(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view arg : args) {
    out += "$" + std::to_string(arg.size()) + "\r\n";
    out.append(arg);
    out += "\r\n";
  }
  return out;
}

void RespSeeds(const fs::path& dir) {
  // Byte 0: limits in bits 0-1, split offset in the rest.
  const std::string mixed = Multibulk({"BF.ADD", "f", "it\r\nem"}) + "*0\r\n" + "PING\r\n" +
                            "*-1\r\n" + Multibulk({"ECHO", ""}) + "SET k \"a b\\n\" 'c'\n" +
                            "\r\n" + Multibulk({"BF.MEXISTS", "f", "a", "b"});
  Write(dir, "mixed", std::string(1, char(32 << 2 | 0)) + mixed);
  Write(dir, "unauthenticated", std::string(1, char(10 << 2 | 1)) +
                                    Multibulk({"AUTH", "a", "b", "c", "d", "e", "f", "g", "h",
                                               "i", "j", "k"}));
  Write(dir, "tiny-limits", std::string(1, char(40 << 2 | 2)) + Multibulk({"A", "bb"}) +
                                "INLINE with \"quoted \\x41\" args\r\n" +
                                Multibulk({"C", "0123456789abcdefXYZ"}));
  Write(dir, "protocol-error", std::string(1, char(5 << 2)) + "*2\r\n$3\r\nabc\r\n$x\r\n");
  Write(dir, "unbalanced-quotes", std::string(1, char(20 << 2)) + "ECHO \"abc\r\n");
}

void SnapshotSeeds(const fs::path& dir) {
  const AnyFilter bloom = Bloom(30, 100);
  const AnyFilter counting = Counting(40);
  const AnyFilter cuckoo = Cuckoo(12);
  const auto snapshot = [](std::vector<SnapshotRecordSource> records) {
    MemoryFileSystem fs;
    uint64_t bytes = 0;
    SnapshotMeta meta{.created_ms = 1700000000000, .log_generation = 3};
    (void)WriteSnapshot(fs, "/s", "dump.bgs", meta, records, &bytes);
    return std::string(1, '\0') + *fs.Get("/s/dump.bgs");
  };
  Write(dir, "empty", snapshot({}));
  Write(dir, "bloom", snapshot({{.name = "b", .filter = &bloom}}));
  Write(dir, "counting", snapshot({{.name = "c", .expire_at_ms = 1900000000000,
                                    .filter = &counting}}));
  Write(dir, "cuckoo", snapshot({{.name = "cf", .filter = &cuckoo}}));
  Write(dir, "all-three", snapshot({{.name = "b", .filter = &bloom},
                                    {.name = "c", .filter = &counting},
                                    {.name = "cf", .filter = &cuckoo}}));
  const AnyFilter windowed = WindowedBloom(30);
  const AnyFilter windowed_counting = WindowedCounting(30);
  const AnyFilter cms = CountMin(20);
  const AnyFilter topk = TopKList(40);
  Write(dir, "windowed", snapshot({{.name = "w", .filter = &windowed}}));
  Write(dir, "windowed-counting", snapshot({{.name = "wc", .filter = &windowed_counting}}));
  Write(dir, "count-min", snapshot({{.name = "cms", .filter = &cms}}));
  Write(dir, "top-k", snapshot({{.name = "tk", .filter = &topk}}));
  const AnyFilter tdigest = TDigestSample();
  Write(dir, "t-digest", snapshot({{.name = "td", .filter = &tdigest}}));
}

void AppendLogSeeds(const fs::path& dir) {
  const AnyFilter bloom = Bloom(10, 5);
  const AnyFilter cuckoo = Cuckoo(6);
  const AnyFilter counting = Counting(8);
  const auto log = [](uint8_t flags, const std::vector<std::string>& records) {
    MemoryFileSystem fs;
    std::unique_ptr<AppendLogWriter> writer;
    (void)AppendLogWriter::Create(&fs, "/d", "appendonly.bglog", 1, 1700000000000, &writer);
    for (const std::string& record : records) (void)writer->Flush(writer->Append(record), false);
    (void)writer->Close();
    return std::string(1, char(flags)) + *fs.Get("/d/appendonly.bglog.1");
  };
  const auto command = [](std::initializer_list<std::string_view> args) {
    std::string out;
    std::vector<std::string_view> v(args);
    EncodeCommandRecord(1700000000123, v, &out);
    return out;
  };
  const auto filter = [](std::string_view key, const AnyFilter& f, bool payload) {
    std::string out;
    EncodeFilterRecord(1700000000456, key, DescribeFilter(f), payload ? &f : nullptr, &out);
    return out;
  };
  Write(dir, "empty", log(0, {}));
  Write(dir, "commands", log(0, {command({"BF.ADD", "b", "x"}), command({"DEL", "b"}),
                                 command({"PEXPIREAT", "c", "1900000000000"})}));
  Write(dir, "filters", log(0, {filter("b", bloom, false), filter("cf", cuckoo, true),
                                filter("c", counting, true)}));
  const AnyFilter windowed = WindowedBloom(12);
  const AnyFilter windowed_counting = WindowedCounting(12);
  const AnyFilter cms = CountMin(9);
  const AnyFilter topk = TopKList(15);
  Write(dir, "filters-other-families",
        log(0, {filter("w", windowed, true), filter("wc", windowed_counting, true),
                filter("cms", cms, true), filter("tk", topk, true),
                filter("w0", windowed, false)}));
  std::string torn = log(2, {command({"CF.ADD", "cf", "y"}), filter("b", bloom, true)});
  torn.resize(torn.size() - 7);
  Write(dir, "torn-tail", torn);
}

void DumpChunkSeeds(const fs::path& dir) {
  const auto dump = [](uint8_t kind_index, const AnyFilter& filter, uint64_t max_payload) {
    std::string out(1, char(kind_index));
    for (uint64_t it = 0;;) {
      uint64_t next = 0;
      std::string chunk;
      NextDumpChunk(filter, it, &next, &chunk, max_payload);
      if (next == 0) return out;
      AppendPiece(&out, chunk);
      it = next;
    }
  };
  Write(dir, "bloom", dump(0, Bloom(30, 100), 256));
  Write(dir, "bloom-one-layer", dump(0, Bloom(100, 3), 4096));
  Write(dir, "counting", dump(1, Counting(40), 200));
  Write(dir, "cuckoo", dump(2, Cuckoo(12), 16));
  Write(dir, "cuckoo-one-chunk", dump(2, Cuckoo(3), 4096));
  // Byte 0 picks the family as dump_chunk_fuzz.cc's kKinds: 3 count-min,
  // 4 top-k, 5 windowed Bloom, 6 windowed counting Bloom.
  Write(dir, "count-min", dump(3, CountMin(20), 64));
  Write(dir, "top-k", dump(4, TopKList(40), 100));
  Write(dir, "windowed", dump(5, WindowedBloom(30), 300));
  Write(dir, "windowed-counting", dump(6, WindowedCounting(30), 300));
  // RedisBloom's CF.SCANDUMP format (bit 6): the 38-byte header, then each
  // chunk after its u64 iterator, as dump_chunk_fuzz.cc reads them.
  const auto redisbloom = [](int items, uint64_t max_chunk) {
    CuckooFilterOptions options;
    options.capacity = 16;
    options.bucket_size = 2;
    options.expansion = 2;
    options.scheme = CuckooScheme::kRedisBloom;
    std::unique_ptr<CuckooFilter> f;
    CuckooFilter::Create(options, FilterLimits{}, nullptr, &f);
    for (int i = 0; i < items; ++i) f->Add(f->Hash("seed:" + std::to_string(i)));
    std::string out(1, char(0x40 | 2));
    for (uint64_t it = 0;;) {
      uint64_t next = 0;
      std::string chunk;
      bool end = false;
      NextRedisBloomCuckooChunk(*f, it, &next, &chunk, &end, max_chunk);
      if (end) return out;
      if (it != 0) {
        std::string framed;
        ByteWriter(&framed).PutU64(next);
        chunk = framed + chunk;
      }
      AppendPiece(&out, chunk);
      it = next;
    }
  };
  Write(dir, "redisbloom-cuckoo", redisbloom(40, 4096));
  Write(dir, "redisbloom-cuckoo-small-chunks", redisbloom(20, 8));
}

// dump_payload_fuzz: byte 0 = 1 (keep the checksum as written), then a DUMP
// payload of each family that takes adds.
void DumpPayloadSeeds(const fs::path& dir) {
  const auto seed = [](const AnyFilter& filter) { return "\x01" + EncodeDumpPayload(filter); };
  Write(dir, "bloom", seed(Bloom(30, 100)));
  Write(dir, "counting", seed(Counting(40)));
  Write(dir, "cuckoo", seed(Cuckoo(12)));
  Write(dir, "windowed", seed(WindowedBloom(30)));
  Write(dir, "windowed-counting", seed(WindowedCounting(30)));
  Write(dir, "count-min", seed(CountMin(20)));
  Write(dir, "top-k", seed(TopKList(40)));
  Write(dir, "t-digest", seed(TDigestSample()));
}

// rdb_file_fuzz: byte 0 = 1 (keep the checksum as written), then the RDB
// file RedisBloom 2.4.23 saved (tests/data/redisbloom-sketches/: its five
// types, TTLs, a string, a hash and a list), read from the repository beside
// the corpus directory.
void RdbFileSeeds(const fs::path& dir, const fs::path& corpus_root) {
  const fs::path rdb = corpus_root.parent_path().parent_path() / "data" /
                       "redisbloom-sketches" / "redisbloom-all-types.rdb";
  std::ifstream in(rdb, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", rdb.c_str());
    std::exit(1);
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  Write(dir, "redisbloom-all-types", "\x01" + bytes.str());
}

// A program for commands_fuzz: template arguments by value (each value is
// looked up in command_program.h's tables).
class Program {
 public:
  Program& Command(std::string_view name, std::initializer_list<std::string_view> args) {
    uint8_t op = 0;
    while (op < kCommandCount && kCommands[op].name != name) ++op;
    if (op == kCommandCount) {
      std::fprintf(stderr, "no command %.*s\n", int(name.size()), name.data());
      std::exit(1);
    }
    used_ = 0;
    bytes_.push_back(char(op));
    const std::string_view shape = kCommands[op].shape;
    const size_t fixed = shape.size() - 2 * std::count(shape.begin(), shape.end(), '*');
    bytes_.push_back(char(args.size() - fixed));  // how often the starred letter repeats
    size_t letter = 0;
    for (std::string_view arg : args) {
      const char kind = LetterFor(shape, &letter, args.size() - fixed);
      Encode(kind, arg);
    }
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  // The template letter of the next argument.
  char LetterFor(std::string_view shape, size_t* at, size_t repeats) {
    while (*at < shape.size()) {
      const char letter = shape[*at];
      const bool starred = *at + 1 < shape.size() && shape[*at + 1] == '*';
      if (!starred) {
        ++*at;
        return letter;
      }
      if (used_ < repeats) {
        ++used_;
        return letter;
      }
      used_ = 0;
      *at += 2;
    }
    std::fprintf(stderr, "too many arguments for the template %.*s\n", int(shape.size()),
                 shape.data());
    std::exit(1);
  }
  template <size_t N>
  static uint8_t IndexOf(const char* const (&table)[N], std::string_view value) {
    for (size_t i = 0; i < N; ++i) {
      if (table[i] == value) return uint8_t(i);
    }
    std::fprintf(stderr, "no value %.*s\n", int(value.size()), value.data());
    std::exit(1);
  }
  void Encode(char kind, std::string_view value) {
    switch (kind) {
      case 'k':
        bytes_.push_back(char(IndexOf(kKeys, value)));
        return;
      case 'i':  // "iN"
        bytes_.push_back(char(std::stoi(std::string(value.substr(1)))));
        return;
      case 'n':
        bytes_.push_back(char(IndexOf(kNumbers, value)));
        return;
      case 'f':
        bytes_.push_back(char(IndexOf(kFloats, value)));
        return;
      case 'o':
        bytes_.push_back(char(IndexOf(kOptions, value)));
        return;
      case 'p': {
        for (const char* option : kOptions) {
          if (option == value) {
            bytes_.push_back(char(IndexOf(kOptions, value)));
            return;
          }
        }
        bytes_.push_back(char(128 + IndexOf(kNumbers, value)));
        return;
      }
      case 'c':  // "c<index of a recent chunk>"
        bytes_.push_back(char(std::stoi(std::string(value.substr(1)))));
        return;
      default:  // raw: length then bytes
        bytes_.push_back(char(value.size()));
        bytes_.append(value);
    }
  }

  std::string bytes_;
  size_t used_ = 0;
};

void CommandSeeds(const fs::path& dir) {
  Write(dir, "bloom", Program()
                          .Command("BF.RESERVE", {"k0", "0.01", "100"})
                          .Command("BF.ADD", {"k0", "i1"})
                          .Command("BF.MADD", {"k0", "i2", "i3", "i4"})
                          .Command("BF.EXISTS", {"k0", "i1"})
                          .Command("BF.INSERT", {"k1", "CAPACITY", "10", "ITEMS", "7", "8"})
                          .Command("BF.INFO", {"k0", "CAPACITY"})
                          .Command("BF.CARD", {"k0"})
                          .bytes());
  Write(dir, "cuckoo", Program()
                           .Command("CF.RESERVE", {"k1", "64", "BUCKETSIZE", "2"})
                           .Command("CF.ADD", {"k1", "i5"})
                           .Command("CF.ADDNX", {"k1", "i5"})
                           .Command("CF.COUNT", {"k1", "i5"})
                           .Command("CF.DEL", {"k1", "i5"})
                           .Command("CF.INSERT", {"k2", "CAPACITY", "1000", "ITEMS", "8"})
                           .Command("CF.COMPACT", {"k1"})
                           .Command("CF.INFO", {"k1"})
                           .bytes());
  Write(dir, "counting", Program()
                             .Command("CBF.RESERVE", {"k2", "0.01", "100", "COUNTERBITS", "8"})
                             .Command("CBF.MADD", {"k2", "i1", "i1", "i2"})
                             .Command("CBF.DEL", {"k2", "i1"})
                             .Command("CBF.COUNT", {"k2", "i1"})
                             .Command("CBF.MDEL", {"k2", "i2"})
                             .Command("CBF.INFO", {"k2", "ITEMS"})
                             .bytes());
  Write(dir, "scandump", Program()
                             .Command("BF.ADD", {"k0", "i9"})
                             .Command("BF.SCANDUMP", {"k0", "0"})
                             .Command("BF.SCANDUMP", {"k0", "1"})
                             .Command("BF.LOADCHUNK", {"k3", "1", "c0"})
                             .Command("BF.LOADCHUNK", {"k3", "2", "c1"})
                             .Command("BF.EXISTS", {"k3", "i9"})
                             .Command("CF.ADD", {"k1", "i2"})
                             .Command("CF.SCANDUMP", {"k1", "0"})
                             .Command("CF.SCANDUMP", {"k1", "1"})
                             .Command("CF.LOADCHUNK", {"k2", "1", "c2"})
                             .Command("CF.LOADCHUNK", {"k2", "2", "c3"})
                             .bytes());
  Write(dir, "windowed", Program()
                             .Command("BF.RESERVE", {"k0", "0.01", "100", "WINDOW", "10",
                                                     "GENERATIONS", "4"})
                             .Command("BF.ADD", {"k0", "i1"})
                             .Command("BF.MADD", {"k0", "i2", "i3"})
                             .Command(kAdvanceClock, {"3"})
                             .Command("BF.ADD", {"k0", "i4"})
                             .Command("BF.EXISTS", {"k0", "i1"})
                             .Command("BF.CARD", {"k0"})
                             .Command("BF.INFO", {"k0", "ITEMS"})
                             .Command("BF.RESERVE", {"k1", "0.01", "100", "WINDOW", "10",
                                                     "GENERATIONS", "4"})
                             .Command("BF.MERGE", {"k1", "k0"})
                             .Command("BF.SCANDUMP", {"k0", "0"})
                             .Command("BF.SCANDUMP", {"k0", "1"})
                             .Command("BF.LOADCHUNK", {"k3", "1", "c0"})
                             .Command("BF.LOADCHUNK", {"k3", "2", "c1"})
                             .Command(kAdvanceClock, {"1000000"})
                             .Command("BF.EXISTS", {"k3", "i4"})
                             .Command("CBF.RESERVE", {"k2", "0.01", "100", "WINDOW", "8",
                                                      "GENERATIONS", "2"})
                             .Command("CBF.MADD", {"k2", "i1", "i1", "i2"})
                             .Command(kAdvanceClock, {"4"})
                             .Command("CBF.INCR", {"k2", "i1"})
                             .Command("CBF.DEL", {"k2", "i1"})
                             .Command("CBF.COUNT", {"k2", "i1"})
                             .Command("CBF.CARD", {"k2"})
                             .Command("CBF.INFO", {"k2", "ITEMS"})
                             .Command(kAdvanceClock, {"9223372036854775807"})
                             .Command("CBF.ADD", {"k2", "i3"})
                             .Command("BF.ADD", {"k1", "i3"})
                             .bytes());
  Write(dir, "count-min", Program()
                              .Command("CMS.INITBYDIM", {"k0", "100", "4"})
                              .Command("CMS.INITBYPROB", {"k1", "0.01", "0.001"})
                              .Command("CMS.INITBYPROB", {"k3", "0.01", "1e-300"})
                              .Command("CMS.INCRBY", {"k0", "i1", "7"})
                              .Command("CMS.INCRBY", {"k0", "i2", "4294967296"})
                              .Command("CMS.QUERY", {"k0", "i1", "i2"})
                              .Command("CMS.INFO", {"k0"})
                              .Command("CMS.INITBYDIM", {"k2", "100", "4"})
                              .Command("CMS.MERGE", {"k2", "2", "k0", "k0"})
                              .Command("CMS.SCANDUMP", {"k0", "0"})
                              .Command("CMS.SCANDUMP", {"k0", "1"})
                              .Command("CMS.LOADCHUNK", {"k3", "1", "c0"})
                              .Command("CMS.LOADCHUNK", {"k3", "2", "c1"})
                              .Command("CMS.QUERY", {"k3", "i1"})
                              .bytes());
  Write(dir, "top-k", Program()
                          .Command("TOPK.RESERVE", {"k0", "3", "8", "4", "0.9"})
                          .Command("TOPK.ADD", {"k0", "i1", "i2", "i1", "i3"})
                          .Command("TOPK.INCRBY", {"k0", "i4", "100"})
                          .Command("TOPK.QUERY", {"k0", "i1", "i4"})
                          .Command("TOPK.COUNT", {"k0", "i1", "i4"})
                          .Command("TOPK.LIST", {"k0", "WITHCOUNT"})
                          .Command("TOPK.INFO", {"k0"})
                          .Command("TOPK.SCANDUMP", {"k0", "0"})
                          .Command("TOPK.SCANDUMP", {"k0", "1"})
                          .Command("TOPK.LOADCHUNK", {"k1", "1", "c0"})
                          .Command("TOPK.LOADCHUNK", {"k1", "2", "c1"})
                          .Command("TOPK.LIST", {"k1"})
                          .bytes());
  Write(dir, "keyspace", Program()
                             .Command("BF.ADD", {"k0", "i1"})
                             .Command("WATCH", {"k0"})
                             .Command("MULTI", {})
                             .Command("BF.ADD", {"k0", "i2"})
                             .Command("EXPIRE", {"k0", "100", "NX"})
                             .Command("PERSIST", {"k0"})
                             .Command("EXEC", {})
                             .Command("TTL", {"k0"})
                             .Command("RENAME", {"k0", "k1"})
                             .Command("SCAN", {"0", "COUNT", "10", "TYPE", "NX"})
                             .Command("KEYS", {"k*"})
                             .Command("DEL", {"k1", "k0"})
                             .Command("DBSIZE", {})
                             .bytes());
}

// Byte 0 = 1: the target recomputes the checksum, so mutations reach the
// field decoders. A PING with gossip, a MEET, an UPDATE, two messages in a
// row, and the most ranges a slot set can have.
void BusMessageSeeds(const fs::path& dir) {
  BusMessage ping;
  ping.sender_id = std::string(40, 'a');
  ping.sender_ip = "127.0.0.1";
  ping.port = 7000;
  ping.cport = 17000;
  ping.flags = kBusFlagMaster;
  ping.current_epoch = 6;
  ping.config_epoch = 2;
  for (int slot = 0; slot <= 5460; ++slot) ping.slots.set(slot);
  ping.gossip.push_back({std::string(40, 'b'), "::1", 7001, 17001, kBusFlagMaster, 0, 1700000000});
  ping.gossip.push_back({std::string(40, 'c'), "10.0.0.3", 7002, 17002,
                         kBusFlagReplica | kBusFlagPFail, 1700000001, 1700000000});
  const auto encode = [](const BusMessage& m) {
    std::string out = "\x01";
    EncodeBusMessage(m, &out);
    return out;
  };
  Write(dir, "ping", encode(ping));
  BusMessage meet = ping;
  meet.type = BusMessageType::kMeet;
  meet.sender_ip.clear();
  meet.gossip.clear();
  Write(dir, "meet", encode(meet));
  BusMessage update = ping;
  update.type = BusMessageType::kUpdate;
  update.gossip.clear();
  update.update.id = std::string(40, 'd');
  update.update.config_epoch = 9;
  update.update.slots.set(100);
  update.update.slots.set(16383);
  Write(dir, "update", encode(update));
  BusMessage pong = ping;
  pong.type = BusMessageType::kPong;
  pong.master_id = std::string(40, 'e');
  pong.flags = kBusFlagReplica;
  pong.repl_offset = 1234567;  // a replica's offset: the optional field 0x8005
  pong.fail_about = std::string(40, 'c');  // Redis's FAIL: the optional field 0x8006
  std::string two = encode(pong);
  EncodeBusMessage(meet, &two);
  Write(dir, "pong-then-meet", two);
  BusMessage striped = ping;
  striped.slots.reset();
  for (int slot = 0; slot < kBusSlotCount; slot += 2) striped.slots.set(slot);
  Write(dir, "striped-slots", encode(striped));
}

}  // namespace
}  // namespace bloomgate::fuzz

int main(int argc, char** argv) {
  using namespace bloomgate::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  RespSeeds(root / "resp_parser_fuzz");
  SnapshotSeeds(root / "snapshot_fuzz");
  AppendLogSeeds(root / "append_log_fuzz");
  DumpChunkSeeds(root / "dump_chunk_fuzz");
  DumpPayloadSeeds(root / "dump_payload_fuzz");
  RdbFileSeeds(root / "rdb_file_fuzz", root);
  CommandSeeds(root / "commands_fuzz");
  BusMessageSeeds(root / "bus_message_fuzz");
  return 0;
}
