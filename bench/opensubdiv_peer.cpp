// OpenSubdiv CPU evaluator as the CPU peer: bicubic B-spline patches, positions + first derivatives.
#include "peers.hpp"

#ifdef PARASURF_HAVE_OPENSUBDIV
#include <omp.h>
#include <opensubdiv/far/patchMap.h>
#include <opensubdiv/far/patchTableFactory.h>
#include <opensubdiv/far/topologyDescriptor.h>
#include <opensubdiv/osd/cpuEvaluator.h>
#include <opensubdiv/osd/cpuPatchTable.h>
#include <opensubdiv/version.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <memory>
#include <random>
#include <vector>
#endif

namespace parasurf::bench {

#ifdef PARASURF_HAVE_OPENSUBDIV
using namespace OpenSubdiv;

PeerTiming opensubdiv_bicubic(std::int64_t points, int threads, int grid) {
  PeerTiming out;
  out.name = "OpenSubdiv " + std::to_string(OPENSUBDIV_VERSION_MAJOR) + "." + std::to_string(OPENSUBDIV_VERSION_MINOR) + " CpuEvaluator";
  // A (G+1)x(G+1) vertex grid of G x G quads with a wavy height: its interior faces are regular bicubic patches.
  const int G = std::max(grid, 4);
  std::vector<float> verts;
  for (int i = 0; i <= G; ++i)
    for (int j = 0; j <= G; ++j) verts.insert(verts.end(), {float(i), float(j), float(std::sin(0.4 * i) * std::cos(0.3 * j))});
  std::vector<int> counts(G * G, 4), indices;
  for (int i = 0; i < G; ++i)
    for (int j = 0; j < G; ++j) {
      const int a = i * (G + 1) + j;
      indices.insert(indices.end(), {a, a + G + 1, a + G + 2, a + 1});
    }
  Far::TopologyDescriptor desc;
  desc.numVertices = (G + 1) * (G + 1);
  desc.numFaces = G * G;
  desc.numVertsPerFace = counts.data();
  desc.vertIndicesPerFace = indices.data();
  Sdc::Options sdc;
  sdc.SetVtxBoundaryInterpolation(Sdc::Options::VTX_BOUNDARY_EDGE_ONLY);
  std::unique_ptr<Far::TopologyRefiner> refiner(Far::TopologyRefinerFactory<Far::TopologyDescriptor>::Create(
      desc, Far::TopologyRefinerFactory<Far::TopologyDescriptor>::Options(Sdc::SCHEME_CATMARK, sdc)));
  Far::PatchTableFactory::Options popt;
  popt.SetEndCapType(Far::PatchTableFactory::Options::ENDCAP_BSPLINE_BASIS);
  refiner->RefineAdaptive(Far::TopologyRefiner::AdaptiveOptions(2));
  std::unique_ptr<Far::PatchTable> table(Far::PatchTableFactory::Create(*refiner, popt));
  // vertex buffer: refined levels are not needed for level-0 regular patches, but local points are
  const int nlocal = table->GetNumLocalPoints();
  const int nrefined = refiner->GetNumVerticesTotal();
  std::vector<float> buffer(std::size_t(nrefined + nlocal) * 3, 0.f);
  std::copy(verts.begin(), verts.end(), buffer.begin());
  if (nlocal > 0 && table->GetLocalPointStencilTable()) {
    // refined vertices are only needed by irregular regions; we sample interior level-0 faces only
  }
  std::unique_ptr<Osd::CpuPatchTable> cpu_table(Osd::CpuPatchTable::Create(table.get()));
  Far::PatchMap map(*table);
  // sample the interior faces (regular patches) in order, random (s,t) within each: the access pattern of a
  // batch that evaluates patch after patch
  std::vector<Osd::PatchCoord> coords(static_cast<std::size_t>(points));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> st(0.f, 1.f);
  const std::int64_t faces = std::int64_t(G - 2) * (G - 2);
  for (std::int64_t k = 0; k < points; ++k) {
    const std::int64_t f = k * faces / points;
    const int fi = 1 + int(f / (G - 2)), fj = 1 + int(f % (G - 2));
    const float s = st(rng), t = st(rng);
    const Far::PatchTable::PatchHandle* h = map.FindPatch(fi * G + fj, s, t);
    coords[std::size_t(k)] = Osd::PatchCoord(*h, s, t);
  }
  std::vector<float> pos(std::size_t(points) * 3), du(pos.size()), dv(pos.size());
  const Osd::BufferDescriptor src(0, 3, 3), dst(0, 3, 3);
  auto eval = [&] {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      const std::int64_t b = points * t / n, e = points * (t + 1) / n;
      Osd::CpuEvaluator::EvalPatches(buffer.data(), src, pos.data() + 3 * b, dst, du.data() + 3 * b, dst,
                                     dv.data() + 3 * b, dst, int(e - b), coords.data() + b,
                                     cpu_table->GetPatchArrayBuffer(), cpu_table->GetPatchIndexBuffer(),
                                     cpu_table->GetPatchParamBuffer());
    }
  };
  eval();  // warm-up
  std::vector<double> times;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    eval();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  out.available = true;
  out.seconds = times[times.size() / 2];
  out.points = points;
  return out;
}
#else
PeerTiming opensubdiv_bicubic(std::int64_t points, int, int) {
  PeerTiming out;
  out.name = "OpenSubdiv";
  out.reason = "not installed at build time (apt-get install libosd-dev)";
  out.points = points;
  return out;
}
#endif

}  // namespace parasurf::bench
