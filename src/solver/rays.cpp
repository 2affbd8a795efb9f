// Rays against Bézier patches by the subdivision solver (Park et al., CAD 43, 2011). The ray is the meeting of two
// planes through it (Kajiya, "Ray tracing parametric patches", SIGGRAPH 1982), so where it meets a patch the
// patch's signed distances to both planes vanish: two equations in (u, v) whose Bernstein coefficients are the
// control points' distances to the planes (Nishita, Sederberg and Kakimoto, "Ray tracing trimmed rational surface
// patches", SIGGRAPH 1990). Each ray gives one system per patch whose control box, and one of whose sub-patch
// boxes, it passes through; all systems go to the engine as one batch, and the nearest root ahead of the origin
// wins.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/memory.hpp"
#include "core/region_errors.hpp"
#include "core/release.hpp"
#include "parasurf/bezier.hpp"
#include "parasurf/device.hpp"
#include "parasurf/error.hpp"
#include "parasurf/solver.hpp"
#include "solver/patch_set.hpp"
#include "solver/prepared_patches.hpp"

namespace parasurf {

namespace {

using Vec3 = std::array<double, 3>;

constexpr int kPieces = 4;  // sub-patches along each side whose boxes the ray must pass through
// Each system is solved on its patch's domain grown by this much each way: a ray through a seam meets both patches
// on their boundary, where the rounding of the coefficients can put the root just outside either domain (by more
// than 1e-9 on a model millions of units from the origin), and the ray would pass between them. Roots are clamped
// back onto the patch, and one that had to move counts only if the boundary point is still on the ray.
constexpr double kGrow = 1e-6;

struct PatchBoxes {
  Vec3 lo{}, hi{};
  std::vector<std::array<Vec3, 2>> pieces;  // kPieces x kPieces sub-patches' control boxes
  double pad = 0;                           // room for the rounding of boxes and of the slab test
  double size = 0;                          // the box's largest side
  double room = 0;                          // how far off the ray a point on the patch may be: its rounding
  std::array<BernsteinPoly, 3> x;           // the coordinates, in (u, v)
  // The control points on the grown domain (grow_domain), x, y, z interleaved, less `ref`: a ray's equations are
  // their distances from its planes (grow_domain is affine, so it commutes with that projection), one product a
  // point. Relative to a point of the patch, the extrapolation rounds at the patch's scale: on absolute coordinates
  // millions of units out it would move the points by about 1e-9, differently on each patch, and open the point where
  // four patches meet at a pole to a ray aimed at it.
  std::vector<double> grown;
  Vec3 ref{};  // the patch's first control point
};

// A polynomial of degree (m, n) on [0, 1]^2, coefficients row by row, rewritten on [-kGrow, 1 + kGrow]^2: along each
// line, de Casteljau at -kGrow keeps the part from there on, then at the image of 1 + kGrow the part before it (both
// steps extrapolate, stably for so small a step).
void grow_domain(std::vector<double>& c, int m, int n) {
  auto line = [](double* x, std::size_t stride, int d) {
    double w[17];
    for (int step = 0; step < 2; ++step) {
      const double t = step == 0 ? -kGrow : (1 + 2 * kGrow) / (1 + kGrow);  // [-g, 1] from [0, 1], then [-g, 1 + g]
      for (int i = 0; i <= d; ++i) w[i] = x[std::size_t(i) * stride];
      for (int r = 1; r <= d; ++r) {
        if (step == 0)
          x[std::size_t(d - r + 1) * stride] = w[d - r + 1];  // the right part's coefficients, from the end
        for (int i = 0; i + r <= d; ++i) w[i] = (1 - t) * w[i] + t * w[i + 1];
        if (step == 1) x[std::size_t(r) * stride] = w[0];  // the left part's, from the start
      }
      if (step == 0) x[0] = w[0];
    }
  };
  for (int i = 0; i <= m; ++i) line(c.data() + std::size_t(i) * std::size_t(n + 1), 1, n);
  for (int j = 0; j <= n; ++j) line(c.data() + j, std::size_t(n + 1), m);
}

PatchBoxes boxes_of(const BezierSurface& s) {
  PatchBoxes b;
  const int m = s.degree_u, n = s.degree_v;
  solver::control_box(s, b.lo, b.hi);
  double size = 0, far = 0;
  for (std::size_t k = 0; k < 3; ++k)
    size = std::max(size, b.hi[k] - b.lo[k]), far = std::max({far, std::abs(b.lo[k]), std::abs(b.hi[k])});
  b.pad = 1e-9 * size + 1e-12 * far;
  b.size = size;
  b.room = 1e-9 * size + 1e-14 * far;
  std::array<BernsteinPoly, 3> x;
  for (int k = 0; k < 3; ++k) {
    x[std::size_t(k)].degree = {m, n};
    for (int i = 0; i < (m + 1) * (n + 1); ++i) x[std::size_t(k)].coef.push_back(s.points[std::size_t(3 * i + k)]);
  }
  b.pieces = solver::sub_patch_boxes(x, kPieces, {0, 0, 0});
  const std::size_t points = std::size_t((m + 1) * (n + 1));
  b.grown.resize(3 * points);
  b.ref = {s.points[0], s.points[1], s.points[2]};
  for (std::size_t k = 0; k < 3; ++k) {
    std::vector<double> c = x[k].coef;
    for (double& v : c) v -= b.ref[k];
    grow_domain(c, m, n);
    for (std::size_t i = 0; i < points; ++i) b.grown[3 * i + k] = c[i];
  }
  b.x = std::move(x);
  return b;
}

// A ray as the slab test takes it: its origin and the reciprocals of its direction (a box test then multiplies
// where it divided, about a third of the ray listing's time; a product by a fixed factor rounds monotonically in the
// box's bounds as the quotient did, and differs from it by a unit in the last place of t, far inside the pad).
struct SlabRay {
  Vec3 o, inv;
  bool parallel[3];
};
SlabRay slab_ray(const Vec3& o, const Vec3& d) {
  SlabRay r{o, {}, {}};
  for (std::size_t k = 0; k < 3; ++k) r.parallel[k] = d[k] == 0, r.inv[k] = d[k] == 0 ? 0 : 1 / d[k];
  return r;
}

// Whether the ray passes through the box (grown by pad) somewhere with t above t_min (slab test; a direction
// parallel to a slab keeps the ray inside it or outside it for every t).
bool passes(const SlabRay& r, const Vec3& lo, const Vec3& hi, double pad, double t_min) {
  const Vec3& o = r.o;
  double t0 = -std::numeric_limits<double>::infinity(), t1 = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < 3; ++k) {
    const double a = lo[k] - pad, b = hi[k] + pad;
    if (r.parallel[k]) {
      if (o[k] < a || o[k] > b) return false;
      continue;
    }
    double ta = (a - o[k]) * r.inv[k], tb = (b - o[k]) * r.inv[k];
    if (ta > tb) std::swap(ta, tb);
    t0 = std::max(t0, ta), t1 = std::min(t1, tb);
  }
  return t0 <= t1 && t1 > t_min;
}

// Two unit normals of planes that meet in the ray's line.
std::array<Vec3, 2> planes_of(const Vec3& d) {
  const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  const Vec3 u = {d[0] / len, d[1] / len, d[2] / len};
  std::size_t least = 0;  // the axis least along the ray: its cross product with the ray is best conditioned
  for (std::size_t k = 1; k < 3; ++k)
    if (std::abs(u[k]) < std::abs(u[least])) least = k;
  Vec3 e{0, 0, 0};
  e[least] = 1;
  Vec3 n1 = {u[1] * e[2] - u[2] * e[1], u[2] * e[0] - u[0] * e[2], u[0] * e[1] - u[1] * e[0]};
  const double l1 = std::sqrt(n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2]);
  for (double& c : n1) c /= l1;
  const Vec3 n2 = {u[1] * n1[2] - u[2] * n1[1], u[2] * n1[0] - u[0] * n1[2], u[0] * n1[1] - u[1] * n1[0]};
  return {n1, n2};
}

