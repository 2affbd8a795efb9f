// parasurf info: devices and build features.
#include <cstdio>

#include "parasurf/commands.hpp"
#include "parasurf/device.hpp"

namespace parasurf::cli {

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print the devices and the build's features");
  auto bandwidth = std::make_shared<bool>(false);
  cmd->add_flag("--bandwidth", *bandwidth, "Also measure each GPU's device-to-device copy bandwidth");
  cmd->callback([bandwidth] {
    const BuildFeatures f = build_features();
    std::printf("parasurf 0.1.0\n");
    std::printf("build: CUDA backend %s%s%s, OpenMP %s, compiler %s\n", f.cuda ? "yes" : "no",
                f.cuda ? " (architectures " : "", f.cuda ? (f.cuda_architectures + ")").c_str() : "",
                f.openmp ? "yes" : "no", f.compiler.c_str());
    std::printf("cpu: %d hardware threads\n", hardware_threads());
    const auto devices = cuda_devices();
    if (devices.empty()) std::printf("cuda: none (%s)\n", cuda_unavailable_reason().c_str());
    for (const auto& d : devices) {
      std::printf("cuda:%d %s, compute %d.%d, %d multiprocessors, %.1f GiB (%.1f GiB free), L2 %.0f MiB, host-native "
                  "atomics %s\n",
                  d.index, d.name.c_str(), d.compute_major, d.compute_minor, d.multiprocessors,
                  d.total_memory_bytes / double(1ull << 30), d.free_memory_bytes / double(1ull << 30),
                  d.l2_cache_bytes / double(1ull << 20), d.host_native_atomics ? "yes" : "no");
      if (*bandwidth)
        std::printf("cuda:%d copy bandwidth %.0f GB/s (device-to-device, read+write)\n", d.index,
                    measure_cuda_copy_bandwidth(d.index) * 1e-9);
    }
    std::printf("default device: %s\n", devices.empty() ? "cpu" : "cuda");
  });
}

}  // namespace parasurf::cli
