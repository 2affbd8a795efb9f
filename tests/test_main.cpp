// Test entry: prints the random seed of this run (PARASURF_TEST_SEED reproduces it) and the device situation.
#include <gtest/gtest.h>

#include <cstdio>

#include "support.hpp"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::printf("[parasurf] test seed %llu (set PARASURF_TEST_SEED to reproduce)\n",
              (unsigned long long)parasurf::test::run_seed());
  if (!parasurf::cuda_available())
    std::printf("[parasurf] CUDA tests skip: %s\n", parasurf::cuda_unavailable_reason().c_str());
  return RUN_ALL_TESTS();
}