// From (u, v) on the patch, Gauss-Newton on the point's distance to the ray's line, within the patch: a proved root
// is already on the line (the steps change nothing); a cell of a region of roots (the ray through a collapsed edge,
// where every v gives the same point, or along a flat part) moves onto it. The point and its distance to the line.
struct OnRay {
  double u, v;
  Vec3 point;
  double off;
};
OnRay settle(const PatchBoxes& b, const Vec3& o, const Vec3& d, double u, double v, int iterations) {
  const double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  // The part of w across the ray.
  auto across = [&](const Vec3& w) {
    const double s = (w[0] * d[0] + w[1] * d[1] + w[2] * d[2]) / dd;
    return Vec3{w[0] - s * d[0], w[1] - s * d[1], w[2] - s * d[2]};
  };
  auto at = [&](double a, double c, Vec3* su, Vec3* sv) {
    const double uv[2] = {a, c};
    Vec3 p;
    for (std::size_t k = 0; k < 3; ++k) {
      double g[2];
      p[k] = b.x[k].evaluate_with_gradient(uv, g);
      if (su) (*su)[k] = g[0], (*sv)[k] = g[1];
    }
    return p;
  };
  auto norm = [](const Vec3& w) { return std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]); };
  Vec3 p = at(u, v, nullptr, nullptr);
  OnRay best{u, v, p, norm(across({p[0] - o[0], p[1] - o[1], p[2] - o[2]}))};
  for (int it = 0; it < iterations && best.off > 0; ++it) {
    Vec3 su, sv;
    p = at(u, v, &su, &sv);
    const Vec3 r = across({p[0] - o[0], p[1] - o[1], p[2] - o[2]}), ju = across(su), jv = across(sv);
    const double a11 = ju[0] * ju[0] + ju[1] * ju[1] + ju[2] * ju[2],
                 a12 = ju[0] * jv[0] + ju[1] * jv[1] + ju[2] * jv[2],
                 a22 = jv[0] * jv[0] + jv[1] * jv[1] + jv[2] * jv[2];
    const double g1 = ju[0] * r[0] + ju[1] * r[1] + ju[2] * r[2], g2 = jv[0] * r[0] + jv[1] * r[1] + jv[2] * r[2];
    // Singular where the patch collapses (Su = 0 on a pole): a small ridge keeps the step in the directions that move.
    const double ridge = 1e-12 * (a11 + a22) + 1e-300, det = (a11 + ridge) * (a22 + ridge) - a12 * a12;
    if (!(det > 0)) break;
    const double nu = std::clamp(u - ((a22 + ridge) * g1 - a12 * g2) / det, 0.0, 1.0);
    const double nv = std::clamp(v - ((a11 + ridge) * g2 - a12 * g1) / det, 0.0, 1.0);
    if (nu == u && nv == v) break;
    u = nu, v = nv;
    p = at(u, v, nullptr, nullptr);
    const double off = norm(across({p[0] - o[0], p[1] - o[1], p[2] - o[2]}));
    if (!(off < best.off)) break;
    best = {u, v, p, off};
  }
  return best;
}

