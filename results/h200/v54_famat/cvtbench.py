"""Issue cost on an H200 SM of the instructions fp16 pieces add (per warp instruction, cycles a sub-partition, from
clock64 over a loop with 8 independent chains a thread and W warps a block, one block an SM): FADD (reference),
F2FP pack (cvt.rn.f16x2.f32, __floats2half2_rn), HADD2.F32 unpack (__half22float2), and the TF32 split's integer ops."""
import torch
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
#include <cuda_fp16.h>
#include <stdint.h>
template <int KIND>
__global__ void bench(float* out, long long* cyc, int iters, float seed) {
  float x[8]; uint32_t u[8];
  for (int j = 0; j < 8; ++j) { x[j] = seed + threadIdx.x * 1e-3f + j; u[j] = __float_as_uint(x[j]); }
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (KIND == 0) x[j] = x[j] + 1.0001f;                                  // FADD
      if (KIND == 1) {                                                        // F2FP pack
        __half2 h = __floats2half2_rn(x[j], x[(j + 1) & 7]);
        u[j] ^= *reinterpret_cast<uint32_t*>(&h);
        x[j] = __uint_as_float(u[j] & 0x3f7fffffu);
      }
      if (KIND == 2) {                                                        // HADD2.F32 unpack
        __half2 h = *reinterpret_cast<__half2*>(&u[j]);
        float2 f = __half22float2(h);
        u[j] = __float_as_uint(f.x) ^ __float_as_uint(f.y) ^ (u[j] >> 1);
      }
      if (KIND == 3) u[j] = ((u[j] + 0x1000u) & 0xffffe000u) ^ (u[j] >> 3);  // IADD + LOP3 (TF32 split's)
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float acc = 0.f;
  for (int j = 0; j < 8; ++j) acc += x[j] + __uint_as_float(u[j]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}
torch::Tensor run(int kind, int warps, int iters) {
  auto out = torch::empty({132 * warps * 32}, torch::dtype(torch::kFloat32).device(torch::kCUDA));
  auto cyc = torch::empty({132}, torch::dtype(torch::kInt64).device(torch::kCUDA));
  void (*k)(float*, long long*, int, float) = kind == 0 ? bench<0> : kind == 1 ? bench<1> : kind == 2 ? bench<2> : bench<3>;
  k<<<132, warps * 32>>>(out.data_ptr<float>(), (long long*)cyc.data_ptr<int64_t>(), iters, 1.5f);
  return cyc;
}
"""
ext = load_inline("cvtbench", cpp_sources="torch::Tensor run(int kind, int warps, int iters);", cuda_sources=SRC,
                  functions=["run"], extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"])
names = ["FADD", "F2FP pack + 2 int", "HADD2.F32 unpack + 3 int", "IADD+LOP3 (+SHF, LOP3)"]
for kind in range(4):
    for warps in (8, 16, 32):
        ext.run(kind, warps, 100)
        cyc = ext.run(kind, warps, 2000).float().median().item()
        per = cyc / (2000 * 8) / (warps / 4)  # cycles per instruction group per warp on one sub-partition
        print(f"{names[kind]:28s} warps {warps:2d}: {cyc:10.0f} cycles, {per:6.2f} cycles per group per warp", flush=True)
