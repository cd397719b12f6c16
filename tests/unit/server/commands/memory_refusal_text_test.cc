// Memory refusals say which limit refused and by how much, after the
// RedisBloom text each family has always sent (clients match the prefix):
// for every family, under max-filter-memory and under maxmemory, at
// creation and (scalable families) at growth.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate::testing {
namespace {

constexpr uint64_t kMemoryLimit = 64 * 1024;

std::string QuotedText(std::string_view text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(std::string(text), special, R"(\$&)");
}

// A server under one of the two limits at kMemoryLimit bytes.
std::unique_ptr<ServerContext> Limited(bool filter_cap) {
  ServerConfig config;
  if (filter_cap) {
    config.max_filter_memory = kMemoryLimit;
  } else {
    config.maxmemory = kMemoryLimit;
  }
  return MakeServer(config);
}

// The reply is `prefix`, then the figures of the limit that refused:
// "needs N bytes, max-filter-memory is 65536" or "needs N bytes, maxmemory has
// F bytes free of 65536", N past what the limit leaves.
void ExpectRefusal(const std::string& reply, std::string_view prefix, bool filter_cap,
                   bool growth = false) {
  const std::string needs = growth ? ": growing needs (\\d+) " : ": needs (\\d+) ";
  const std::string pattern =
      filter_cap ? "-" + QuotedText(prefix) + needs + (growth ? "bytes in all" : "bytes") +
                       ", max-filter-memory is 65536\r\n"
                 : "-" + QuotedText(prefix) + needs + (growth ? "more bytes" : "bytes") +
                       ", maxmemory has (\\d+) bytes free of 65536\r\n";
  std::smatch match;
  ASSERT_TRUE(std::regex_match(reply, match, std::regex(pattern))) << reply;
  const uint64_t needed = std::stoull(match[1].str());
  if (filter_cap) {
    EXPECT_GT(needed, kMemoryLimit) << reply;
  } else {
    EXPECT_GT(needed, std::stoull(match[2].str())) << reply;
  }
}

struct Creation {
  const char* name;
  std::vector<std::string> command;
  std::string_view prefix;
};

std::vector<Creation> Creations() {
  return {
      {"BF", {"BF.RESERVE", "big", "0.01", "1000000"}, errors::kInsufficientMemory},
      {"BF.INSERT", {"BF.INSERT", "big", "CAPACITY", "1000000", "ITEMS", "a"},
       errors::kInsufficientMemory},
      {"CBF", {"CBF.RESERVE", "big", "0.01", "1000000"}, errors::kInsufficientMemory},
      {"CF", {"CF.RESERVE", "big", "1000000"}, errors::kInsufficientMemory},
      {"CMS", {"CMS.INITBYDIM", "big", "100000", "10"}, errors::kCmsInsufficientMemory},
      {"TOPK", {"TOPK.RESERVE", "big", "10", "100000", "10", "0.9"},
       errors::kTopKInsufficientMemory},
      {"windowed BF", {"BF.RESERVE", "big", "0.01", "1000000", "WINDOW", "60"},
       errors::kInsufficientMemory},
      {"windowed CBF", {"CBF.RESERVE", "big", "0.01", "1000000", "WINDOW", "60"},
       errors::kInsufficientMemory},
  };
}

TEST(MemoryRefusalText, EveryFamilysCreationNamesMaxFilterMemoryAndItsFigures) {
  for (const Creation& c : Creations()) {
    SCOPED_TRACE(c.name);
    auto server = Limited(/*filter_cap=*/true);
    Session s(server.get());
    ExpectRefusal(s.Run(c.command), c.prefix, /*filter_cap=*/true);
    EXPECT_EQ(s.Run({"DBSIZE"}), Int(0));
    EXPECT_EQ(server->budget.used(), 0u);
  }
}

TEST(MemoryRefusalText, EveryFamilysCreationNamesMaxmemoryAndWhatIsFree) {
  for (const Creation& c : Creations()) {
    SCOPED_TRACE(c.name);
    auto server = Limited(/*filter_cap=*/false);
    Session s(server.get());
    ExpectRefusal(s.Run(c.command), c.prefix, /*filter_cap=*/false);
    EXPECT_EQ(s.Run({"DBSIZE"}), Int(0));
  }
}

// The reply of the first add (in batches of 500 items) that a limit stopped:
// the error element at the end of BF.MADD's / CBF.MADD's / CF.INSERT's array.
std::string FirstRefusedAdd(Session& s, const std::string& command, const std::string& key) {
  for (int batch = 0; batch < 200; ++batch) {
    Args args{command, key};
    if (command == "CF.INSERT") args.push_back("ITEMS");
    for (int i = 0; i < 500; ++i) {
      args.push_back("item:" + std::to_string(batch) + ":" + std::to_string(i));
    }
    const std::string reply = s.Run(args);
    const size_t error = reply.find("\r\n-");
    if (reply.starts_with("-")) return reply;
    if (error != std::string::npos) return reply.substr(error + 2);
  }
  return "(never refused)";
}

struct Growth {
  const char* name;
  std::vector<std::string> create;
  std::string add;
  // The family's growth texts: under max-filter-memory, under maxmemory.
  std::string_view cap_prefix, budget_prefix;
};

std::vector<Growth> Growths() {
  return {
      {"BF", {"BF.RESERVE", "g", "0.01", "1000", "EXPANSION", "4"}, "BF.MADD",
       errors::kProblemInserting, errors::kOom},
      {"CBF", {"CBF.RESERVE", "g", "0.01", "1000", "EXPANSION", "4"}, "CBF.MADD",
       errors::kProblemInserting, errors::kOom},
      {"CF", {"CF.RESERVE", "g", "1024", "EXPANSION", "4"}, "CF.INSERT",
       errors::kCfInsufficientMemory, errors::kCfInsufficientMemory},
      {"windowed BF", {"BF.RESERVE", "g", "0.01", "1000", "EXPANSION", "4", "WINDOW", "3600"},
       "BF.MADD", errors::kProblemInserting, errors::kOom},
      {"windowed CBF",
       {"CBF.RESERVE", "g", "0.01", "1000", "EXPANSION", "4", "WINDOW", "3600"}, "CBF.MADD",
       errors::kProblemInserting, errors::kOom},
  };
}

TEST(MemoryRefusalText, AScalableFilterThatCannotGrowSaysWhichLimitAndItsFigures) {
  for (const Growth& g : Growths()) {
    for (bool filter_cap : {true, false}) {
      SCOPED_TRACE(std::string(g.name) + (filter_cap ? ", max-filter-memory" : ", maxmemory"));
      auto server = Limited(filter_cap);
      Session s(server.get());
      ASSERT_EQ(s.Run(g.create), kOk);
      ExpectRefusal(FirstRefusedAdd(s, g.add, "g"), filter_cap ? g.cap_prefix : g.budget_prefix,
                    filter_cap, /*growth=*/true);
    }
  }
}

// The text itself, from its values: the cases no command above reaches.
TEST(MemoryRefusalText, ASizeNoFilterCanHaveAndAFailedAllocationAreSaidSo) {
  using Limit = MemoryRefusal::Limit;
  EXPECT_EQ(errors::MemoryRefused(errors::kInsufficientMemory,
                                  {Limit::kFilterCap, UINT64_MAX, 4ull << 30, 0}, false),
            "ERR Insufficient memory to create filter: needs more than 2^64 bytes, more than "
            "any filter can have");
  EXPECT_EQ(errors::MemoryRefused(errors::kInsufficientMemory,
                                  {Limit::kAllocation, 4096, 0, 0}, false),
            "ERR Insufficient memory to create filter: needs 4096 bytes, which could not be "
            "allocated");
  EXPECT_EQ(errors::MemoryRefused(errors::kInsufficientMemory, {}, false),
            errors::kInsufficientMemory);
}

}  // namespace
}  // namespace bloomgate::testing