// Nearer along the ray, or as near on a lower patch index: the same answer whatever order the roots come in.
bool better(const RayHit& a, const RayHit& b) { return b.patch < 0 || a.t < b.t || (a.t == b.t && a.patch < b.patch); }

void check(const std::vector<BezierSurface>& patches, const std::vector<Vec3>& origins,
           const std::vector<Vec3>& directions, double t_min) {
  if (origins.size() != directions.size())
    throw Error(ErrorKind::InvalidArgument, "rays: " + std::to_string(origins.size()) + " origins but " +
                                                std::to_string(directions.size()) + " directions");
  solver::check_patch_set(patches, origins.size(), "rays", "rays");
  if (!std::isfinite(t_min)) throw Error(ErrorKind::InvalidArgument, "rays: t_min is not finite");
  for (std::size_t i = 0; i < origins.size(); ++i) {
    for (std::size_t k = 0; k < 3; ++k)
      if (!std::isfinite(origins[i][k]) || !std::isfinite(directions[i][k]))
        throw Error(ErrorKind::InvalidArgument, "rays: ray " + std::to_string(i) + " is not finite");
    const Vec3& d = directions[i];
    const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(len > 0) || !std::isfinite(len))
      throw Error(ErrorKind::InvalidArgument,
                  "rays: ray " + std::to_string(i) + " has no direction (zero, or too small or large to normalise)");
  }
}

}  // namespace

