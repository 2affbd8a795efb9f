// The point of a set of Bézier patches nearest to each of many query points, by the subdivision solver (Park et al.,
// CAD 43, 2011) on the conditions of a closest point (Ma & Hewitt, "Point inversion and projection for NURBS curve
// and surface", CAGD 20(2), 2003): inside a patch the chord S - q is perpendicular to Su and Sv, on an edge to the
// edge's tangent, or the point is a corner. Every patch that may hold the nearest point (its control box no farther
// than a point already known on the surface) gives one interior system and one per edge; all of them go to the
// engine as one batch.
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
#include "solver/bernstein_kernels.hpp"
#include "solver/patch_set.hpp"
#include "solver/prepared_patches.hpp"

namespace parasurf {

namespace {

using Vec3 = std::array<double, 3>;

constexpr std::size_t kSide = 9;  // samples along each side of a patch for the first bound, corners included
constexpr int kPieces = 4;        // sub-patches along each side whose boxes bound the distance from below

// What a query needs of a patch: its coordinates and the parts of the conditions that do not depend on the query.
// Coordinates are taken from the centre of the patch's box, so that a model far from the origin does not lose the
// conditions' digits to cancellation. With p = q - centre: (S - q) . Su = dot_u - sum_k p_k su[k], all at the
// degree of dot_u; the same along v and on the edges.
struct PatchTerms {
  Vec3 centre{};
  std::array<BernsteinPoly, 3> x;       // coordinates from the centre, in (u, v)
  BernsteinPoly dot_u, dot_v;           // S . Su, S . Sv
  std::array<BernsteinPoly, 3> su, sv;  // Su, Sv raised to the degrees of dot_u, dot_v
  struct Edge {
    bool along_u;                          // the edge runs along u (v fixed) or along v (u fixed)
    double at;                             // the fixed parameter
    BernsteinPoly dot;                     // C . C' (one variable)
    std::array<BernsteinPoly, 3> tangent;  // C' raised to its degree
    Vec3 lo{}, hi{};                       // its control points' box (absolute)
  };
  std::vector<Edge> edges;                       // the edges that are curves (a collapsed edge is its corner)
  Vec3 lo{}, hi{};                               // the control points' box, which holds the patch
  std::vector<std::array<Vec3, 2>> piece_boxes;  // boxes of kPieces x kPieces sub-patches' control points
  std::vector<Vec3> samples;                     // points on the patch: an upper bound on the distance for pruning

  std::vector<double> net;  // the control points from the centre, interleaved: net[3 (i (n + 1) + j) + k]

  Vec3 point(const double* uv) const {
    return {centre[0] + x[0].evaluate(uv), centre[1] + x[1].evaluate(uv), centre[2] + x[2].evaluate(uv)};
  }

