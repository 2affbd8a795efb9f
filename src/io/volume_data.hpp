// What the volume readers share with readers kept in files of their own (VTK XML ImageData).
#pragma once
#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "parasurf/volume.hpp"

namespace parasurf::io {

// Refuses empty or absurd sizes and non-finite spacing, origin or orientation (Error(Parse) naming `name`).
void check_volume_geometry(const std::string& name, VolumeGeometry& g);
// Samples stored uncompressed at `offset` of `data_path`, read slab by slab; the file's size is checked first.
std::unique_ptr<VolumeSource> raw_volume_data(const std::string& name, const std::string& data_path,
                                              std::uint64_t offset, VolumeGeometry g, VoxelType type, bool big_endian);
// Samples already decoded into memory, in the machine's byte order.
std::unique_ptr<VolumeSource> owned_volume_data(const std::string& name, VolumeGeometry g, VoxelType type,
                                                std::vector<char> bytes);

// n whitespace-separated numbers of `type` from `in`, each checked to be a number the type can hold.
std::vector<char> ascii_samples(const std::string& name, std::istream& in, std::size_t n, VoxelType type);

std::unique_ptr<VolumeSource> open_vti(const std::string& path);

// A DICOM series: a folder (holding one series) or one file of it (its series, from the files beside it).
std::unique_ptr<VolumeSource> open_dicom_series(const std::string& path);
bool dicom_supported();  // whether this build reads DICOM (GDCM was found)

}  // namespace parasurf::io
