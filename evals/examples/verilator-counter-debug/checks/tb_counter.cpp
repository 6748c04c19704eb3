// Testbench for rtl/counter.v (check asset: the agent may not change it).
// Drives a fixed pseudo-random enable pattern and compares `count` and `wrap` with a reference
// model cycle by cycle. Exit 0 only if every cycle matches.
#include <cstdint>
#include <cstdio>
#include <memory>

#include "Vcounter.h"
#include "verilated.h"

namespace {
constexpr int kModulus = 10;
constexpr int kCycles = 500;

struct Reference {
  int count = 0;
  bool wrap = false;
  void step(bool rst, bool en) {
    if (rst) {
      count = 0;
      wrap = false;
    } else if (en) {
      wrap = (count == kModulus - 1);
      count = wrap ? 0 : count + 1;
    } else {
      wrap = false;
    }
  }
};
}  // namespace

int main(int argc, char** argv) {
  auto context = std::make_unique<VerilatedContext>();
  context->commandArgs(argc, argv);
  auto dut = std::make_unique<Vcounter>(context.get());
  Reference ref;
  uint32_t lfsr = 0xACE1u;
  int errors = 0;
  int wraps = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    lfsr = (lfsr >> 1) ^ (-(lfsr & 1u) & 0xB400u);
    const bool rst = cycle < 2 || cycle == 250;
    const bool en = (lfsr & 3u) != 0;  // enabled about 3 cycles in 4
    dut->rst = rst;
    dut->en = en;
    dut->clk = 0;
    dut->eval();
    dut->clk = 1;
    dut->eval();
    ref.step(rst, en);
    wraps += ref.wrap ? 1 : 0;
    if (dut->count != ref.count || static_cast<bool>(dut->wrap) != ref.wrap) {
      if (errors < 10) {
        std::printf("cycle %d: count=%d wrap=%d, expected count=%d wrap=%d\n", cycle, dut->count, dut->wrap,
                    ref.count, ref.wrap);
      }
      ++errors;
    }
  }
  dut->final();
  if (wraps == 0) {
    std::printf("FAIL: the reference never wrapped; the stimulus is broken\n");
    return 2;
  }
  if (errors != 0) {
    std::printf("FAIL: %d mismatching cycles out of %d\n", errors, kCycles);
    return 1;
  }
  std::printf("PASS: %d cycles, %d wraps\n", kCycles, wraps);
  return 0;
}
