"""mma.sync.m16n8k8 tf32 on this GPU: cycles per instruction in one dependent chain (latency) and with 4 or 8
independent accumulators in a warp, for 1, 2, 4 and 8 warps per SM sub-partition (throughput).
    python mmabench.py"""
import torch
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
#include <cstdint>
template <int NACC>
__global__ void mma_bench(float* out, long long* cycles, int iters) {
  float c[NACC][4];
  for (int a = 0; a < NACC; ++a) for (int e = 0; e < 4; ++e) c[a][e] = 0.f;
  uint32_t x[4], b0 = __float_as_uint(1e-3f * threadIdx.x), b1 = __float_as_uint(2e-3f);
  for (int e = 0; e < 4; ++e) x[e] = __float_as_uint(1e-3f * (e + 1));
  __syncthreads();
  const long long t0 = clock64();
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int a = 0; a < NACC; ++a)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                   : "+f"(c[a][0]), "+f"(c[a][1]), "+f"(c[a][2]), "+f"(c[a][3])
                   : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(b0), "r"(b1));
  }
  float s = 0.f;
  for (int a = 0; a < NACC; ++a) for (int e = 0; e < 4; ++e) s += c[a][e];
  const long long t1 = clock64();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if ((threadIdx.x & 31) == 0) cycles[blockIdx.x * 32 + threadIdx.x / 32] = t1 - t0;
}
std::vector<double> run(int nacc, int warps, int iters) {
  auto out = torch::zeros({132 * warps * 32}, torch::dtype(torch::kFloat32).device(torch::kCUDA));
  auto cyc = torch::zeros({132 * 32}, torch::dtype(torch::kInt64).device(torch::kCUDA));
  for (int rep = 0; rep < 2; ++rep) {
    if (nacc == 1) mma_bench<1><<<132, warps * 32>>>(out.data_ptr<float>(), reinterpret_cast<long long*>(cyc.data_ptr<int64_t>()), iters);
    if (nacc == 4) mma_bench<4><<<132, warps * 32>>>(out.data_ptr<float>(), reinterpret_cast<long long*>(cyc.data_ptr<int64_t>()), iters);
    if (nacc == 8) mma_bench<8><<<132, warps * 32>>>(out.data_ptr<float>(), reinterpret_cast<long long*>(cyc.data_ptr<int64_t>()), iters);
  }
  auto c = cyc.cpu();
  double mx = 0;
  for (int i = 0; i < 132 * 32; ++i) mx = std::max(mx, (double)c.data_ptr<int64_t>()[i]);
  return {mx / ((double)iters * nacc)};
}
"""
CPP = "std::vector<double> run(int nacc, int warps, int iters);"
ext = load_inline("mma_bench_ext", cpp_sources=[CPP], cuda_sources=[SRC], functions=["run"],
                  extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)
print(torch.cuda.get_device_name(), torch.__version__)
for warps in (1, 4, 8, 16, 32):
    for nacc in (1, 4, 8):
        cyc = ext.run(nacc, warps, 2048)[0]
        per_smsp = max(1, warps // 4)
        print(f"warps/SM {warps:2d} ({per_smsp} per sub-partition) accumulators/warp {nacc}: {cyc:6.1f} cycles per mma a warp"
              f" -> {cyc / per_smsp:5.1f} cycles per mma per sub-partition", flush=True)
