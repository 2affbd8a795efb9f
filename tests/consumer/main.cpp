// Uses the public headers only: the built-in teapot, welded, and a Bezier patch evaluated on a grid.
#include <cstdio>

#include <parasurf/bezier.hpp>
#include <parasurf/tessellate.hpp>

int main() {
  parasurf::TessellationOptions o;
  o.resolution = 4;
  o.device = parasurf::Device::Cpu;
  const parasurf::PatchMesh mesh = parasurf::tessellate(parasurf::utah_teapot(), o);
  parasurf::EvalOptions e;
  e.device = parasurf::Device::Cpu;
  parasurf::SurfaceEvaluator<double> evaluator(e);
  parasurf::EvalRequest request;
  const auto samples = evaluator.evaluate_grid(parasurf::make_random_surface(3, 3, 1), {5, 5}, request);
  std::printf("teapot %lld triangles; %lld samples\n", static_cast<long long>(mesh.triangles.size() / 3),
              static_cast<long long>(samples.count));
  return mesh.triangles.empty() || samples.count != 25;
}
