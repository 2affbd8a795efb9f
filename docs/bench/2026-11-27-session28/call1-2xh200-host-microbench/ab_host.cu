// AB-ONLY microbench: host mesh sizing and download options (not part of the repository)
#include <cuda_runtime.h>
#include <omp.h>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include <cstdint>
using Clock = std::chrono::steady_clock;
static double ms(Clock::time_point a) { return std::chrono::duration<double, std::milli>(Clock::now() - a).count(); }
static void populate(void* p, size_t bytes, bool huge, int threads) {
  uintptr_t from = (uintptr_t(p) + 4095) & ~uintptr_t(4095), to = (uintptr_t(p) + bytes) & ~uintptr_t(4095);
  if (huge) madvise((void*)from, to - from, MADV_HUGEPAGE);
  const uintptr_t H = 2u << 20; uintptr_t chunk = ((to - from) / threads + H - 1) & ~(H - 1);
#pragma omp parallel for num_threads(threads)
  for (int k = 0; k < threads; ++k) { uintptr_t a = from + k * chunk, b = std::min(to, a + chunk); if (a < b) madvise((void*)a, b - a, 23); }
}
static void pcopy(char* to, const char* from, size_t bytes, int threads) {
  size_t chunk = (bytes + threads - 1) / threads;
#pragma omp parallel for num_threads(threads)
  for (int k = 0; k < threads; ++k) { size_t a = k * chunk, b = std::min(bytes, a + chunk); if (a < b) memcpy(to + a, from + a, b - a); }
}
int main(int argc, char** argv) {
  const size_t V = 17800000, T = 35600000;
  const size_t bp = 3 * V * 4, bt = 3 * T * 4;
  int threads = omp_get_max_threads();
  int dev = argc > 1 ? atoi(argv[1]) : 0;
  cudaSetDevice(dev);
  char* d; cudaMalloc(&d, bt); cudaMemset(d, 1, bt);
  cudaStream_t s; cudaStreamCreate(&s);
  const size_t SC = size_t(32) << 20; char* st[2]; cudaMallocHost(&st[0], SC); cudaMallocHost(&st[1], SC);
  cudaEvent_t ev[2]; cudaEventCreate(&ev[0]); cudaEventCreate(&ev[1]);
  printf("threads %d device %d\n", threads, dev);
  for (int round = 0; round < 4; ++round) {
    for (int mode = 0; mode < 4; ++mode) {
      // mode 0: huge prefault + resize; 1: prefault no huge + resize; 2: no prefault, resize only; 3: huge prefault, no resize (reserve only)
      auto t0 = Clock::now();
      std::vector<float> pos, nor; std::vector<uint32_t> tri;
      pos.reserve(3 * V); nor.reserve(3 * V); tri.reserve(3 * T);
      double talloc = ms(t0); t0 = Clock::now();
      if (mode != 2) { populate(pos.data(), bp, mode != 1, threads); populate(nor.data(), bp, mode != 1, threads); populate(tri.data(), bt, mode != 1, threads); }
      double tpre = ms(t0); t0 = Clock::now();
      if (mode != 3) {
        std::jthread a([&] { pos.resize(3 * V); }); std::jthread b([&] { nor.resize(3 * V); }); tri.resize(3 * T);
      }
      double tres; { tres = ms(t0); }
      // downloads: pageable straight
      char* dst = mode != 3 ? (char*)tri.data() : (char*)tri.data();
      cudaDeviceSynchronize(); t0 = Clock::now();
      cudaMemcpy(dst, d, bt, cudaMemcpyDeviceToHost);
      double tpage = ms(t0);
      // pinned staging, pipelined, host copy with all threads
      t0 = Clock::now();
      size_t n = (bt + SC - 1) / SC;
      for (size_t i = 0; i < n + 1; ++i) {
        if (i < n) { size_t off = i * SC, len = std::min(SC, bt - off); cudaMemcpyAsync(st[i & 1], d + off, len, cudaMemcpyDeviceToHost, s); cudaEventRecord(ev[i & 1], s); }
        if (i > 0) { size_t j = i - 1, off = j * SC, len = std::min(SC, bt - off); cudaEventSynchronize(ev[j & 1]); pcopy(dst + off, st[j & 1], len, threads); }
      }
      double tpin = ms(t0);
      t0 = Clock::now();
      size_t n2 = (bt + SC - 1) / SC;
      for (size_t i = 0; i < n2 + 1; ++i) {
        if (i < n2) { size_t off = i * SC, len = std::min(SC, bt - off); cudaMemcpyAsync(st[i & 1], d + off, len, cudaMemcpyDeviceToHost, s); cudaEventRecord(ev[i & 1], s); }
        if (i > 0) { size_t j = i - 1, off = j * SC, len = std::min(SC, bt - off); cudaEventSynchronize(ev[j & 1]); pcopy(dst + off, st[j & 1], len, 4); }
      }
      double tpin4 = ms(t0);
      // register destination
      t0 = Clock::now();
      cudaError_t e = cudaHostRegister(dst, bt, cudaHostRegisterDefault);
      double treg = ms(t0); t0 = Clock::now();
      cudaMemcpy(dst, d, bt, cudaMemcpyDeviceToHost);
      double tregcopy = ms(t0); t0 = Clock::now();
      if (e == cudaSuccess) cudaHostUnregister(dst);
      double tunreg = ms(t0);
      t0 = Clock::now();
      { std::vector<float> a2, b2; std::vector<uint32_t> c2; a2 = std::move(pos); b2 = std::move(nor); c2 = std::move(tri); }
      double tfree = ms(t0);
      printf("round %d mode %d: alloc %.1f prefault %.1f resize %.1f | tri %.0f MB D2H pageable %.1f pinned-staged(%dthr) %.1f pinned-staged(4thr) %.1f | register %.1f (%s) copy %.1f unregister %.1f | free %.1f ms\n",
             round, mode, talloc, tpre, tres, bt / 1e6, tpage, threads, tpin, tpin4, treg, cudaGetErrorString(e), tregcopy, tunreg, tfree);
      fflush(stdout);
    }
  }
  // pinned raw D2H bandwidth
  char* big; cudaMallocHost(&big, bt); auto t0 = Clock::now(); cudaMemcpy(big, d, bt, cudaMemcpyDeviceToHost); printf("D2H into pinned %.1f ms\n", ms(t0));
  t0 = Clock::now(); cudaMemcpy(big, d, bt, cudaMemcpyDeviceToHost); printf("D2H into pinned %.1f ms\n", ms(t0));
}
