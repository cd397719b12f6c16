// What the Bloom families share. Arguments: BF.RESERVE / BF.INSERT and their
// counting-filter twins CBF.RESERVE / CBF.INSERT take the same options (the
// counting ones add COUNTERBITS), parsed here with RedisBloom's error texts
// but whole-keyword matching.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <vector>

#include "config/runtime_config.h"
#include "filters/layer_chain.h"
#include "filters/scalable_bloom_filter.h"
#include "server/commands/arg_parser.h"
#include "server/resp/reply_builder.h"

namespace bloomgate {

struct BloomParams {
  double error_rate = 0.01;
  uint64_t capacity = 100;
  uint32_t expansion = 2;    // 0 = non-scaling
  uint32_t counter_bits = 4; // counting filters only
  // WINDOW seconds [GENERATIONS n] (filters/windowed_bloom_filter.h):
  // window_ms 0 = not windowed.
  uint64_t window_ms = 0;
  uint32_t generations = 4;  // kDefaultWindowGenerations
  // SEED seed: the item hash's seed, chosen by the client so that filters
  // meant to be merged (BF.MERGE, CBF.MERGE) hash alike; unset: a fresh
  // secret one (filters/hash_seed.h).
  std::optional<uint64_t> seed;
  // TIGHTENING r (BF.INSERT, valkey-bloom's): layer 0's rate is error_rate x
  // r when scaling, each later layer's the one before's x r.
  double tightening = kErrorTighteningRatio;
};

// bf-error-rate, bf-initial-size, bf-expansion-factor, cbf-counter-bits.
BloomParams DefaultBloomParams(const RuntimeConfig& config);

// How an adding command treats a missing key.
struct CreateRule {
  bool create = true;  // false: NOCREATE, a missing key is "ERR not found"
  // Given with the command; anything unset comes from the config defaults,
  // which are read only when a filter is actually created.
  std::optional<double> error_rate;
  std::optional<uint64_t> capacity;
  std::optional<uint32_t> expansion;
  std::optional<uint32_t> counter_bits;
  std::optional<uint64_t> window_ms;
  std::optional<uint32_t> generations;
  std::optional<uint64_t> seed;
  std::optional<double> tightening;
  // VALIDATESCALETO n (valkey-bloom's): refuse the command unless a filter
  // of these parameters could grow to hold n items within its limits.
  std::optional<uint64_t> validate_scale_to;

  BloomParams Resolve(const RuntimeConfig& config) const;
};

// `RESERVE key error_rate capacity [EXPANSION n] [NONSCALING]
// [COUNTERBITS 4|8] [WINDOW seconds [GENERATIONS n]] [SEED seed]`: parses from the error rate on into *params (which
// holds the defaults); COUNTERBITS only when `counting` (WINDOW for both families).
void ParseReserveArgs(ArgParser& parser, bool counting, BloomParams* params);

// `INSERT key [CAPACITY c] [ERROR e] [EXPANSION n] [NOCREATE] [NONSCALING]
// [COUNTERBITS 4|8] [WINDOW seconds [GENERATIONS n]] [SEED seed]
// [TIGHTENING r] [VALIDATESCALETO n] ITEMS item ...`: parses the options;
// on success the parser stands at the first item (at least one is
// required). COUNTERBITS only when `counting`, TIGHTENING and
// VALIDATESCALETO only when not (valkey-bloom's, BF.INSERT alone).
void ParseInsertArgs(ArgParser& parser, std::string_view command_name, bool counting,
                     CreateRule* rule);

// The reply of a multi-item add: one boolean per item added, then the error
// that stopped it, if any (how RedisBloom truncates BF.MADD on a full
// non-scaling filter).
void ReplyBoolsThenError(ReplyBuilder& reply, const std::vector<bool>& results,
                         std::optional<std::string_view> error);

// One layer's line of BF.DEBUG, in RedisBloom's format: "bytes:... bits:...
// hashes:... hashwidth:64 capacity:... size:... ratio:...".
std::string BloomDebugLine(const BloomLayerInfo& layer);

}  // namespace bloomgate
