// parasurf info: devices and build features.
#include <cstdio>
#include <vector>

#include "parasurf/bezier.hpp"
#include "parasurf/commands.hpp"
#include "parasurf/device.hpp"
#include "parasurf/ffd.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/tessellate.hpp"

namespace parasurf::cli {

void add_info(CLI::App& app) {
  struct Args {
    bool bandwidth = false;
    std::string json;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("info", "Print the devices and the build's features");
  cmd->add_flag("--bandwidth", a->bandwidth, "Also measure each GPU's device-to-device copy bandwidth");
  cmd->add_option("--json", a->json, "Write the report as JSON to this file (- for standard output)");
  cmd->callback([a] {
    const BuildFeatures f = build_features();
    nlohmann::json j = {{"build",
                         {{"cuda", f.cuda},
                          {"cuda_architectures", f.cuda_architectures},
                          {"openmp", f.openmp},
                          {"compiler", f.compiler}}},
                        {"cpu", {{"hardware_threads", hardware_threads()}}},
                        {"cuda", nlohmann::json::array()}};
    std::printf("parasurf %s\n", PARASURF_VERSION);
    std::printf("build: CUDA backend %s%s%s, OpenMP %s, compiler %s\n", f.cuda ? "yes" : "no",
                f.cuda ? " (architectures " : "", f.cuda ? (f.cuda_architectures + ")").c_str() : "",
                f.openmp ? "yes" : "no", f.compiler.c_str());
    std::printf("cpu: %d hardware threads\n", hardware_threads());
    const auto devices = cuda_devices();
    if (devices.empty()) {
      std::printf("cuda: none (%s)\n", cuda_unavailable_reason().c_str());
      j["cuda_unavailable"] = cuda_unavailable_reason();
    }
    for (const auto& d : devices) {
      std::printf(
          "cuda:%d %s, compute %d.%d, %d multiprocessors, %.1f GiB (%.1f GiB free), L2 %.0f MiB, host-native "
          "atomics %s\n",
          d.index, d.name.c_str(), d.compute_major, d.compute_minor, d.multiprocessors,
          d.total_memory_bytes / double(1ull << 30), d.free_memory_bytes / double(1ull << 30),
          d.l2_cache_bytes / double(1ull << 20), d.host_native_atomics ? "yes" : "no");
      nlohmann::json dj = {{"index", d.index},
                           {"name", d.name},
                           {"compute_capability", {d.compute_major, d.compute_minor}},
                           {"multiprocessors", d.multiprocessors},
                           {"memory_bytes", d.total_memory_bytes},
                           {"free_memory_bytes", d.free_memory_bytes},
                           {"l2_cache_bytes", d.l2_cache_bytes},
                           {"host_native_atomics", d.host_native_atomics}};
      if (a->bandwidth) {
        const double bw = measure_cuda_copy_bandwidth(d.index);
        std::printf("cuda:%d copy bandwidth %.0f GB/s (device-to-device, read+write)\n", d.index, bw * 1e-9);
        dj["copy_bandwidth_bytes_per_second"] = bw;
      }
      j["cuda"].push_back(std::move(dj));
    }
    // What auto would run a job on for a few sizes, with this process's estimates (the CPU's measured here; a fresh
    // process also starts the GPU's context, which its first GPU call pays).
    auto choices = [&](const char* title, const char* key, const char* power, auto estimate,
                       const std::vector<std::int64_t>& sizes = {64, 256, 512, 1024}) {
      std::printf("default device (auto), %s:\n", title);
      j[key] = nlohmann::json::array();
      for (std::int64_t n : sizes) {
        const AutoDeviceEstimate e = estimate(n);
        std::printf("  %4lld%s  %-4s (cpu about %.3g ms, cuda about %.3g ms)\n", (long long)n, power,
                    device_name(e.device), e.cpu_seconds * 1e3, e.cuda_seconds * 1e3);
        j[key].push_back({{"size", n},
                          {"device", device_name(e.device)},
                          {"cpu_seconds", e.cpu_seconds},
                          {"cuda_seconds", e.cuda_seconds}});
      }
    };
    if (devices.empty()) {
      std::printf("default device (auto): cpu\n");
    } else {
      choices("isosurfaces of host float32 volumes at a typical density", "auto_isosurface_float32", "^3",
              [](std::int64_t n) {
                return isosurface_auto_estimate({n, n, n}, VoxelType::Float32);
              });
      choices("surface grids with normals into host memory (float, bicubic net)", "auto_surface_float", "^2",
              [](std::int64_t n) { return surface_auto_estimate(n * n, 16, false); });
      choices("tessellated meshes into host memory (double; the Utah teapot's 32 patches, N segments a side)",
              "auto_tessellation_teapot", "",
              [](std::int64_t n) { return tessellation_auto_estimate(32 * (n + 1) * (n + 1), true); },
              {4, 16, 64, 256});
      choices("FFD updates into host memory (float, accurate, level 4: a mesh of N triangles, a surface per 2)",
              "auto_ffd_accurate", "",
              [](std::int64_t n) { return ffd_auto_estimate(FfdMethod::Accurate, 8 * n, n / 2); },
              {1000, 10000, 100000, 1000000});
    }
    if (!a->json.empty()) write_json_report(a->json, "info", "", "", std::move(j));
  });
}

}  // namespace parasurf::cli
