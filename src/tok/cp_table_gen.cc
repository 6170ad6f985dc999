// Writes CodepointFlags for every code point as a table of runs (first code point, flags), one
// "{0x...,0x...}," per line, from the ICU build of unicode.cc. A build without ICU (the Arm cross build:
// tools/cross_arm_test.sh) compiles unicode.cc with that table, so that its classes are the host ICU's
// exactly, without cross-building ICU.
//   c++ -std=c++20 -Isrc src/tok/cp_table_gen.cc src/tok/unicode.cc -licuuc && ./a.out > cp_table.inc
#include <cstdint>
#include <cstdio>

#include "tok/unicode.h"

int main() {
  int prev = -1;
  for (uint32_t cp = 0; cp <= 0x110000; ++cp) {  // 0x110000: what every value past Unicode gets
    const int f = edgedecode::tok::CodepointFlags(cp);
    if (f != prev) std::printf("{0x%X, 0x%X},\n", static_cast<unsigned>(cp), static_cast<unsigned>(f));
    prev = f;
  }
  return 0;
}
