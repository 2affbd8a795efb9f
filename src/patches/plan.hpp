// The tessellation plan: segments per patch, one segment count per edge (zip strips where a patch's side differs
// from its grid, split edges at T-junctions), the samples to evaluate and the numbering of the welded mesh's
// vertices. plan.cpp makes it; tessellate.cpp evaluates it; assemble_host.cpp welds the mesh on the host.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "parasurf/tessellate.hpp"
#include "patches/batch.hpp"
#include "patches/plan_walk.hpp"
#include "patches/topology.hpp"

namespace parasurf::patches {

constexpr int kMaxSegments = 1 << 14;

inline double norm3(const double* a) { return std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

struct Plan {
  const PatchModel* model = nullptr;
  patches::Topology topo;
  std::vector<int> nu, nv;                  // per patch (triangle: nu = nv = n)
  std::vector<int> edge_factor;             // per edge
  std::vector<std::uint8_t> zipper;         // per patch: sides differ from the grid
  std::vector<std::int64_t> first;          // per patch: first grid sample
  std::vector<std::array<std::int64_t, 4>> extra_first;  // per patch side: first extra sample, -1 when on the grid
  std::vector<std::int64_t> edge_vertex_base;            // per edge
  std::vector<std::int64_t> interior_base;               // per patch
  std::int64_t grid_samples = 0, extra_samples = 0, vertices = 0;
  std::vector<std::int64_t> extra_patch;
  std::vector<double> extra_uv;
  std::vector<std::vector<int>> split_offsets;           // per split edge: its pieces' first sample (and the end)

  // what patches::side_vertex and the rest read (plan_walk.hpp)
  bool triangle(std::int64_t p) const { return model->patches[p].kind == PatchKind::Triangle; }
  bool flipped(std::int64_t p) const { return topo.flipped[p] != 0; }
  const patches::SideRef& side(std::int64_t p, int s) const { return topo.sides[p][s]; }
  std::int32_t edge_corner(std::int64_t e, int end) const { return end ? topo.edges[e].corner_b : topo.edges[e].corner_a; }
  bool edge_collapsed(std::int64_t e) const { return topo.edges[e].collapsed; }
  int side_segments(std::int64_t p, int s) const { return patches::side_segments(*this, p, s); }
  int factor(std::int64_t p, int s) const { return patches::side_factor(*this, p, s); }
  bool edge_split(std::int64_t e) const { return topo.split(e); }
  // Sample kc (0 < kc < f) of split edge e, in its canonical direction: the piece it lies on and its index there.
  std::pair<const patches::SplitPiece*, int> split_sample(std::int64_t e, int kc) const {
    const auto k = std::size_t(topo.split_of[std::size_t(e)]);
    const auto& off = split_offsets[k];
    const auto i = std::size_t(std::upper_bound(off.begin(), off.end(), kc) - off.begin() - 1);
    return {&topo.splits[k][i], kc - off[i]};
  }
  std::int64_t split_vertex(std::int64_t e, int kc) const {
    const auto [piece, local] = split_sample(e, kc);
    if (local == 0) return edge_corner(piece->edge, piece->reversed ? 1 : 0);  // where two pieces meet
    const int f = edge_factor[std::size_t(piece->edge)];
    return edge_vertex_base[std::size_t(piece->edge)] + (piece->reversed ? f - local : local) - 1;
  }
  double split_param(std::int64_t e, int kc) const {
    const auto [piece, local] = split_sample(e, kc);
    return piece->t0 + (piece->t1 - piece->t0) * (double(local) / edge_factor[std::size_t(piece->edge)]);
  }
};

using Ref = PlanRef;

template <class T> struct SampleStore {
  std::vector<T> pos[3], nrm[3];
  patches::SampleViews<T> views() {
    patches::SampleViews<T> v;
    for (int c = 0; c < 3; ++c) v.pos[c] = pos[c].data(), v.nrm[c] = nrm[c].data();
    return v;
  }
};

// Chordal error (plan.cpp): the largest sampled distance between a patch and one of its triangles (k-division of
// the triangle), between a patch and its regular nu x nv triangulation, and the segments for a target deviation.
double triangle_deviation(const patchk::PatchRecord& rec, const double* pts, const double (&uv)[3][2],
                          const double (&xyz)[3][3], int k);
double grid_deviation(const patchk::PatchRecord& rec, const double* pts, int nu, int nv);

// triangle_deviation for the triangles whose corners are grid samples of a tensor-product patch, within one grid
// cell: their k-division points lie on the patch's grid refined k times, each shared by up to six triangles. The
// lattice is made a band of k + 1 lattice rows (one row of grid cells) at a time, each row as a curve whose control
// points (the net contracted along u) are made once for the band: a few multiplies per point, in loops over the
// row that vectorise, instead of the whole net's per point. Bands go forward only (triangulate_patch gives the
// cells row by row): a triangle of an earlier row is not taken (false), and its caller samples it point by point.
class RefinedGrid {
 public:
  RefinedGrid(const patchk::PatchRecord& rec, const double* pts, int k);
  // (i, j): the corners' grid indices; xyz: their positions. False where the triangle is not taken.
  bool triangle_deviation(const int (&ij)[3][2], const double (&xyz)[3][3], double& deviation);

 private:
  void enter_band(int i);
  patchk::PatchRecord rec_;
  const double* net_;
  int k_, cols_, band_ = -1;
  std::vector<double> bv_;   // Bernstein values of each lattice column's v: (dv + 1) rows of cols_
  std::vector<double> h_;    // one lattice row, homogeneous: 4 rows of cols_
  std::vector<double> pos_;  // the band's lattice points: (k + 1) lattice rows, x, y and z rows of cols_ each
};
std::pair<int, int> estimate_segments(const Patch& patch, const double* pts, double target);

// Edge factors, samples and vertex numbering for the plan's per-patch segments.
void finish_plan(Plan& pl);
// The plan of the options' uniform or per-patch resolution, or of the tolerance's first estimate.
Plan make_plan(const PatchModel& m, const TessellationOptions& o);
// The triangles of patch p as plan references, three per triangle.
void triangulate_patch(const Plan& pl, std::int64_t p, std::vector<Ref>& out);

// Host assembly (assemble_host.cpp).
bool plain_patch(const Plan& pl, std::int64_t p);
void check_mesh_size(const Plan& pl);
void count_flips(const Plan& pl, const std::vector<double>& volume, TessellationReport* rep);
void append_polyhedra(PatchMesh& mesh, const PatchModel& m, TessellationReport* rep);
template <class T>
PatchMesh assemble(const Plan& pl, const SampleStore<T>& st, const TessellationOptions& o, TessellationReport* rep);

}  // namespace parasurf::patches
