// What the volume readers share with readers kept in files of their own (NIfTI, VTK XML ImageData, DICOM).
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

// Throws Error(Parse) naming `path`.
[[noreturn]] void parse_fail(const std::string& path, const std::string& msg);
std::uint64_t file_size(const std::string& path);
bool ends_with(const std::string& s, const std::string& suffix);  // ignoring case

// How a data region is stored.
enum class Encoding { Raw, Deflate, Ascii };
// Opens the data region of a volume whose header `name` has been read: checks the size of uncompressed files
// against the header before any work. `offset` is a file byte for raw and ASCII data and for compressed streams;
// `inflated_skip` skips uncompressed bytes inside a compressed stream (a .nii.gz header). Samples are scaled to
// float as slope * x + inter where that is not the identity.
std::unique_ptr<VolumeSource> open_data(const std::string& name, const std::string& data_path, std::uint64_t offset,
                                        Encoding enc, VolumeGeometry g, VoxelType type, bool big_endian,
                                        std::uint64_t inflated_skip = 0, double slope = 1, double inter = 0);

std::unique_ptr<VolumeSource> open_nifti(const std::string& path);
std::unique_ptr<VolumeSource> open_vti(const std::string& path);

// A DICOM series: a folder (holding one series) or one file of it (its series, from the files beside it).
std::unique_ptr<VolumeSource> open_dicom_series(const std::string& path);
bool dicom_supported();  // whether this build reads DICOM (GDCM was found)

}  // namespace parasurf::io
