// How long CUDA takes to start, alone and with other processes or threads at once (issue 8: MPI ranks, one per GPU).
//   nvcc -O2 -std=c++17 scripts/cuda-start-probe.cu -o cuda-start-probe -lcuda
//   CUDA_VISIBLE_DEVICES=0 ./cuda-start-probe proc          one process
//   r=$(date +%s.%N); for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i ./cuda-start-probe proc $r & done; wait
//   ./cuda-start-probe threads                              one thread per visible GPU in one process
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>
#include <string>
static double wall() { timespec t; clock_gettime(CLOCK_REALTIME, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
__global__ void touch(int* p) { p[threadIdx.x] = threadIdx.x; }
static void one(int dev, const char* tag, double ref) {
  double t0 = wall();
  cuInit(0);
  double t1 = wall();
  cudaSetDevice(dev);
  cudaFree(nullptr);
  double t2 = wall();
  void* d = nullptr; cudaMalloc(&d, 1ull << 30);
  double t3 = wall();
  void* h = nullptr; cudaMallocHost(&h, 256ull << 20);
  double t4 = wall();
  touch<<<1, 32>>>((int*)d); cudaDeviceSynchronize();
  double t5 = wall();
  std::printf("%s dev %d: start %.3f init %.3f ctx %.3f malloc1G %.3f host256M %.3f kernel %.3f  end %.3f  (%s)\n", tag, dev, t0 - ref,
              t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - ref, cudaGetErrorString(cudaGetLastError()));
  cudaFree(d); cudaFreeHost(h);
}
int main(int argc, char** argv) {
  double ref = argc > 2 ? std::atof(argv[2]) : wall();
  std::string mode = argc > 1 ? argv[1] : "proc";
  if (mode == "threads") {
    int n = 0; cudaGetDeviceCount(&n);  // note: this inits the driver first
    std::vector<std::thread> ts;
    for (int i = 0; i < n; ++i) ts.emplace_back(one, i, "thread", ref);
    for (auto& t : ts) t.join();
  } else {
    one(0, "proc", ref);
  }
}
