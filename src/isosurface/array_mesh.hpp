// Marching cubes on caller arrays (scikit-image's conventions): the strided source, the per-cell passes after the
// engine (values, mask) on the host and on a GPU, and the whole-array run on a GPU.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "parasurf/array.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf::iso {

// A host array of any strides read as a volume: index (i, j, k) = array element (k, j, i), so that x, the fastest
// index, is the last array axis. Contiguous arrays need no source: they are read in place (MemoryVolume).
std::unique_ptr<VolumeSource> strided_source(const ArrayView3& view, const VolumeGeometry& geometry, int threads);

// Geometry whose world coordinates are the array's index order times spacing: the index-to-world direction is
// the axis reversal.
VolumeGeometry array_order_geometry(const ArrayView3& view, std::array<double, 3> spacing);

// The extractor's options for scikit-image's orientation on that geometry: the axis reversal mirrors the mesh, so
// the engine's orientation for the other direction is scikit-image's for this one, and scikit-image's normals point
// down the gradient whatever the direction.
IsosurfaceOptions array_order_options(const ArrayIsosurfaceOptions& options);

// After the engine, on the host, for a mask: drops the triangles of cells whose mask is 0 at their last corner (and
// the vertices only they used). With `values`: the mesh's vertex values (the engine's, IsosurfaceOptions::
// vertex_ranges) move there, and those of the vertices that lost triangles come from the triangles kept. A
// triangle's cell is the floor of its centroid in grid units (step · spacing), clamped to the grid. `volume` and
// `mask` are the stepped views.
void finish_array_mesh(const ArrayView3& volume, const ArrayView3& mask, double level, std::array<double, 3> cell_size,
                       TriangleMesh& mesh, HostVector<float>* values, int threads);

// The same on a CUDA array: the run and the passes on its GPU, the mesh left there.
ArrayMesh marching_cubes_cuda_array(const ArrayView3& volume, const ArrayIsosurfaceOptions& options);

}  // namespace parasurf::iso