  // The point (from the centre) and, when asked, its partials at (u, v): the three coordinates in one pass over the
  // bases of u and v, made once (three evaluations of the coordinates made them three times; the settling of
  // candidates is most of the host's work around a batch).
  void jet(double u, double v, Vec3& p, Vec3* du, Vec3* dv) const {
    const int m = x[0].degree[0], n = x[0].degree[1];
    double bu[17], bv[17], dbu[17], dbv[17];  // patches have degree 16 at most (check_patch_set)
    solverk::bernstein_basis_and_derivative(m, u, bu, dbu);
    solverk::bernstein_basis_and_derivative(n, v, bv, dbv);
    p = {0, 0, 0};
    Vec3 pu{0, 0, 0}, pv{0, 0, 0};
    for (int i = 0; i <= m; ++i) {
      Vec3 row{0, 0, 0}, row_v{0, 0, 0};  // sums over j along the row i, with the v basis and its derivative
      const double* c = net.data() + 3 * std::size_t(i * (n + 1));
      for (int j = 0; j <= n; ++j, c += 3)
        for (int k = 0; k < 3; ++k) row[std::size_t(k)] += bv[j] * c[k], row_v[std::size_t(k)] += dbv[j] * c[k];
      for (int k = 0; k < 3; ++k) {
        p[std::size_t(k)] += bu[i] * row[std::size_t(k)];
        pu[std::size_t(k)] += dbu[i] * row[std::size_t(k)];
        pv[std::size_t(k)] += bu[i] * row_v[std::size_t(k)];
      }
    }
    if (du) *du = pu, *dv = pv;
  }
};

BernsteinPoly raise_to(const BernsteinPoly& p, const std::vector<int>& degree) {
  BernsteinPoly out = p;
  for (int v = 0; v < p.variables(); ++v)
    if (out.degree[std::size_t(v)] < degree[std::size_t(v)]) out = elevate(out, v, degree[std::size_t(v)]);
  return out;
}

BernsteinPoly dot3(const std::array<BernsteinPoly, 3>& a, const std::array<BernsteinPoly, 3>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

// A coordinate of the edge u = at (along v) or v = at (along u), as a polynomial in one variable.
std::vector<double> edge_coefficients(const BezierSurface& s, int k, bool along_u, int end, double centre) {
  const int m = s.degree_u, n = s.degree_v;
  std::vector<double> c;
  if (along_u)
    for (int i = 0; i <= m; ++i) c.push_back(s.points[std::size_t(3 * (i * (n + 1) + (end ? n : 0)) + k)] - centre);
  else
    for (int j = 0; j <= n; ++j) c.push_back(s.points[std::size_t(3 * ((end ? m : 0) * (n + 1) + j) + k)] - centre);
  return c;
}

PatchTerms patch_terms(const BezierSurface& s) {
  PatchTerms t;
  const int m = s.degree_u, n = s.degree_v;
  solver::control_box(s, t.lo, t.hi);
  for (std::size_t k = 0; k < 3; ++k) t.centre[k] = 0.5 * (t.lo[k] + t.hi[k]);
  for (int k = 0; k < 3; ++k) {
    t.x[std::size_t(k)].degree = {m, n};
    t.x[std::size_t(k)].coef.resize(std::size_t((m + 1) * (n + 1)));
    for (int i = 0; i < (m + 1) * (n + 1); ++i)
      t.x[std::size_t(k)].coef[std::size_t(i)] = s.points[std::size_t(3 * i + k)] - t.centre[std::size_t(k)];
  }
  t.net.resize(s.points.size());
  for (std::size_t i = 0; i < s.points.size(); ++i) t.net[i] = s.points[i] - t.centre[i % 3];
  std::array<BernsteinPoly, 3> xu, xv;
  for (int k = 0; k < 3; ++k)
    xu[std::size_t(k)] = derivative(t.x[std::size_t(k)], 0), xv[std::size_t(k)] = derivative(t.x[std::size_t(k)], 1);
  t.dot_u = dot3(t.x, xu);
  t.dot_v = dot3(t.x, xv);
  for (int k = 0; k < 3; ++k) {
    t.su[std::size_t(k)] = raise_to(xu[std::size_t(k)], t.dot_u.degree);
    t.sv[std::size_t(k)] = raise_to(xv[std::size_t(k)], t.dot_v.degree);
  }
  for (const bool along_u : {true, false})
    for (int end = 0; end < 2; ++end) {
      PatchTerms::Edge e;
      e.along_u = along_u;
      e.at = end;
      std::array<BernsteinPoly, 3> c, d;
      bool collapsed = true;
      for (int k = 0; k < 3; ++k) {
        const std::vector<double> coef = edge_coefficients(s, k, along_u, end, t.centre[std::size_t(k)]);
        for (double x : coef) collapsed = collapsed && x == coef[0];
        c[std::size_t(k)] = BernsteinPoly::univariate(coef, 0, 1);
        d[std::size_t(k)] = derivative(c[std::size_t(k)], 0);
      }
      if (collapsed) continue;
      for (int k = 0; k < 3; ++k) {
        const auto [lo, hi] = std::minmax_element(c[std::size_t(k)].coef.begin(), c[std::size_t(k)].coef.end());
        e.lo[std::size_t(k)] = *lo + t.centre[std::size_t(k)], e.hi[std::size_t(k)] = *hi + t.centre[std::size_t(k)];
      }
      e.dot = dot3(c, d);
      for (int k = 0; k < 3; ++k) e.tangent[std::size_t(k)] = raise_to(d[std::size_t(k)], e.dot.degree);
      t.edges.push_back(std::move(e));
    }
  for (std::size_t a = 0; a < kSide; ++a)
    for (std::size_t b = 0; b < kSide; ++b) {
      Vec3 p;
      t.jet(double(a) / (kSide - 1), double(b) / (kSide - 1), p, nullptr, nullptr);
      t.samples.push_back({t.centre[0] + p[0], t.centre[1] + p[1], t.centre[2] + p[2]});
    }
  t.piece_boxes = solver::sub_patch_boxes(t.x, kPieces, t.centre);
  return t;
}

// dot - sum_k p_k terms[k] for p = q - centre, coefficient by coefficient (the terms share dot's degrees).
BernsteinPoly condition(const BernsteinPoly& dot, const std::array<BernsteinPoly, 3>& terms, const Vec3& q,
                        const Vec3& centre) {
  const Vec3 p = {q[0] - centre[0], q[1] - centre[1], q[2] - centre[2]};
  BernsteinPoly out = dot;
  for (std::size_t i = 0; i < out.coef.size(); ++i)
    out.coef[i] -= p[0] * terms[0].coef[i] + p[1] * terms[1].coef[i] + p[2] * terms[2].coef[i];
  return out;
}

double distance(const Vec3& a, const Vec3& b) {
  return std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]));
}

