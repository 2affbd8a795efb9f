// libFuzzer target: the control-net parser must accept valid nets or throw parasurf::Error, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parasurf/error.hpp"
#include "parasurf/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto s = parasurf::parse_control_net(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    parasurf::validate(s);
  } catch (const parasurf::Error&) {
  }
  return 0;
}
