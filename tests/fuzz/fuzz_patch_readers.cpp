// libFuzzer target for the patch-file readers: the first byte picks BezierView, .bpt or B-spline JSON.
// Any input must either parse into a model that validates, or throw parasurf::Error; nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parasurf/error.hpp"
#include "parasurf/patches.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > (1 << 16)) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    parasurf::PatchModel m;
    switch (data[0] % 3) {
      case 0: m = parasurf::parse_bezierview(text, "fuzz.bv"); break;
      case 1: m = parasurf::parse_bpt(text, "fuzz.bpt"); break;
      default: m = parasurf::parse_bspline_json(text, "fuzz.json"); break;
    }
    parasurf::validate(m);
  } catch (const parasurf::Error&) {
  }
  return 0;
}