RayHitsResult intersect_rays(const std::vector<BezierSurface>& patches, const std::vector<Vec3>& origins,
                             const std::vector<Vec3>& directions, const SolverOptions& options, double t_min) {
  check(patches, origins, directions, t_min);
  RayHitsResult out;
  if (origins.empty()) return out;
  const int threads = cpu_thread_count(options.threads);
  // One hit record per ray (64 MiB for a million): faulted in by all threads, not page by page on this one.
  out.hits.reserve(origins.size());
  core::prefault(out.hits.data(), origins.size() * sizeof(RayHit));
  out.hits.resize(origins.size());
  core::RegionErrors errors;
  // Loops over a few items stay on the calling thread: waking the others costs more (on a loaded machine,
  // milliseconds), and one ray is a call users make in a loop.
  static solver::PreparedPatches<PatchBoxes> prepared;
  const auto kept = prepared.get(patches, threads, boxes_of);
  const std::vector<PatchBoxes>& boxes = *kept;

  // The patches each ray passes through (its box, then one of its sub-patch boxes), as one list in ray order:
  // threads list blocks of rays (a list per ray cost a million allocations), and the blocks are joined in order.
  // Blocks are taken as threads come free: the rays that meet the model lie together (an image's middle rows).
  // Ray i's systems are [first[i], first[i + 1]): system k is ray ray_of[k] against patch patch_of[k].
  const std::size_t rays = origins.size();
  // The model's box holds every patch's grown box: a ray that misses it misses them all (the slab test is monotone
  // in the box's bounds, so no ray it passes is lost).
  Vec3 model_lo = boxes[0].lo, model_hi = boxes[0].hi;
  for (const PatchBoxes& b : boxes)
    for (std::size_t k = 0; k < 3; ++k)
      model_lo[k] = std::min(model_lo[k], b.lo[k] - b.pad), model_hi[k] = std::max(model_hi[k], b.hi[k] + b.pad);
  constexpr std::size_t kBlock = 2048;
  const std::size_t blocks = (rays + kBlock - 1) / kBlock;
  std::vector<std::size_t> first(rays + 1, 0);
  std::vector<std::size_t> ray_of;
  std::vector<std::uint32_t> patch_of;
  {
    std::vector<std::vector<std::uint32_t>> block(blocks);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (blocks > 1)
    for (std::size_t g = 0; g < blocks; ++g)
      errors.capture([&] {
        for (std::size_t i = g * kBlock, end = std::min(rays, i + kBlock); i < end; ++i) {
          std::size_t found = 0;
          const SlabRay ray = slab_ray(origins[i], directions[i]);
          if (!passes(ray, model_lo, model_hi, 0, t_min)) {
            first[i + 1] = 0;
            continue;
          }
          for (std::size_t p = 0; p < boxes.size(); ++p) {
            const PatchBoxes& b = boxes[p];
            if (!passes(ray, b.lo, b.hi, b.pad, t_min)) continue;
            bool any = false;
            for (const auto& box : b.pieces) any = any || passes(ray, box[0], box[1], b.pad, t_min);
            if (any) block[g].push_back(std::uint32_t(p)), ++found;
          }
          first[i + 1] = found;
        }
      });
    errors.rethrow();
    for (std::size_t i = 0; i < rays; ++i) first[i + 1] += first[i];
    // (core::check_host_allocation below bounds what the systems take; these lists are a fraction of it.)
    ray_of.resize(first.back());
    patch_of.resize(first.back());
#pragma omp parallel for schedule(static) num_threads(threads) if (blocks > 1)
    for (std::size_t g = 0; g < blocks; ++g) {
      const std::size_t begin = g * kBlock, end = std::min(rays, begin + kBlock);
      std::copy(block[g].begin(), block[g].end(), patch_of.begin() + std::ptrdiff_t(first[begin]));
      for (std::size_t i = begin; i < end; ++i)
        std::fill(ray_of.begin() + std::ptrdiff_t(first[i]), ray_of.begin() + std::ptrdiff_t(first[i + 1]), i);
    }
  }
  const std::size_t count = first.back();
  {
    // The systems' coefficients (and the solver's cells, a few times that) must fit before they are made.
    std::size_t largest = 0;
    for (const BezierSurface& s : patches)
      largest = std::max(largest, std::size_t((s.degree_u + 1) * (s.degree_v + 1)));
    core::check_host_allocation(std::uint64_t(4 * 8 * 2 * double(largest) * double(count)),
                                "rays: " + std::to_string(count) + " ray-patch systems");
  }
  // Made and released in the same static blocks: each thread frees into its own heap what it allocated.
  std::vector<std::vector<BernsteinPoly>> systems(count);
#pragma omp parallel for schedule(static) num_threads(threads) if (count >= 256)
  for (std::size_t k = 0; k < count; ++k)
    errors.capture([&] {
      const std::size_t i = ray_of[k];
      const auto normals = planes_of(directions[i]);
      const Vec3& o = origins[i];
      const BezierSurface& s = patches[patch_of[k]];
      const PatchBoxes& b = boxes[patch_of[k]];
      const std::vector<double>& g = b.grown;
      const Vec3 from = {b.ref[0] - o[0], b.ref[1] - o[1], b.ref[2] - o[2]};  // the origin to the grown points' ref
      std::vector<BernsteinPoly>& eq = systems[k];
      eq.resize(2);
      for (std::size_t e = 0; e < 2; ++e) {
        eq[e].degree = {s.degree_u, s.degree_v};
        eq[e].coef.resize(g.size() / 3);
        const Vec3& n = normals[e];
        for (std::size_t c = 0; c < eq[e].coef.size(); ++c)
          eq[e].coef[c] =
              n[0] * (g[3 * c] + from[0]) + n[1] * (g[3 * c + 1] + from[1]) + n[2] * (g[3 * c + 2] + from[2]);
      }
    });
  errors.rethrow();
  std::vector<SolveResult> solved = solve_systems(systems, options);
  core::release_in_parallel(systems, threads);
  out.systems = std::int64_t(count);
  for (const SolveResult& r : solved)
    if (r.status != "complete") {
      out.status = r.status;
      break;
    }

    // Every root ahead of the origin is a hit; where the ray meets a patch along a region of roots (through a collapsed
    // edge, or along a flat part), the region's corners and centre, settled onto the ray, are offered. The nearest
    // wins.
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads) if (origins.size() > 256)
  for (std::size_t i = 0; i < origins.size(); ++i)
    errors.capture([&] {
      const Vec3 &o = origins[i], &d = directions[i];
      const double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      RayHit& best = out.hits[i];
      for (std::size_t k = first[i]; k < first[i + 1]; ++k) {
        const std::size_t p = patch_of[k];
        const SolveResult& r = solved[k];
        // A proved root inside the patch is on the ray already (Newton-refined in a cell that holds one root); other
        // points are settled onto it, and dropped where they stay off it by more than the rounding of the patch's
        // coordinates (a root clamped back from the grown domain: the ray passes beside the patch's edge).
        auto offer = [&](double x, double y, bool proved) {
          const double u0 = -kGrow + x * (1 + 2 * kGrow), v0 = -kGrow + y * (1 + 2 * kGrow);
          const double u = std::clamp(u0, 0.0, 1.0), v = std::clamp(v0, 0.0, 1.0);
          const bool inside = u == u0 && v == v0;
          const OnRay h = settle(boxes[p], o, d, u, v, proved ? 0 : 12);
          if (!(proved && inside) && h.off > boxes[p].room) return;
          const Vec3 w = {h.point[0] - o[0], h.point[1] - o[1], h.point[2] - o[2]};
          const double t = (w[0] * d[0] + w[1] * d[1] + w[2] * d[2]) / dd;
          if (!(t > t_min)) return;
          const RayHit hit{std::int64_t(p), h.u, h.v, t, h.point};
          if (better(hit, best)) best = hit;
        };
        for (const Root& root : r.roots) offer(root.x[0], root.x[1], root.proved_single);
        for (const SolutionRegion& g : r.regions) {
          offer(0.5 * (g.lo[0] + g.hi[0]), 0.5 * (g.lo[1] + g.hi[1]), false);
          for (double u : {g.lo[0], g.hi[0]})
            for (double v : {g.lo[1], g.hi[1]}) offer(u, v, false);
        }
      }
    });
  errors.rethrow();
  core::release_in_parallel(solved, threads);
  return out;
}

}  // namespace parasurf
