// libFuzzer target for the FFD command's JSON inputs: the first byte picks the lattice layout (--lattice-file) or
// the edits (--edits); the edits are applied to a small lattice, direct-manipulation targets included. Any input
// must parse and apply or throw parasurf::Error.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "io/text_cursor.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"

// The file readers are not fuzzed here (the texts come from the fuzzer): their reader is not linked in.
std::string parasurf::io::read_text_file(const std::string& path, const std::string&, std::uint64_t) {
  throw parasurf::Error(parasurf::ErrorKind::Io, path + ": files are not read by this fuzz target");
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > (1 << 16)) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (data[0] % 2 == 0) {
      parasurf::LatticeSpec spec = parasurf::parse_lattice_spec(text, "lattice.json");
      if (std::int64_t(spec.count[0]) * spec.count[1] * spec.count[2] > 4096) return 0;  // keep each run short
      parasurf::make_lattice(spec, {0, 0, 0}, {1, 1, 1});
    } else {
      const parasurf::LatticeEdits edits = parasurf::parse_lattice_edits(text, "edits.json");
      if (edits.targets.size() > 64) return 0;
      parasurf::LatticeSpec spec;
      spec.count = {5, 5, 5};
      parasurf::Lattice lattice = parasurf::make_lattice(spec, {0, 0, 0}, {1, 1, 1});
      parasurf::apply_lattice_edits(lattice, edits);
    }
  } catch (const parasurf::Error&) {
  }
  return 0;
}
