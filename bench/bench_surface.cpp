// parasurf bench surface: the experiments of Palomar et al. (nets x resolutions x precisions x methods x
// threads, CPU and GPU) and more: GPU output bandwidth against the copy bandwidth measured in the same run,
// OpenSubdiv's CPU evaluator as the CPU peer, and the heterogeneous schemes against GPU-only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "parasurf/bezier.hpp"
#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "bench_util.hpp"
#include "peers.hpp"

#include "parasurf_commit.h"

namespace parasurf::cli {

namespace {

struct BenchArgs {
  std::string nets = "4,8,12,16,32", resolutions = "256,512,1000,2000,4096", precisions = "float,double",
              methods = "brute,matrix,mle,casteljau,factored", devices = "auto", threads = "", json;
  double budget = 0.5;   // seconds of repeats per configuration
  bool quick = false, no_peer = false, hybrid = true;
};

struct Row {
  std::string device, method, precision, scheme;
  int net = 0, threads = 0;
  bool tensor_cores = false;  // GPU stage 2 on tensor cores (float factored grids)
  bool rows_folded = false;   // GPU rows u and 1 - u in one contraction (factored whole grids)
  std::int64_t resolution = 0;
  double seconds = 0, points_per_s = 0, bytes = 0, gbps = 0, copy_fraction = 0, cpu_share = 0;
  double link_floor = 0;  // results in host memory: their bytes over the measured pinned device-to-host rate
};

template <class T>
Row measure(const BezierSurface& s, std::int64_t res, Method method, Device device, int threads, double budget,
            double copy_bw, const EvalOptions& extra = {}) {
  EvalOptions opt = extra;
  opt.method = method;
  opt.device = device;
  opt.threads = threads;
  EvalRequest req;
  req.normals = true;
  SurfaceEvaluator<T> ev(opt);
  const GridSpec grid{res, res};
  auto samples = allocate_samples<T>(grid.count(), req);
  auto spans = spans_of(samples);
  auto once = [&] {
    ev.evaluate_grid_into(s, grid, req, spans);
    const EvalReport& r = ev.last_report();
    // GPU kernel-only runs are timed by events; everything else by wall clock
    return (device == Device::Cuda && opt.skip_copy_back) ? r.seconds_kernel : r.seconds_total;
  };
  const double first = once();  // warm-up: tables, device buffers, module load
  const int reps = int(std::clamp(budget / std::max(first, 1e-6), 3.0, 50.0));
  std::vector<double> t;
  double share = 0;
  for (int r = 0; r < (first > 5 * budget ? 1 : reps); ++r) {
    t.push_back(once());
    share += ev.last_report().cpu_share_used;
  }
  std::sort(t.begin(), t.end());
  Row row;
  row.seconds = t[t.size() / 2];
  row.points_per_s = double(grid.count()) / row.seconds;
  row.bytes = double(sample_bytes(grid.count(), req, sizeof(T)));
  row.gbps = row.bytes / row.seconds * 1e-9;
  row.copy_fraction = copy_bw > 0 ? row.bytes / row.seconds / copy_bw : 0;
  row.cpu_share = share / double(t.size());
  row.tensor_cores = ev.last_report().gpu_tensor_cores;
  row.rows_folded = ev.last_report().gpu_rows_folded;
  row.resolution = res;
  row.threads = threads;
  row.method = method_name(method);
  row.device = device_name(device);
  row.precision = sizeof(T) == 4 ? "float" : "double";
  return row;
}

void print_row(const Row& r) {
  std::printf("%-7s %-9s %-6s %-13s net %2dx%-2d res %5lld thr %3d  %10.3f ms  %9.1f Mpt/s  %7.1f GB/s", r.device.c_str(),
              r.method.c_str(), r.precision.c_str(), r.scheme.c_str(), r.net, r.net, (long long)r.resolution,
              r.threads, r.seconds * 1e3, r.points_per_s * 1e-6, r.gbps);
  if (r.copy_fraction > 0) std::printf("  %5.1f%% of copy bw", 100 * r.copy_fraction);
  if (r.link_floor > 0) std::printf("  link floor %.3f ms: %5.1f%% of it", r.link_floor * 1e3, 100 * r.link_floor / r.seconds);
  if (r.scheme.rfind("hybrid", 0) == 0) std::printf("  cpu share %.3f", r.cpu_share);
  if (r.tensor_cores) std::printf("  tensor cores");
  if (r.rows_folded) std::printf("  rows folded");
  std::printf("\n");
  std::fflush(stdout);
}

nlohmann::json to_json(const Row& r) {
  return {{"device", r.device},       {"method", r.method},     {"precision", r.precision},
          {"scheme", r.scheme},       {"net", r.net},           {"resolution", r.resolution},
          {"threads", r.threads},     {"seconds", r.seconds},   {"points_per_second", r.points_per_s},
          {"output_bytes", r.bytes},  {"gb_per_second", r.gbps}, {"fraction_of_copy_bandwidth", r.copy_fraction},
          {"cpu_share", r.cpu_share}, {"tensor_cores", r.tensor_cores}, {"rows_folded", r.rows_folded},
          {"link_floor_seconds", r.link_floor},
          {"fraction_of_link_floor", r.link_floor > 0 ? r.link_floor / r.seconds : 0.0}};
}

void run_bench(const BenchArgs& a) {
  nlohmann::json doc;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  doc["benchmark"] = "surface";
  doc["date"] = date;
  doc["commit"] = PARASURF_GIT_COMMIT;
  doc["cpu_threads"] = hardware_threads();
  const auto gpus = cuda_devices();
  double copy_bw = 0;
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
  } else {
    std::printf("gpu: none (%s); CPU rows only\n", cuda_unavailable_reason().c_str());
  }
  std::printf("cpu: %d threads; date %s; commit %s\n", hardware_threads(), date, PARASURF_GIT_COMMIT);

