// Which devices a build's CUDA architecture list runs on: cubins within a major generation, arch-specific cubins
// only on their own capability, PTX on its capability and newer; lists CMake may hold that cannot be read.
#include <gtest/gtest.h>

#include "core/cuda_arch.hpp"

namespace parasurf {
namespace {

using core::ImageMatch;
using core::match_cuda_image;

TEST(CudaArchitectures, DefaultListCoversEveryGenerationSinceTuring) {
  const char* list = "75-real,80-real,86-real,89-real,90-real,100-real,110-real,120-real,120-virtual";
  EXPECT_EQ(match_cuda_image(list, 7, 5), ImageMatch::Binary);   // T4, RTX 20
  EXPECT_EQ(match_cuda_image(list, 8, 0), ImageMatch::Binary);   // A100
  EXPECT_EQ(match_cuda_image(list, 8, 7), ImageMatch::Binary);   // Orin: the 8.6 cubin
  EXPECT_EQ(match_cuda_image(list, 8, 9), ImageMatch::Binary);   // L4, RTX 40
  EXPECT_EQ(match_cuda_image(list, 9, 0), ImageMatch::Binary);   // H100, H200
  EXPECT_EQ(match_cuda_image(list, 10, 3), ImageMatch::Binary);  // B300: the 10.0 cubin
  EXPECT_EQ(match_cuda_image(list, 12, 1), ImageMatch::Binary);  // the 12.0 cubin
  EXPECT_EQ(match_cuda_image(list, 13, 0), ImageMatch::Ptx);     // a later GPU compiles the PTX
  EXPECT_EQ(match_cuda_image(list, 7, 0), ImageMatch::None);     // V100: older than the list
}

TEST(CudaArchitectures, OneArchitectureBuildsAndTheirForms) {
  EXPECT_EQ(match_cuda_image("90", 9, 0), ImageMatch::Binary);
  EXPECT_EQ(match_cuda_image("90", 10, 0), ImageMatch::Ptx);  // "90" is cubin and PTX
  EXPECT_EQ(match_cuda_image("90-real", 10, 0), ImageMatch::None);
  EXPECT_EQ(match_cuda_image("90", 8, 9), ImageMatch::None);
  EXPECT_EQ(match_cuda_image("80-real", 9, 0), ImageMatch::None);  // a cubin never crosses a major generation
  EXPECT_EQ(match_cuda_image("80-real", 8, 6), ImageMatch::Binary);
  EXPECT_EQ(match_cuda_image("86-real", 8, 0), ImageMatch::None);  // nor runs on an older minor
  EXPECT_EQ(match_cuda_image("80-virtual", 9, 0), ImageMatch::Ptx);
  EXPECT_EQ(match_cuda_image("90a-real", 9, 0), ImageMatch::Binary);
  EXPECT_EQ(match_cuda_image("100a", 10, 3), ImageMatch::None);  // arch-specific: its own capability only
  EXPECT_EQ(match_cuda_image("100f-real", 10, 3), ImageMatch::Binary);  // family cubin
  EXPECT_EQ(match_cuda_image("75;86", 8, 9), ImageMatch::Binary);  // CMake's own separator
  EXPECT_EQ(match_cuda_image(" 75 , 90 ", 9, 0), ImageMatch::Binary);
}

TEST(CudaArchitectures, ListsOnlyATrialCanDecide) {
  for (const char* list : {"native", "all-major", "all", "", "sm_90", "90-both", "9"})
    EXPECT_EQ(match_cuda_image(list, 9, 0), ImageMatch::Unknown) << list;
}

TEST(CudaArchitectures, DescriptionNamesCubinsAndPtx) {
  EXPECT_EQ(core::describe_cuda_architectures("80-real,90-real,120"), "sm_80, 90, 120 (PTX 120)");
  EXPECT_EQ(core::describe_cuda_architectures("90"), "sm_90 (PTX 90)");
  EXPECT_EQ(core::describe_cuda_architectures("80-real"), "sm_80");
  EXPECT_EQ(core::describe_cuda_architectures("native"), "native");
}

}  // namespace
}  // namespace parasurf
