// Surface Nets math shared by the CPU loops and the CUDA kernels: the padded label grid, which cells carry a
// vertex, the quads of a sample row, and one smoothing step. Gibson 1998; multi-label after Frisken 2022;
// λ|μ smoothing after Taubin 1995.
#pragma once
#include <cstdint>

#include "core/hd.hpp"

namespace parasurf::nets {

// Labels of an nx · ny · nz grid with the background label outside it. Cells (2×2×2 samples) have lower corners
// in [−1, n − 1] per axis and are stored shifted by one: (nx + 1)(ny + 1)(nz + 1) of them.
struct Grid {
  const std::int32_t* labels;
  std::int64_t nx, ny, nz;
  std::int32_t background;
  const std::int32_t* excluded;  // labels whose faces are dropped
  int excluded_count;

  PS_HD const std::int32_t* row(std::int64_t j, std::int64_t k) const {
    return (j < 0 || k < 0 || j >= ny || k >= nz) ? nullptr : labels + (k * ny + j) * nx;
  }
  PS_HD std::int32_t value(const std::int32_t* r, std::int64_t i) const {
    return (r && i >= 0 && i < nx) ? r[i] : background;
  }
  PS_HD std::int64_t cell_rows() const { return (ny + 1) * (nz + 1); }
  PS_HD std::int64_t sample_rows() const { return (ny + 2) * (nz + 2); }
  PS_HD std::int64_t cell_index(std::int64_t i, std::int64_t j, std::int64_t k) const {
    return ((k + 1) * (ny + 1) + j + 1) * (nx + 1) + i + 1;
  }
  PS_HD bool is_excluded(std::int32_t l) const {
    for (int e = 0; e < excluded_count; ++e)
      if (excluded[e] == l) return true;
    return false;
  }
};

// Cell row r = (j, k) with j, k in [−1, n − 1]: its four sample rows.
struct CellRow {
  const std::int32_t* rows[4];
  std::int64_t j, k;
};
PS_HD CellRow cell_row(const Grid& g, std::int64_t r) {
  CellRow c;
  c.j = r % (g.ny + 1) - 1;
  c.k = r / (g.ny + 1) - 1;
  c.rows[0] = g.row(c.j, c.k);
  c.rows[1] = g.row(c.j + 1, c.k);
  c.rows[2] = g.row(c.j, c.k + 1);
  c.rows[3] = g.row(c.j + 1, c.k + 1);
  return c;
}

// Whether cell i of a cell row has samples of more than one label (so it carries a vertex), and how many
// distinct labels it has (three or more: a junction, whose vertex keeps its place among junctions).
PS_HD int cell_labels(const Grid& g, const CellRow& c, std::int64_t i) {
  std::int32_t v[8];
  for (int q = 0; q < 8; ++q) v[q] = g.value(c.rows[q >> 1], i + (q & 1));
  int n = 0;
  for (int a = 0; a < 8; ++a) {
    bool seen = false;
    for (int b = 0; b < a; ++b) seen = seen || v[b] == v[a];
    n += seen ? 0 : 1;
  }
  return n;
}

// The quads of sample row r = (j, k), j and k in [−1, n]: for each sample i in [−1, nx] and axis a = x, y, z,
// the edge to the next sample along a when the two labels differ. `emit(i, j, k, a, here, there)`.
template <class Emit>
PS_HD void row_quads(const Grid& g, std::int64_t r, std::int64_t i, Emit&& emit) {
  const std::int64_t j = r % (g.ny + 2) - 1, k = r / (g.ny + 2) - 1;
  // x edges need j, k on the grid; y edges k and i; z edges i and j (else both ends are background).
  const bool jk = j >= 0 && j < g.ny && k >= 0 && k < g.nz, y_ok = k >= 0 && k < g.nz && j < g.ny,
             z_ok = j >= 0 && j < g.ny && k < g.nz, i_real = i >= 0 && i < g.nx;
  const std::int32_t* here_row = g.row(j, k);
  const std::int32_t here = g.value(here_row, i);
  const std::int32_t there[3] = {jk && i < g.nx ? g.value(here_row, i + 1) : here,
                                 y_ok && i_real ? g.value(g.row(j + 1, k), i) : here,
                                 z_ok && i_real ? g.value(g.row(j, k + 1), i) : here};
  for (int a = 0; a < 3; ++a) {
    if (there[a] == here || (g.excluded_count && (g.is_excluded(here) || g.is_excluded(there[a])))) continue;
    emit(i, j, k, a, here, there[a]);
  }
}

// The four cells around the edge from sample (i, j, k) along axis a, counter-clockwise about +a; the quad is
// wound so that its normal points from the larger label into the smaller.
PS_HD void quad_cells(const Grid& g, std::int64_t i, std::int64_t j, std::int64_t k, int a, std::int32_t here,
                      std::int32_t there, std::int64_t* cells) {
  const int u = (a + 1) % 3, v = (a + 2) % 3;
  const int du[4] = {0, 1, 1, 0}, dv[4] = {0, 0, 1, 1};
  const bool forward = here > there;  // the normal runs +a from `here` into `there`
  for (int c = 0; c < 4; ++c) {
    std::int64_t p[3] = {i, j, k};
    p[u] -= du[c];
    p[v] -= dv[c];
    cells[forward ? c : 3 - c] = g.cell_index(p[0], p[1], p[2]);
  }
}

// Exact float steps on both backends (no fused multiply-add), so that CPU and GPU smooth alike to the bit.
PS_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PS_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// One Jacobi step for vertex v: towards (factor > 0) or away from (factor < 0) the mean of its neighbours, kept
// within `limit` of its cell centre per axis. Junction vertices average only over junction neighbours.
PS_HD void smooth_vertex(std::uint32_t v, const float* pos, const float* centre, const std::uint64_t* first,
                         const std::uint32_t* neighbours, const std::uint8_t* junction, float factor, float limit,
                         float* out) {
  float sum[3] = {0, 0, 0};
  int n = 0;
  for (std::uint64_t e = first[v]; e < first[v + 1]; ++e) {
    const std::uint32_t w = neighbours[e];
    if (junction[v] && !junction[w]) continue;  // junction curves stay sharp
    for (int a = 0; a < 3; ++a) sum[a] = add(sum[a], pos[3 * std::uint64_t(w) + a]);
    ++n;
  }
  for (int a = 0; a < 3; ++a) {
    const float x = pos[3 * std::uint64_t(v) + a];
    const float moved = n ? add(x, mul(factor, add(sum[a] / float(n), -x))) : x;
    const float c = centre[3 * std::uint64_t(v) + a];
    const float lo = add(c, -limit), hi = add(c, limit);
    out[3 * std::uint64_t(v) + a] = moved < lo ? lo : (moved > hi ? hi : moved);
  }
}

}  // namespace parasurf::nets