  std::vector<std::string> devices = split(a.devices);
  if (devices.size() == 1 && devices[0] == "auto") {
    devices = {"cpu"};
    if (!gpus.empty()) devices.push_back("cuda");
  }
  std::vector<std::int64_t> thread_list = a.threads.empty() ? std::vector<std::int64_t>{1, hardware_threads()}
                                                            : split_ints(a.threads, "--threads");
  thread_list.erase(std::unique(thread_list.begin(), thread_list.end()), thread_list.end());
  const auto nets = split_ints(a.nets, "--nets");
  const auto resolutions = split_ints(a.resolutions, "--resolutions");
  std::vector<Row> rows;
  auto add = [&](Row r, const std::string& scheme, int net) {
    r.scheme = scheme;
    r.net = net;
    print_row(r);
    rows.push_back(r);
  };

  std::printf("\n== evaluation: positions + unit normals (outputs written: 6 scalars + 1 flag byte per point)\n");
  for (const auto& dev_name : devices) {
    const Device dev = parse_device(dev_name);
    for (const auto& prec : split(a.precisions))
      for (auto net : nets)
        for (auto res : resolutions)
          for (const auto& mname : split(a.methods)) {
            const Method method = parse_method(mname);
            const BezierSurface s = make_random_surface(int(net - 1), int(net - 1), 1234);
            // the per-point baselines are O(mn) or worse per point: keep their large cases short
            const bool slow = method != Method::Factored && method != Method::Mle;
            if (slow && dev == Device::Cpu && res * res * net * net > 4096ll * 4096 * 16) continue;
            const std::vector<std::int64_t> thr = dev == Device::Cpu ? thread_list : std::vector<std::int64_t>{0};
            for (auto t : thr) {
              EvalOptions extra;
              extra.skip_copy_back = dev == Device::Cuda;
              Row r = prec == "double" ? measure<double>(s, res, method, dev, int(t), a.budget, copy_bw, extra)
                                       : measure<float>(s, res, method, dev, int(t), a.budget, copy_bw, extra);
              if (dev == Device::Cpu) r.copy_fraction = 0;
              add(r, dev == Device::Cuda ? "kernel" : "cpu", int(net));
              // Factored grids: the unfolded kernel, and for float the tensor-core path, beside the default.
              if (dev == Device::Cuda && method == Method::Factored) {
                EvalOptions plain = extra;
                plain.gpu_fold_rows = false;
                add(prec == "double" ? measure<double>(s, res, method, dev, int(t), a.budget, copy_bw, plain)
                                     : measure<float>(s, res, method, dev, int(t), a.budget, copy_bw, plain),
                    "kernel-unfolded", int(net));
              }
              if (dev == Device::Cuda && method == Method::Factored && prec == "float") {
                extra.gpu_tensor_cores = true;
                Row tc = measure<float>(s, res, method, dev, int(t), a.budget, copy_bw, extra);
                if (tc.tensor_cores) add(tc, "kernel-tc", int(net));
              }
            }
          }
  }

