// parasurf bench patches: batch evaluation of whole patch models (teapot, twg2.bv, a synthetic model of many
// bicubic patches) per strategy and device, the output bandwidth against the copy bandwidth measured in the same
// run, OpenSubdiv's CPU evaluator on a patch set of the same size, and tessellation's phases.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "parasurf/error.hpp"
#include "parasurf/tessellate.hpp"
#include "peers.hpp"

#include "parasurf_commit.h"

namespace parasurf::cli {

namespace {

struct PatchBenchArgs {
  std::string models = "teapot,twg2,synthetic", resolutions = "8,16,32,64,128,256", strategies = "direct,casteljau,tables",
              precisions = "float,double", devices = "auto", threads = "", twg2, json;
  std::int64_t patches = 100000;
  double budget = 0.3;
  double max_points = 2e9;      // per configuration on the GPU
  double max_cpu_points = 3e7;  // per configuration on the CPU
  bool no_peer = false, quick = false;
};

template <class T>
BatchTiming timed(const PatchModel& m, int seg, const BatchOptions& o, double budget, bool by_total = false) {
  BatchTiming best;
  double spent = 0;
  int reps = 0;
  PatchSamples<T> keep;  // reused: later repeats write into memory already mapped, as a peer's buffers are
  while (reps < 2 || (spent < budget && reps < 50)) {
    const auto t0 = std::chrono::steady_clock::now();
    const BatchTiming t = evaluate_patch_grids<T>(m, {{seg, seg}}, o, o.copy_back ? &keep : nullptr);
    spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (reps == 0 || (by_total ? t.total_seconds < best.total_seconds : t.kernel_seconds < best.kernel_seconds)) best = t;
    ++reps;
  }
  return best;
}

// One function: the table, printed row by row as each strategy and size is measured, and its JSON beside it.
void run(const PatchBenchArgs& a) {
  nlohmann::json doc;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  doc["benchmark"] = "patches";
  doc["date"] = date;
  doc["commit"] = PARASURF_GIT_COMMIT;
  const auto gpus = cuda_devices();
  double copy_bw = 0;
  std::vector<Device> devs;
  for (const auto& d : split(a.devices == "auto" ? std::string(gpus.empty() ? "cpu" : "cpu,cuda") : a.devices))
    devs.push_back(parse_device(d));
  LinkBandwidth link;
  if (!gpus.empty()) {
    copy_bw = measure_cuda_copy_bandwidth(0);
    link = measure_cuda_link_bandwidth(0);
    doc["gpu"] = gpus[0].name;
    doc["copy_bandwidth_bytes_per_second"] = copy_bw;
    doc["link_host_to_device_bytes_per_second"] = link.host_to_device;
    doc["link_device_to_host_bytes_per_second"] = link.device_to_host;
    std::printf("gpu: %s, measured copy bandwidth %.0f GB/s (read+write), pinned link %.1f GB/s up, %.1f GB/s home\n",
                gpus[0].name.c_str(), copy_bw * 1e-9, link.host_to_device * 1e-9, link.device_to_host * 1e-9);
  }
  const int hw = cpu_thread_count(0);
  std::vector<std::int64_t> threads = a.threads.empty() ? std::vector<std::int64_t>{1, hw} : split_ints(a.threads, "--threads");
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  std::printf("cpu: %d threads; date %s; commit %s\n", hw, date, PARASURF_GIT_COMMIT);

  std::vector<std::pair<std::string, PatchModel>> models;
  for (const auto& name : split(a.models)) {
    if (name == "teapot") models.push_back({name, utah_teapot()});
    else if (name == "synthetic") models.push_back({name, synthetic_bicubic_model(a.patches, 1)});
    else if (name == "twg2") {
      std::string path = a.twg2;
      if (path.empty()) {
        const char* env = std::getenv("PARASURF_DATA");
        path = std::string(env ? env : "../shared/data") + "/bezier/twg2.bv";
      }
      std::ifstream probe(path);
      if (!probe) {
        std::printf("twg2: %s not found (give --twg2 PATH or set PARASURF_DATA); skipped\n", path.c_str());
        continue;
      }
      models.push_back({name, read_patch_model(path)});
    } else {
      models.push_back({name, read_patch_model(name)});
    }
  }
  std::printf("\n%-10s %7s %5s %-6s %-9s %3s %12s %10s %8s %8s\n", "model", "patches", "side", "prec", "strategy", "thr",
              "points", "Mpts/s", "GB/s", "of copy");
  std::vector<nlohmann::json> rows;
  for (const auto& [name, m] : models) {
    for (const auto side : split_ints(a.resolutions, "--resolutions")) {
      const int seg = int(std::max<std::int64_t>(1, side - 1));
      const double points = double(m.patches.size()) * double(side) * double(side);
      for (const auto& prec : split(a.precisions)) {
        const std::size_t bytes_per_point = 6 * (prec == "float" ? 4 : 8);
        for (Device dev : devs) {
          const bool gpu = dev == Device::Cuda;
          if (points > (gpu ? a.max_points : a.max_cpu_points)) {
            std::printf("%-10s %7zu %5lld %-6s %-9s %3s %12.3g   skipped (over --max-%spoints)\n", name.c_str(),
                        m.patches.size(), (long long)side, prec.c_str(), gpu ? "cuda" : "cpu", "", points, gpu ? "" : "cpu-");
            continue;
          }
          const bool hybrid = dev == Device::Hybrid;  // all threads and the GPU, dynamic scheme
          const std::vector<std::string> strategies = gpu ? split(a.strategies) : std::vector<std::string>{"tables"};
          const std::vector<std::int64_t> thr = gpu || hybrid ? std::vector<std::int64_t>{0} : threads;
          for (const auto& st : strategies)
            for (const auto t : thr) {
              BatchOptions o;
              o.device = dev;
              o.strategy = parse_patch_strategy(st);
              o.threads = int(t);
              o.copy_back = !gpu;
              BatchTiming r;
              try {
                r = prec == "float" ? timed<float>(m, seg, o, a.budget) : timed<double>(m, seg, o, a.budget);
              } catch (const Error& e) {
                std::printf("%-10s %7zu %5lld %-6s %-9s: %s\n", name.c_str(), m.patches.size(), (long long)side,
                            prec.c_str(), st.c_str(), e.what());
                continue;
              }
              const double pps = points / r.kernel_seconds;
              const double gbps = pps * double(bytes_per_point) * 1e-9;
              const double frac = gpu && copy_bw > 0 ? pps * double(bytes_per_point) / copy_bw : 0;
              const std::string label = gpu ? "cuda:" + st : hybrid ? "hybrid" : "cpu";
              std::printf("%-10s %7zu %5lld %-6s %-9s %3s %12.4g %10.1f %8.1f %7.1f%%", name.c_str(), m.patches.size(),
                          (long long)side, prec.c_str(), label.c_str(), gpu || hybrid ? "" : std::to_string(t).c_str(),
                          points, pps * 1e-6, gbps, frac * 100);
              double gpu_copy_seconds = 0;  // hybrid's peer: the GPU alone, samples copied to host memory
              const double link_floor = link.device_to_host > 0 ? link.seconds(0, points * double(bytes_per_point)) : 0;
              if (hybrid) {
                BatchOptions g = o;
                g.device = Device::Cuda;
                g.copy_back = true;
                const BatchTiming gt = prec == "float" ? timed<float>(m, seg, g, a.budget, true)
                                                       : timed<double>(m, seg, g, a.budget, true);
                gpu_copy_seconds = gt.total_seconds;
                std::printf("  CPU took %.1f%% of the samples; GPU alone with the copy to host %.1f Mpts/s (%.0f%% of the "
                            "link floor): hybrid %.2fx",
                            r.cpu_share * 100, points / gpu_copy_seconds * 1e-6, 100 * link_floor / gpu_copy_seconds,
                            gpu_copy_seconds / r.kernel_seconds);
              }
              std::printf("\n");
              rows.push_back({{"model", name}, {"patches", m.patches.size()}, {"points_per_side", side},
                              {"precision", prec}, {"device", device_name(dev)}, {"strategy", st},
                              {"threads", gpu ? 0 : t}, {"points", points}, {"seconds", r.kernel_seconds},
                              {"cpu_share", r.cpu_share}, {"gpu_with_copy_seconds", gpu_copy_seconds},
                              {"points_per_second", pps}, {"output_bytes_per_point", bytes_per_point},
                              {"fraction_of_copy_bandwidth", frac}, {"link_floor_seconds", link_floor},
                              {"gpu_with_copy_fraction_of_link_floor",
                               gpu_copy_seconds > 0 ? link_floor / gpu_copy_seconds : 0.0}});
            }
        }
      }
    }
  }
  doc["rows"] = rows;

  // OpenSubdiv's CPU evaluator on about as many regular bicubic patches, same points, same threads
  if (!a.no_peer) {
    std::printf("\nCPU peer: OpenSubdiv CpuEvaluator (positions + first derivatives) vs our CPU batch (positions +\n"
                "unit normals) on the same number of patches and points\n");
    const std::int64_t np = a.patches;
    const int grid = int(std::ceil(std::sqrt(double(np)))) + 2;
    const PatchModel m = synthetic_bicubic_model(np, 1);
    for (const auto t : threads) {
      const int side = 8;
      const std::int64_t points = np * side * side;
      const auto peer = bench::opensubdiv_bicubic(points, int(t), grid);
      if (!peer.available) {
        std::printf("  peer unavailable: %s\n", peer.reason.c_str());
        break;
      }
      BatchOptions o;
      o.device = Device::Cpu;
      o.threads = int(t);
      const BatchTiming ours = timed<float>(m, side - 1, o, a.budget);
      std::printf("  %lld patches, %lld points, %lld threads: %s %.1f Mpts/s, parasurf %.1f Mpts/s -> %.2fx\n",
                  (long long)np, (long long)points, (long long)t, peer.name.c_str(), points / peer.seconds * 1e-6,
                  points / ours.kernel_seconds * 1e-6, peer.seconds / ours.kernel_seconds);
      doc["peer"].push_back({{"name", peer.name}, {"patches", np}, {"points", points}, {"threads", t},
                             {"peer_seconds", peer.seconds}, {"parasurf_seconds", ours.kernel_seconds},
                             {"speedup", peer.seconds / ours.kernel_seconds}});
    }
  }

  // tessellation phases: evaluation vs welding and assembly (on CUDA: on the GPU, and on the host for comparison)
  std::printf("\ntessellation (welded mesh) phases:\n");
  for (const auto& [name, m] : models) {
    for (Device dev : devs)
      for (bool on_device : {true, false}) {
        if (on_device && dev != Device::Cuda) continue;
        TessellationOptions o;
        o.resolution = name == "synthetic" ? 16 : 64;
        o.device = dev;
        o.precision = Precision::Float;
        o.assemble_on_device = on_device;
        // Best of at least 3 per phase (the first run also pays for faulting in the mesh's fresh pages), and of up
        // to 50 while the budget lasts: sub-millisecond phases need many runs to be stable.
        TessellationReport rep;
        PatchMesh mesh;
        int runs = 0;
        const auto started = std::chrono::steady_clock::now();
        auto spent = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
        for (int run = 0; run < 3 || (run < 50 && spent() < a.budget); ++run, ++runs) {
          TessellationReport r;
          mesh = tessellate(m, o, &r);
          if (run == 0) rep = r;
          rep.seconds_plan = std::min(rep.seconds_plan, r.seconds_plan);
          rep.seconds_evaluate = std::min(rep.seconds_evaluate, r.seconds_evaluate);
          rep.seconds_assemble = std::min(rep.seconds_assemble, r.seconds_assemble);
          rep.seconds_download = std::min(rep.seconds_download, r.seconds_download);
          std::copy(std::begin(r.seconds_assembly_phases), std::end(r.seconds_assembly_phases), rep.seconds_assembly_phases);
        }
        const char* where = rep.assembled_on_device ? "gpu" : "host";
        std::printf("  %-10s %-4s res %3d: %lld points, %lld triangles; best of %d: plan %.2f ms, evaluate %.2f ms, "
                    "assemble (%s) %.2f ms = %.2fx evaluate",
                    name.c_str(), device_name(dev), o.resolution, (long long)rep.evaluated_points,
                    (long long)mesh.triangle_count(), runs, rep.seconds_plan * 1e3, rep.seconds_evaluate * 1e3, where,
                    rep.seconds_assemble * 1e3, rep.seconds_assemble / std::max(rep.seconds_evaluate, 1e-9));
        // The welded mesh's arrays as they cross the link (positions and normals in double).
        const double mesh_bytes = double(mesh.positions.size() + mesh.normals.size()) * 8 +
                                  double(mesh.triangles.size() + mesh.triangle_normals.size() +
                                         mesh.face_group.size() + mesh.face_patch.size()) * 4;
        const double download_floor =
            rep.assembled_on_device && link.device_to_host > 0 ? link.seconds(0, mesh_bytes) : 0;
        if (rep.assembled_on_device) {
          const double* ph = rep.seconds_assembly_phases;
          std::printf(", mesh download %.2f ms", rep.seconds_download * 1e3);
          if (download_floor > 0)
            std::printf(" (%.0f MB, link floor %.2f ms: %.0f%% of it)", mesh_bytes * 1e-6, download_floor * 1e3,
                        100 * download_floor / rep.seconds_download);
          std::printf("\n      gpu assembly, host time (last run): plan %.2f, upload %.2f, seams launched %.2f, triangles "
                      "launched %.2f, wait %.2f ms",
                      ph[0] * 1e3, ph[1] * 1e3, ph[2] * 1e3, ph[3] * 1e3, ph[4] * 1e3);
        }
        if (on_device && !rep.assembled_on_device) std::printf(" (device assembly declined: %s)", rep.assembly_note.c_str());
        std::printf("\n");
        doc["tessellation"].push_back({{"model", name}, {"device", device_name(dev)}, {"resolution", o.resolution},
                                       {"points", rep.evaluated_points}, {"triangles", mesh.triangle_count()},
                                       {"assembled_on", where}, {"runs", runs}, {"plan_seconds", rep.seconds_plan},
                                       {"evaluate_seconds", rep.seconds_evaluate},
                                       {"assemble_seconds", rep.seconds_assemble},
                                       {"download_seconds", rep.seconds_download},
                                       {"download_bytes", rep.assembled_on_device ? mesh_bytes : 0.0},
                                       {"download_link_floor_seconds", download_floor},
                                       {"assembly_phase_seconds", std::vector<double>(std::begin(rep.seconds_assembly_phases),
                                                                                      std::end(rep.seconds_assembly_phases))}});
      }
  }
  if (!a.json.empty()) {
    write_report(a.json, doc.dump(1) + "\n");
    std::printf("\nwrote %s\n", a.json.c_str());
  }
}

}  // namespace

void add_bench_patches(CLI::App& bench) {
  auto args = std::make_shared<PatchBenchArgs>();
  auto* cmd = bench.add_subcommand("patches", "Patch-model batch evaluation (seed 001 strategies and ours), peers, tessellation");
  cmd->add_option("--models", args->models, "teapot, twg2, synthetic, or .bv/.bpt/.json paths, comma-separated");
  cmd->add_option("--patches", args->patches, "Patches of the synthetic model");
  cmd->add_option("--resolutions", args->resolutions, "Points per patch side, comma-separated");
  cmd->add_option("--strategies", args->strategies, "GPU strategies: direct, casteljau, tables");
  cmd->add_option("--precisions", args->precisions, "float,double");
  cmd->add_option("--devices", args->devices, "auto, or cpu,cuda");
  cmd->add_option("--threads", args->threads, "CPU thread counts (default: 1 and all)");
  cmd->add_option("--twg2", args->twg2, "Path of twg2.bv (default: $PARASURF_DATA/bezier/twg2.bv)");
  cmd->add_option("--budget", args->budget, "Seconds of repeats per configuration");
  cmd->add_option("--max-points", args->max_points, "Skip GPU configurations above this many points");
  cmd->add_option("--max-cpu-points", args->max_cpu_points, "Skip CPU configurations above this many points");
  cmd->add_flag("--no-peer", args->no_peer, "Skip OpenSubdiv");
  cmd->add_flag("--quick", args->quick, "Small run: resolutions 8,64,256, 20000 synthetic patches");
  cmd->add_option("--json", args->json, "Write all figures to this JSON file");
  cmd->callback([args] {
    PatchBenchArgs a = *args;
    if (a.quick) {
      a.resolutions = "8,64,256";
      a.patches = std::min<std::int64_t>(a.patches, 20000);
      a.budget = std::min(a.budget, 0.15);
    }
    run(a);
  });
}

}  // namespace parasurf::cli