double distance2(const Vec3& a, const Vec3& b) {
  return (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
}

// The squared distance from q to a box (0 inside).
double box_distance2(const Vec3& q, const Vec3& lo, const Vec3& hi) {
  double s = 0;
  for (int k = 0; k < 3; ++k) {
    const double d = std::max({lo[std::size_t(k)] - q[std::size_t(k)], 0.0, q[std::size_t(k)] - hi[std::size_t(k)]});
    s += d * d;
  }
  return s;
}

// A thread's patch order for its queries (kept, so that a query does not allocate).
std::vector<std::pair<double, std::size_t>>& patch_order() {
  thread_local std::vector<std::pair<double, std::size_t>> order;
  return order;
}

// The basis of degree n at t with its first and second derivatives: n (n - 1) (B_{i-2,n-2} - 2 B_{i-1,n-2} +
// B_{i,n-2}) for the second.
void basis_to_second(int n, double t, double* b, double* db, double* ddb) {
  double low[17];
  for (int i = 0; i <= n; ++i) ddb[i] = 0;
  if (n >= 2) {
    solverk::bernstein_basis(n - 2, t, low);
    for (int i = 0; i <= n; ++i)
      ddb[i] = double(n) * (n - 1) *
               ((i >= 2 ? low[i - 2] : 0.0) - 2 * (i >= 1 && i - 1 <= n - 2 ? low[i - 1] : 0.0) +
                (i <= n - 2 ? low[i] : 0.0));
  }
  solverk::bernstein_basis_and_derivative(n, t, b, db);
}

// The point at (u, v) (absolute) with its first and second partials.
struct Jet2 {
  Vec3 p, u, v, uu, uv, vv;
};
Jet2 jet2(const PatchTerms& t, double u, double v) {
  const int m = t.x[0].degree[0], n = t.x[0].degree[1];
  double bu[17], bv[17], dbu[17], dbv[17], ddbu[17], ddbv[17];
  basis_to_second(m, u, bu, dbu, ddbu);
  basis_to_second(n, v, bv, dbv, ddbv);
  Jet2 j{};
  for (int i = 0; i <= m; ++i) {
    Vec3 row{0, 0, 0}, row_v{0, 0, 0}, row_vv{0, 0, 0};
    const double* c = t.net.data() + 3 * std::size_t(i * (n + 1));
    for (int l = 0; l <= n; ++l, c += 3)
      for (std::size_t k = 0; k < 3; ++k)
        row[k] += bv[l] * c[k], row_v[k] += dbv[l] * c[k], row_vv[k] += ddbv[l] * c[k];
    for (std::size_t k = 0; k < 3; ++k) {
      j.p[k] += bu[i] * row[k], j.u[k] += dbu[i] * row[k], j.uu[k] += ddbu[i] * row[k];
      j.v[k] += bu[i] * row_v[k], j.uv[k] += dbu[i] * row_v[k], j.vv[k] += bu[i] * row_vv[k];
    }
  }
  for (std::size_t k = 0; k < 3; ++k) j.p[k] += t.centre[k];
  return j;
}

// The point at (u, v), then Newton on the gradient of |S - q|^2 / 2 within the unit square from there (Gauss-Newton
// where the Hessian is not positive definite, off a minimum): a root of the conditions is already a foot point (the
// steps change nothing), a root the solver located only to a cluster of cells converges onto the foot point, and a
// cell of a continuum of foot points (a query on an axis of symmetry) moves onto the continuum. The end is kept when
// it is nearer, or as near within rounding and its gradient smaller: at a minimum the distance is second order in
// the error (1e-8 off changes it by 1e-16), so only the gradient tells the better point there.
ClosestPoint settle(const PatchTerms& t, std::int64_t patch, const Vec3& q, double u, double v) {
  // A parameter on a side of the square that the gradient (or the step dx) pushes beyond it is held there: its
  // component of the gradient is no error (the returned norm leaves it out), and Newton moves the other one alone.
  auto outwards = [](double x, double gx, double dx) {
    return (x <= 0 && (gx > 0 || dx < 0)) || (x >= 1 && (gx < 0 || dx > 0));
  };
  auto gradient = [&](const Jet2& j, double a, double b, double* g) {
    g[0] = g[1] = 0;
    for (std::size_t k = 0; k < 3; ++k) g[0] += j.u[k] * (j.p[k] - q[k]), g[1] += j.v[k] * (j.p[k] - q[k]);
    return std::hypot(outwards(a, g[0], 0) ? 0.0 : g[0], outwards(b, g[1], 0) ? 0.0 : g[1]);
  };
  const Jet2 start = jet2(t, u, v);
  double g[2];
  const double g_start = gradient(start, u, v, g);
  ClosestPoint best{patch, u, v, start.p, distance(start.p, q)};
  double a = u, b = v;
  Jet2 j = start;
  double g_end = g_start;
  for (int it = 0; it < 24; ++it) {
    double h[3] = {0, 0, 0}, w[3] = {0, 0, 0};
    for (std::size_t k = 0; k < 3; ++k) {
      const double r = j.p[k] - q[k];
      h[0] += j.u[k] * j.u[k], h[1] += j.u[k] * j.v[k], h[2] += j.v[k] * j.v[k];
      w[0] += r * j.uu[k], w[1] += r * j.uv[k], w[2] += r * j.vv[k];
    }
    const double scale = h[0] * h[2] + 1e-300;
    // Along a side, the exact second derivative where it is positive (Gauss-Newton converges only linearly when the
    // query lies off the surface, 24 steps short of the last bits), whatever the other direction's curvature.
    const double along[2] = {h[0] + w[0] > 0 ? h[0] + w[0] : h[0], h[2] + w[2] > 0 ? h[2] + w[2] : h[2]};
    if (h[0] + w[0] > 0 && (h[0] + w[0]) * (h[2] + w[2]) - (h[1] + w[1]) * (h[1] + w[1]) > 1e-30 * scale)
      for (int k = 0; k < 3; ++k) h[k] += w[k];
    const double det = h[0] * h[2] - h[1] * h[1];
    const bool solvable = std::abs(det) > 1e-30 * scale;
    const double da = solvable ? -(h[2] * g[0] - h[1] * g[1]) / det : 0,
                 db = solvable ? -(h[0] * g[1] - h[1] * g[0]) / det : 0;
    // On a side that the step or the gradient pushes beyond: Newton along the side (the coupled step, clamped, would
    // stop where the side's own slope is not zero).
    const bool hold_a = outwards(a, g[0], da), hold_b = outwards(b, g[1], db);
    double na = a, nb = b;
    if (hold_a && hold_b) break;  // a corner pushed outwards on both sides
    if (hold_a || hold_b) {
      const double curvature = along[hold_a ? 1 : 0];
      if (!(curvature > 0)) break;
      if (hold_a)
        nb = std::clamp(b - g[1] / curvature, 0.0, 1.0);
      else
        na = std::clamp(a - g[0] / curvature, 0.0, 1.0);
    } else {
      if (!solvable) break;
      na = std::clamp(a + da, 0.0, 1.0);
      nb = std::clamp(b + db, 0.0, 1.0);
    }
    if (na == a && nb == b) break;
    const bool last = std::abs(na - a) + std::abs(nb - b) <= 1e-15;  // converged: this step is the rounding's
    a = na, b = nb;
    j = jet2(t, a, b);
    g_end = gradient(j, a, b, g);
    if (last) break;
  }
  const double d = distance(j.p, q);
  const double slack = 4e-16 * (best.distance + std::max({std::abs(q[0]), std::abs(q[1]), std::abs(q[2])}));
  if (d < best.distance || (d <= best.distance + slack && g_end < g_start)) best = {patch, a, b, j.p, d};
  return best;
}

// Nearer, or as near on a lower patch index: the same answer whatever the order candidates come in.
bool better(const ClosestPoint& a, const ClosestPoint& b) {
  return a.distance < b.distance || (a.distance == b.distance && a.patch < b.patch);
}

void check(const std::vector<BezierSurface>& patches, const std::vector<Vec3>& queries) {
  solver::check_patch_set(patches, queries.size(), "closest points", "queries");
  for (std::size_t i = 0; i < queries.size(); ++i)
    for (double x : queries[i])
      if (!std::isfinite(x))
        throw Error(ErrorKind::InvalidArgument, "closest points: query " + std::to_string(i) + " is not finite");
}

}  // namespace

