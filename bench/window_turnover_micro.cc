// In-process timing of a windowed counting filter's turnover (issue 13):
// one Add per period boundary on a ~100 MB filter (5 generations of 20 MB),
// then 20,000 adds into the fresh generation. No server, no client: what
// the adding thread itself spends. No deferred freer is installed, so from
// the 5th turnover on the dropped generation is freed inline here (the
// server hands it to its LazyFreer instead).
//
// Build and run from the repository root, after bench/../build:
//   g++ -O2 -std=c++20 -I. bench/window_turnover_micro.cc \
//       build/filters/libbloomgate_filters.a -lxxhash -lpthread -o /tmp/turnover_micro
//   /tmp/turnover_micro
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "filters/windowed_counting_bloom_filter.h"

using namespace bloomgate;

int main() {
  WindowedCountingBloomOptions o;
  o.capacity = 8009213;  // 20 MB per generation at 4-bit counters (bench/window_turnover_bench.py)
  o.window_ms = 4000;
  o.generations = 4;
  o.hash_seed = 1;
  std::unique_ptr<WindowedCountingBloomFilter> f;
  auto us = [](auto a, auto b) { return std::chrono::duration<double, std::micro>(b - a).count(); };
  const auto t0 = std::chrono::steady_clock::now();
  if (WindowedCountingBloomFilter::Create(o, 0, FilterLimits{}, nullptr, &f) != FilterStatus::kOk) {
    return 1;
  }
  std::printf("create %.0f us, %llu bytes\n", us(t0, std::chrono::steady_clock::now()),
              static_cast<unsigned long long>(f->memory_bytes()));
  for (int g = 1; g <= 10; ++g) {
    const int64_t now = g * 1000;
    bool was_new = false;
    uint64_t count = 0, generation = 0;
    const auto a = std::chrono::steady_clock::now();
    (void)f->Add(f->Hash("x" + std::to_string(g)), now, &was_new, &count, &generation);
    const auto b = std::chrono::steady_clock::now();
    double worst = 0;
    for (int i = 0; i < 20000; ++i) {
      const auto x = std::chrono::steady_clock::now();
      (void)f->Add(f->Hash("i" + std::to_string(g * 100000 + i)), now + 1, &was_new, &count,
                   &generation);
      worst = std::max(worst, us(x, std::chrono::steady_clock::now()));
    }
    std::printf("turnover to %d: %.0f us; next 20000 adds worst %.0f us\n", g, us(a, b), worst);
  }
  return 0;
}