  if (!a.no_peer) {
    std::printf("\n== CPU peer: bicubic patches, positions + first derivatives, %d and 1 threads\n", hardware_threads());
    for (int t : {1, hardware_threads()}) {
      const std::int64_t res = 1000;
      const auto peer = bench::opensubdiv_bicubic(res * res, t);
      EvalOptions opt;
      opt.method = Method::Factored;
      opt.device = Device::Cpu;
      opt.threads = t;
      EvalRequest req;
      req.first_derivatives = true;
      const BezierSurface s = make_random_surface(3, 3, 99);
      SurfaceEvaluator<float> ev(opt);
      auto samples = allocate_samples<float>(res * res, req);
      auto spans = spans_of(samples);
      ev.evaluate_grid_into(s, {res, res}, req, spans);
      std::vector<double> tt;
      for (int r = 0; r < 7; ++r) {
        ev.evaluate_grid_into(s, {res, res}, req, spans);
        tt.push_back(ev.last_report().seconds_total);
      }
      std::sort(tt.begin(), tt.end());
      const double ours = double(res * res) / tt[tt.size() / 2];
      nlohmann::json pj = {{"threads", t}, {"ours_points_per_second", ours}, {"peer", peer.name}};
      if (peer.available) {
        const double theirs = double(peer.points) / peer.seconds;
        std::printf("threads %2d: parasurf %.1f Mpt/s, %s %.1f Mpt/s, ratio %.2fx\n", t, ours * 1e-6,
                    peer.name.c_str(), theirs * 1e-6, ours / theirs);
        pj["peer_points_per_second"] = theirs;
        pj["ratio"] = ours / theirs;
      } else {
        std::printf("threads %2d: parasurf %.1f Mpt/s; peer %s\n", t, ours * 1e-6, peer.reason.c_str());
        pj["peer_missing"] = peer.reason;
      }
      doc["peer"].push_back(pj);
    }
  }

  if (!gpus.empty() && a.hybrid) {
    std::printf("\n== heterogeneous CPU+GPU, end to end (results in host memory), positions + normals\n");
    for (const auto& prec : split(a.precisions))
      for (auto net : std::vector<int>{4, 16})
        for (std::int64_t res : {2000ll, 4096ll}) {
          const BezierSurface s = make_random_surface(net - 1, net - 1, 1234);
          auto go = [&](Device dev, const EvalOptions& extra, const std::string& scheme) {
            Row r = prec == "double"
                        ? measure<double>(s, res, Method::Factored, dev, 0, a.budget, 0, extra)
                        : measure<float>(s, res, Method::Factored, dev, 0, a.budget, 0, extra);
            r.link_floor = link.seconds(0, r.bytes);
            add(r, scheme, net);
            return r;
          };
          const Row gpu_only = go(Device::Cuda, {}, "gpu+copy");
          EvalOptions st;
          st.hybrid_scheme = HybridScheme::Static;
          const Row stat = go(Device::Hybrid, st, "hybrid-static");
          EvalOptions dy;
          dy.hybrid_scheme = HybridScheme::Dynamic;
          const Row dyn = go(Device::Hybrid, dy, "hybrid-dynamic");
          std::printf("   speed-up over GPU-only: static %.2fx, dynamic %.2fx\n", gpu_only.seconds / stat.seconds,
                      gpu_only.seconds / dyn.seconds);
        }
  }

  for (const auto& r : rows) doc["rows"].push_back(to_json(r));
  if (!a.json.empty()) {
    write_report(a.json, doc.dump(1) + "\n");
    std::printf("\nwrote %s\n", a.json.c_str());
  }
}

}  // namespace

void add_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks (throughput, ratio to the physical floor and to peers)");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = bench->add_subcommand("surface", "Bezier surface evaluation (Palomar et al. experiments and beyond)");
  cmd->add_option("--nets", args->nets, "Control nets k x k (degree k-1), comma-separated");
  cmd->add_option("--resolutions", args->resolutions, "Grid sides, comma-separated");
  cmd->add_option("--precisions", args->precisions, "float,double");
  cmd->add_option("--methods", args->methods, "Methods, comma-separated");
  cmd->add_option("--devices", args->devices, "auto (cpu and cuda when present) or a list of cpu,cuda");
  cmd->add_option("--threads", args->threads, "CPU thread counts, comma-separated (default: 1 and all)");
  cmd->add_option("--budget", args->budget, "Seconds of repeats per configuration");
  cmd->add_flag("--quick", args->quick, "Small matrix: nets 4,16, resolutions 512,2000, methods mle,factored");
  cmd->add_flag("--no-peer", args->no_peer, "Skip the OpenSubdiv comparison");
  cmd->add_option("--json", args->json, "Write all figures to this JSON file");
  cmd->callback([args] {
    BenchArgs a = *args;
    if (a.quick) {
      a.nets = "4,16";
      a.resolutions = "512,2000";
      a.methods = "mle,factored";
      a.budget = std::min(a.budget, 0.2);
    }
    run_bench(a);
  });
  add_bench_patches(*bench);
  add_bench_isosurface(*bench);
  add_bench_ffd(*bench);
  add_bench_solver(*bench);
  add_bench_auto(*bench);
}

}  // namespace parasurf::cli
