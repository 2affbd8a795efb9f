// Test entry: prints the random seed of this run (PARASURF_TEST_SEED reproduces it) and the device situation; the
// helpers of support.hpp that need gtest's state.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>

#include "support.hpp"

std::string parasurf::test::temp_path(const std::string& name) {
  const testing::TestInfo* t = testing::UnitTest::GetInstance()->current_test_info();
  const std::string test = t ? std::string(t->test_suite_name()) + "." + t->name() : "global";
  return testing::TempDir() + "/parasurf-" + std::to_string(::getpid()) + "-" + test + "-" + name;
}

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::printf("[parasurf] test seed %llu (set PARASURF_TEST_SEED to reproduce)\n",
              (unsigned long long)parasurf::test::run_seed());
  if (!parasurf::cuda_available())
    std::printf("[parasurf] CUDA tests skip: %s\n", parasurf::cuda_unavailable_reason().c_str());
  return RUN_ALL_TESTS();
}
