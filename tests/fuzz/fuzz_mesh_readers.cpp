// libFuzzer target for the polygon mesh readers and the FFD JSON parsers: the first byte picks the format, the rest
// is the file. Any input must parse (and then give a sane topology and lattice) or throw parasurf::Error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf::io {
// The readers' file loader lives with the patch readers; the fuzzer parses from memory only.
std::string read_text_file(const std::string&, const std::string&, std::uint64_t) { throw Error(ErrorKind::Io, "no files"); }
}  // namespace parasurf::io

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > (1 << 16)) return 0;
  static const char* names[] = {"f.obj", "f.ply", "f.off", "f.stl", "edits.json", "lattice.json"};
  const int which = data[0] % 6;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (which < 4) {
      parasurf::MeshReadReport report;
      const auto mesh = parasurf::parse_polygon_mesh(bytes, names[which], &report);
      for (auto v : mesh.face_indices)
        if (v >= mesh.vertex_count()) __builtin_trap();
      parasurf::mesh_topology(mesh);
    } else if (which == 4) {
      parasurf::parse_lattice_edits(bytes, names[which]);
    } else {
      const auto spec = parasurf::parse_lattice_spec(bytes, names[which]);
      std::int64_t points = std::int64_t(spec.count[0]) * spec.count[1] * spec.count[2];
      if (points <= 100000) parasurf::make_lattice(spec, {0, 0, 0}, {1, 1, 1});
    }
  } catch (const parasurf::Error&) {
  }
  return 0;
}
