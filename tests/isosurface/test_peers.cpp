// Against the tools people use now, on the shared real volumes: VTK's vtkFlyingEdges3D and scikit-image's
// marching_cubes run (through bench/peers/iso_peers.py) on the same samples in index space; triangle counts and
// areas agree within 0.5 % (or lie between the peers where they differ more from each other). Skipped when the data or a Python with vtk and scikit-image is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "isosurface/iso_checks.hpp"
#include "parasurf/isosurface.hpp"
#include "support.hpp"

namespace parasurf {
namespace {

nlohmann::json peers(const std::string& raw, const VolumeGeometry& g, double level, std::string& why) {
  const std::string python = "/usr/bin/python3", script = std::string(PARASURF_SOURCE_DIR) + "/bench/peers/iso_peers.py";
  if (!std::filesystem::exists(python)) {
    why = python + " is missing";
    return nullptr;
  }
  char cmd[2048];
  std::snprintf(cmd, sizeof cmd, "%s %s %s %lld %lld %lld float32 %.17g 1 2>/dev/null", python.c_str(), script.c_str(),
                raw.c_str(), (long long)g.dims[0], (long long)g.dims[1], (long long)g.dims[2], level);
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  try {
    auto j = nlohmann::json::parse(out);
    for (const char* k : {"vtk_flying_edges", "skimage"})
      if (!j.contains(k) || j[k].contains("error")) {
        why = std::string(k) + " is not importable by " + python;
        return nullptr;
      }
    return j;
  } catch (const std::exception&) {
    why = "the peer script failed (numpy missing?)";
    return nullptr;
  }
}

TEST(IsosurfacePeers, SharedVolumesMatchVtkAndScikitImage) {
  struct Case {
    const char* file;
    double level;
  };
  int ran = 0;
  std::string why = "no shared volumes";
  for (const Case& c : {Case{"volumes/HeadMRVolume.mhd", 50.5}, Case{"volumes/ironProt.vtk", 127.5},
                        Case{"volumes/MR_Gd.nii.gz", 80.5}}) {
    const std::string path = test::shared_data(c.file);
    if (path.empty()) continue;
    auto src = open_volume(path);
    MemoryVolume loaded = load_volume_float(*src);
    VolumeGeometry index_space;  // unit spacing, no orientation: the peers' frame
    index_space.dims = loaded.geometry().dims;
    MemoryVolume v(index_space, VoxelType::Float32, loaded.resident_data(), c.file);
    const std::string raw = (std::filesystem::temp_directory_path() / "parasurf_peer_volume.raw").string();
    {
      std::ofstream f(raw, std::ios::binary);
      f.write(static_cast<const char*>(loaded.resident_data()),
              std::streamsize(index_space.voxel_count() * 4));
    }
    const auto j = peers(raw, index_space, c.level, why);
    std::filesystem::remove(raw);
    if (j.is_null()) break;
    for (Device d : {Device::Cpu, Device::Cuda}) {
      if (d == Device::Cuda && !cuda_available()) continue;
      IsosurfaceOptions o;
      o.levels = {c.level};
      o.device = d;
      const TriangleMesh m = extract_isosurface(v, o);
      const double area = test::iso_area(m);
      for (const char* peer : {"vtk_flying_edges", "skimage"}) {
        const double n = j[peer]["triangles"].get<double>();
        EXPECT_NEAR(double(m.triangle_count()) / n, 1.0, 0.005) << c.file << " vs " << peer << " on " << device_name(d);
      }
      // Area: within 0.5 % of both peers, or, where their case tables make them disagree by more (coarse volumes:
      // the same crossings triangulated differently), between them with 0.5 % to spare.
      const double a_vtk = j["vtk_flying_edges"]["area"].get<double>(), a_sk = j["skimage"]["area"].get<double>();
      EXPECT_GE(area, std::min(a_vtk, a_sk) * 0.995) << c.file << " on " << device_name(d);
      EXPECT_LE(area, std::max(a_vtk, a_sk) * 1.005) << c.file << " on " << device_name(d);
      if (std::fabs(a_vtk / a_sk - 1) <= 0.005) {
        EXPECT_NEAR(area / a_vtk, 1.0, 0.005) << c.file << " vs VTK on " << device_name(d);
        EXPECT_NEAR(area / a_sk, 1.0, 0.005) << c.file << " vs scikit-image on " << device_name(d);
      }
      std::printf("[peers] %s at %g on %s: %lld triangles, area %.1f; VTK %lld, %.1f; scikit-image %lld, %.1f\n", c.file,
                  c.level, device_name(d), (long long)m.triangle_count(), area,
                  j["vtk_flying_edges"]["triangles"].get<long long>(), j["vtk_flying_edges"]["area"].get<double>(),
                  j["skimage"]["triangles"].get<long long>(), j["skimage"]["area"].get<double>());
    }
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "peer comparison not run: " << why;
}

}  // namespace
}  // namespace parasurf
