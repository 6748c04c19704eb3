// Stimulus driver for rtl/counter.v (check asset: the agent may not change it).
// Drives a fixed pseudo-random enable pattern and writes what the design does, one line a cycle,
// to the file named by its first argument. It judges nothing: it runs beside the agent's design
// (in a run stage), so anything it decided would be the design's to forge. The judge is
// checks/compare_trace.py, in a compare stage that reads this trace as data.
#include <cstdint>
#include <cstdio>
#include <memory>

#include "Vcounter.h"
#include "verilated.h"

namespace {
constexpr int kCycles = 500;
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: tb_counter TRACE_FILE\n");
    return 2;
  }
  std::FILE* trace = std::fopen(argv[1], "w");
  if (trace == nullptr) {
    std::perror(argv[1]);
    return 2;
  }
  auto context = std::make_unique<VerilatedContext>();
  auto dut = std::make_unique<Vcounter>(context.get());
  uint32_t lfsr = 0xACE1u;
  int highest = 0;
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
    std::fprintf(trace, "%d %d %d %d %d\n", cycle, rst ? 1 : 0, en ? 1 : 0, dut->count, dut->wrap);
    if (dut->count > highest) highest = dut->count;
    wraps += dut->wrap ? 1 : 0;
  }
  dut->final();
  std::fclose(trace);
  // For the person (or agent) debugging: what the design did, not whether it is right.
  std::printf("wrote %d cycles to %s; count reached at most %d; wrap high in %d cycles\n", kCycles, argv[1],
              highest, wraps);
  return 0;
}