ClosestPointsResult closest_points(const std::vector<BezierSurface>& patches,
                                   const std::vector<std::array<double, 3>>& queries, const SolverOptions& options) {
  check(patches, queries);
  ClosestPointsResult out;
  out.points.resize(queries.size());
  if (queries.empty()) return out;
  const int threads = cpu_thread_count(options.threads);
  core::RegionErrors errors;
  // (Loops over a few items stay on the calling thread: waking the others costs more, on a loaded machine
  // milliseconds.)
  static solver::PreparedPatches<PatchTerms> prepared;
  const auto kept = prepared.get(patches, threads, patch_terms);
  const std::vector<PatchTerms>& terms = *kept;

  // Per query: the nearest corner, a bound on the distance from the nearest sample (a point on the surface, so the
  // nearest point is no farther), and the patches and edges whose boxes come within it; each such patch gives its
  // interior system and each such edge one more.
  struct Task {
    std::size_t query, patch;
    int edge;  // -1: the interior
  };
  std::vector<std::vector<Task>> tasks_of(queries.size());
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads) if (queries.size() > 64)
  for (std::size_t i = 0; i < queries.size(); ++i)
    errors.capture([&] {
      const Vec3& q = queries[i];
      ClosestPoint& best = out.points[i];  // the nearest corner, or a nearer point found from the nearest sample
      best.distance = std::numeric_limits<double>::infinity();
      // The patches nearest by box first, so that the nearest sample so far rules out the rest early (squared
      // distances: the order is the same without the roots).
      std::vector<std::pair<double, std::size_t>>& order = patch_order();
      order.resize(terms.size());
      for (std::size_t p = 0; p < terms.size(); ++p) order[p] = {box_distance2(q, terms[p].lo, terms[p].hi), p};
      std::sort(order.begin(), order.end());
      double nearest2 = std::numeric_limits<double>::infinity();
      std::size_t near_patch = 0, near_sample = 0;
      for (const auto& [box2, p] : order) {
        if (box2 > nearest2) break;
        for (std::size_t s = 0; s < terms[p].samples.size(); ++s) {
          const double d2 = distance2(terms[p].samples[s], q);
          // (ties, as on the seams, to the lowest patch: the sample an index-order scan finds)
          if (d2 < nearest2 || (d2 == nearest2 && p < near_patch)) nearest2 = d2, near_patch = p, near_sample = s;
        }
      }
      const double nearest = std::sqrt(nearest2);
      for (std::size_t p = 0; p < terms.size(); ++p)
        for (std::size_t a : {std::size_t(0), kSide - 1})
          for (std::size_t b : {std::size_t(0), kSide - 1}) {
            const Vec3& corner = terms[p].samples[a * kSide + b];
            const ClosestPoint c{std::int64_t(p), double(a) / (kSide - 1), double(b) / (kSide - 1), corner,
                                 distance(corner, q)};
            if (better(c, best)) best = c;
          }
      // Down from the nearest sample to the bottom of its basin: usually the answer, and at least a tight bound.
      const ClosestPoint settled =
          settle(terms[near_patch], std::int64_t(near_patch), q, double(near_sample / kSide) / (kSide - 1),
                 double(near_sample % kSide) / (kSide - 1));
      if (better(settled, best)) best = settled;
      // Patches (and edges) that may come nearer than that: a sub-patch's box, or the edge's, within the bound.
      // (with room for the rounding of boxes and points, relative to the coordinates)
      const double bound = std::min(nearest, settled.distance) * (1 + 1e-9) +
                           1e-13 * (1 + std::max({std::abs(q[0]), std::abs(q[1]), std::abs(q[2])}));
      const double bound2 = bound * bound;
      for (std::size_t p = 0; p < terms.size(); ++p) {
        const PatchTerms& pt = terms[p];
        if (box_distance2(q, pt.lo, pt.hi) > bound2) continue;
        bool near = false;
        for (const auto& box : pt.piece_boxes) near = near || box_distance2(q, box[0], box[1]) <= bound2;
        if (!near) continue;
        tasks_of[i].push_back({i, p, -1});
        for (int e = 0; e < int(pt.edges.size()); ++e)
          if (box_distance2(q, pt.edges[std::size_t(e)].lo, pt.edges[std::size_t(e)].hi) <= bound2)
            tasks_of[i].push_back({i, p, e});
      }
    });
  errors.rethrow();
  std::vector<Task> tasks;
  for (auto& t : tasks_of) tasks.insert(tasks.end(), t.begin(), t.end());
  tasks_of.clear();
  tasks_of.shrink_to_fit();

  {
    // The systems' coefficients (and the solver's cells, a few times that) must fit before they are made.
    double bytes = 0;
    for (const PatchTerms& pt : terms) bytes = std::max(bytes, double(pt.dot_u.coef.size() + pt.dot_v.coef.size()));
    core::check_host_allocation(std::uint64_t(4 * 8 * bytes * double(tasks.size())),
                                "closest points: " + std::to_string(tasks.size()) + " systems");
  }
  std::vector<std::vector<BernsteinPoly>> systems(tasks.size());
  // Static, as release_in_parallel frees them: each thread frees what it made, into its own malloc arena.
