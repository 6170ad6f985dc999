// Checksum lists (`doctor data` reads SHA256SUMS the way `sha256sum -c` does) and side files
// (MODEL.gguf.sha256 for `doctor env --model`): doctor::ParseSha256Sums and ReadSha256Sidecar. Also the
// writer against the reader: every entry written back with Sha256SumLine must read back the same.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "doctor/hash.h"
#include "fuzz/fuzz_util.h"

using namespace edgedecode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemFile file("model.gguf.sha256");
  const doctor::ChecksumList list = doctor::ParseSha256Sums(fuzz::AsText(data, size));
  for (const doctor::ChecksumEntry& e : list.entries) {
    const doctor::ChecksumList again = doctor::ParseSha256Sums(doctor::Sha256SumLine(e.hex, e.path));
    if (again.entries.size() != 1 || again.entries[0].path != e.path || again.entries[0].hex != e.hex) std::abort();
  }
  (void)doctor::ReadSha256Sidecar(file.Write(data, size), "model.gguf");
  return 0;
}
