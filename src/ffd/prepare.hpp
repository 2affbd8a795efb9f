// Once-per-mesh preprocessing of the three FFD methods (always in double, on the host).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "ffd/ffd_kernels.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf::ffd {

struct Prepared {
  std::vector<std::uint32_t> triangles;  // output triangles, welded
  std::vector<double> rest_positions;    // world, V x 3: where each output vertex sits before deformation
  std::vector<double> rest_normals;      // world, V x 3: the normal point FFD transforms (point, uus); for accurate the
                                         // face normal of vertices inside one surface, else 0
  // Accurate FFD only: the Bézier surfaces and, per output vertex, where to evaluate them.
  std::vector<SurfaceRecord<double>> surfaces;
  std::vector<VertexRecord<double>> records;
  std::vector<std::int64_t> record_offsets;  // V + 1
  std::int64_t control_points = 0;           // sum of (n_s+1)(n_t+1)
  // Every fan triangle of every piece: its surface, its corners in the surface's (s,t) and in world space, and the
  // total degree of the deformed plane (the exact triangular Bézier degree).
  struct PieceTriangle {
    int surface;
    int total_degree;
    double st[3][2];
    double rest[3][3];
  };
  std::vector<PieceTriangle> piece_triangles;
  // Every piece as its trimming polygon in its surface's (s,t) (convex, counter-clockwise as the face).
  struct PiecePolygon {
    int surface;
    int total_degree;
    std::vector<std::array<double, 2>> st;
  };
  std::vector<PiecePolygon> piece_polygons;
};

Prepared prepare_point(const PolygonMesh& mesh, const Lattice& lattice, FfdReport& report);
Prepared prepare_upsampled(const PolygonMesh& mesh, const Lattice& lattice, int level, FfdReport& report);
// (threads: the CPU threads that clip the faces)
Prepared prepare_accurate(const PolygonMesh& mesh, const Lattice& lattice, int level, int threads, FfdReport& report);

// Inverses of the Bernstein collocation matrices at the Chebyshev nodes, degrees 1..kMaxPieceDegree back to back
// (row a of degree n: the weights of control point a over the n+1 samples).
std::vector<double> chebyshev_inverse_table();

}  // namespace parasurf::ffd