#pragma omp parallel for schedule(static) num_threads(threads) if (tasks.size() >= 256)
  for (std::size_t k = 0; k < tasks.size(); ++k)
    errors.capture([&] {
      const Task& t = tasks[k];
      const PatchTerms& pt = terms[t.patch];
      const Vec3& q = queries[t.query];
      // Moved in, not listed in braces: an initializer list's elements are copied (two more heap blocks each).
      std::vector<BernsteinPoly>& system = systems[k];
      if (t.edge < 0) {
        system.reserve(2);
        system.push_back(condition(pt.dot_u, pt.su, q, pt.centre));
        system.push_back(condition(pt.dot_v, pt.sv, q, pt.centre));
      } else {
        const PatchTerms::Edge& e = pt.edges[std::size_t(t.edge)];
        system.push_back(condition(e.dot, e.tangent, q, pt.centre));
      }
    });
  errors.rethrow();
  std::vector<SolveResult> solved = solve_systems(systems, options);
  core::release_in_parallel(systems, threads);
  out.systems = std::int64_t(tasks.size());
  for (const SolveResult& r : solved)
    if (r.status != "complete") {
      out.status = r.status;
      break;
    }

  // Every root (and the centre of every unresolved region) becomes a point on its patch; the nearest wins. Tasks
  // come grouped by query, so each query's run is settled by one thread.
  std::vector<std::size_t> first(queries.size() + 1, tasks.size());
  for (std::size_t k = tasks.size(); k-- > 0;) first[tasks[k].query] = k;
  for (std::size_t i = queries.size(); i-- > 0;) first[i] = std::min(first[i], first[i + 1]);
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads) if (queries.size() > 64)
  for (std::size_t i = 0; i < queries.size(); ++i)
    errors.capture([&] {
      ClosestPoint& best = out.points[i];
      const Vec3& q = queries[i];
      for (std::size_t k = first[i]; k < first[i + 1]; ++k) {
        const Task& t = tasks[k];
        const PatchTerms& pt = terms[t.patch];
        // A root proved single (and refined by Newton) is a foot point already: Gauss-Newton from it would move it
        // by a few units in the last place. Other roots (tangent clusters, centres of regions), on an edge too,
        // settle first.
        auto offer = [&](const std::vector<double>& x, bool proved) {
          ClosestPoint c;
          if (t.edge < 0 && proved) {
            Vec3 p;
            pt.jet(x[0], x[1], p, nullptr, nullptr);
            for (int d = 0; d < 3; ++d) p[std::size_t(d)] += pt.centre[std::size_t(d)];
            c = {std::int64_t(t.patch), x[0], x[1], p, distance(p, q)};
          } else if (t.edge < 0) {
            c = settle(pt, std::int64_t(t.patch), q, x[0], x[1]);
          } else {  // a foot point along the edge (the interior's own system finds those inside)
            const PatchTerms::Edge& e = pt.edges[std::size_t(t.edge)];
            const double uv[2] = {e.along_u ? x[0] : e.at, e.along_u ? e.at : x[0]};
            if (proved) {
              c = {std::int64_t(t.patch), uv[0], uv[1], pt.point(uv), 0};
              c.distance = distance(c.point, q);
            } else {  // held on the edge while the gradient points off the patch: Newton along it
              c = settle(pt, std::int64_t(t.patch), q, uv[0], uv[1]);
            }
          }
          if (better(c, best)) best = c;
        };
        for (const Root& r : solved[k].roots) offer(r.x, r.proved_single);
        for (const SolutionRegion& g : solved[k].regions) {
          std::vector<double> mid(g.lo.size());
          for (std::size_t d = 0; d < mid.size(); ++d) mid[d] = 0.5 * (g.lo[d] + g.hi[d]);
          offer(mid, false);
        }
      }
    });
  errors.rethrow();
  core::release_in_parallel(solved, threads);
  return out;
}

}  // namespace parasurf
