// Shared test helpers: the run's seed, the long-double reference evaluator, shared-data paths.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "parasurf/bezier.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"

namespace parasurf::test {

// Whether large results come from the process's result pool (core/scratch.hpp); under AddressSanitizer they stay
// on the heap, where overruns are caught.
inline constexpr bool kPooledResults =
#if defined(__SANITIZE_ADDRESS__)
    false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    false;
#else
    true;
#endif
#else
    true;
#endif

// Fresh per run unless PARASURF_TEST_SEED is set; printed by test_main.
inline std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    if (const char* env = std::getenv("PARASURF_TEST_SEED")) return std::uint64_t(std::strtoull(env, nullptr, 10));
    return (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  }();
  return seed;
}

// The backends every conformance test runs on: the CPU, and CUDA where a device is present.
inline std::vector<Device> devices() {
  std::vector<Device> d{Device::Cpu};
  if (cuda_available()) d.push_back(Device::Cuda);
  return d;
}

// The subdivision solver's engines every conformance test runs: the CPU, and the GPU-resident and hybrid CUDA
// engines where a device is present (the skip is announced once by test_main).
inline std::vector<Device> solver_engines() {
  std::vector<Device> d{Device::Cpu};
  if (cuda_available()) d.push_back(Device::Cuda), d.push_back(Device::Hybrid);
  return d;
}

// ../shared/data, or $PARASURF_DATA where the checkout has no shared/ beside it (the GPU machine).
inline std::string shared_data(const std::string& rel) {
  const char* env = std::getenv("PARASURF_DATA");
  const std::string path = std::string(env ? env : PARASURF_SHARED_DATA) + "/" + rel;
  return std::filesystem::exists(path) ? path : std::string();
}

// A path in the temporary directory that no other test process uses: ctest runs the tests as processes side by
// side, and two that wrote the same name read each other's files.
std::string temp_path(const std::string& name);

// High-precision reference: value and derivatives to second order, from the exact derivative nets.
struct RefJet {
  long double s[3], su[3], sv[3], suu[3], suv[3], svv[3];
};
RefJet reference_eval(const BezierSurface& s, long double u, long double v);

// Diagonal of the control points' bounding box.
double bbox_size(const BezierSurface& s);


// The message of the parasurf::Error that call() throws, or "no error".
template <class Call>
std::string error_message(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace parasurf::test
