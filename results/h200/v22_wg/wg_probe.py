"""wgmma layout probe: one m64n32k8 (B in q's layout) and one m64n64k8 (B in K^T's layout), A from registers in
the assumed mma.m16n8k8 fragment order, D read back in the assumed accumulator order; exact small-integer inputs."""
import sys
import torch
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
#include <stdint.h>
namespace {
// Offsets (floats) in q's layout and in K^T's; np: the position of state column d in the permuted order.
__device__ __forceinline__ int wg_qoff(int t, int d) { return (t >> 3) * 1024 + (d >> 2) * 32 + (t & 7) * 4 + (d & 3); }
__device__ __forceinline__ int wg_np(int d) { return (d & ~7) | ((d & 4) ? 2 * (d & 3) + 1 : 2 * (d & 3)); }
__device__ __forceinline__ int wg_ktoff(int np, int t) { return (np >> 3) * 256 + (t >> 2) * 32 + (np & 7) * 4 + (t & 3); }

// Shared-memory matrix descriptor, no swizzle: start, leading (K) and stride (M/N) byte offsets, each >> 4.
__device__ __forceinline__ uint64_t wg_desc(const float* p, uint32_t lbo, uint32_t sbo) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
// st.shared / cp.async writes become visible to the tensor core's (async proxy) reads after this and a barrier.
__device__ __forceinline__ void wg_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Pins a wgmma operand's registers in program order around the fence / wait (no code): the compiler must neither
// read an accumulator before the wait nor reuse an A fragment's registers while the tensor core may still read them.
template <int N>
__device__ __forceinline__ void wg_keep(float (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(r[i][e])::"memory");
}
template <int N>
__device__ __forceinline__ void wg_keep(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}

// d (64 x 32 per warpgroup, 16 registers) += a (64 x 8, registers) * b (8 x 32, shared memory).
__device__ __forceinline__ void wg_mma_n32(float (&d)[4][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}

// d (64 x 64 per warpgroup, 32 registers) += a (64 x 8, registers) * b (8 x 64, shared memory).
__device__ __forceinline__ void wg_mma_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t bd) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1;"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),
        "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),
        "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),
        "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd));
}


__global__ void probe(const float* qm, const float* km, const float* a, float* d32, float* d64) {
  __shared__ __align__(16) float qs[4096];
  __shared__ __align__(16) float kt[4096];
  const int tid = threadIdx.x, lane = tid & 31, w4 = tid >> 5, gid = lane >> 2, tig = lane & 3;
  for (int i = tid; i < 4096; i += 128) {
    const int t = i / 128, dd = i % 128;          // qm[t][d]
    qs[wg_qoff(t, dd)] = qm[i];
    const int np = i / 32, tt = i % 32;           // km[n'][t]
    kt[wg_ktoff(np, tt)] = km[i];
  }
  wg_proxy_fence();
  __syncthreads();
  const int r = 16 * w4 + gid;
  uint32_t af[1][4] = {{__float_as_uint(a[r * 8 + tig]), __float_as_uint(a[(r + 8) * 8 + tig]),
                        __float_as_uint(a[r * 8 + tig + 4]), __float_as_uint(a[(r + 8) * 8 + tig + 4])}};
  float o32[4][4] = {};
  float o64[8][4] = {};
  wg_keep(o32); wg_keep(o64); wg_keep(af);
  wg_fence();
  wg_mma_n32(o32, af[0], wg_desc(qs + (40 >> 2) * 32, 128, 4096));
  wg_mma_n64(o64, af[0], wg_desc(kt + (64 >> 3) * 256 + (16 >> 2) * 32, 128, 1024));
  wg_commit();
  wg_wait0();
  wg_keep(o32); wg_keep(o64); wg_keep(af);
  for (int j = 0; j < 4; ++j) {
    d32[r * 32 + 8 * j + 2 * tig] = o32[j][0]; d32[r * 32 + 8 * j + 2 * tig + 1] = o32[j][1];
    d32[(r + 8) * 32 + 8 * j + 2 * tig] = o32[j][2]; d32[(r + 8) * 32 + 8 * j + 2 * tig + 1] = o32[j][3];
  }
  for (int j = 0; j < 8; ++j) {
    d64[r * 64 + 8 * j + 2 * tig] = o64[j][0]; d64[r * 64 + 8 * j + 2 * tig + 1] = o64[j][1];
    d64[(r + 8) * 64 + 8 * j + 2 * tig] = o64[j][2]; d64[(r + 8) * 64 + 8 * j + 2 * tig + 1] = o64[j][3];
  }
}
}  // namespace
void run(torch::Tensor qm, torch::Tensor km, torch::Tensor a, torch::Tensor d32, torch::Tensor d64) {
  probe<<<1, 128>>>(qm.data_ptr<float>(), km.data_ptr<float>(), a.data_ptr<float>(), d32.data_ptr<float>(),
                    d64.data_ptr<float>());
}
"""
ext = load_inline(name="wg_probe", cpp_sources=["void run(torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor);"],
                  cuda_sources=[SRC], functions=["run"], extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"])
g = torch.Generator().manual_seed(0)
qm = torch.randint(-8, 9, (32, 128), generator=g).float()
km = torch.randint(-8, 9, (128, 32), generator=g).float()
a = torch.randint(-8, 9, (64, 8), generator=g).float()
d32 = torch.zeros(64, 32, device="cuda")
d64 = torch.zeros(64, 64, device="cuda")
ext.run(qm.cuda(), km.cuda(), a.cuda(), d32, d64)
torch.cuda.synchronize()
e32 = a.double() @ qm[:, 40:48].double().T
e64 = a.double() @ km[64:128, 16:24].double().T
err32 = (d32.cpu().double() - e32).abs().max().item()
err64 = (d64.cpu().double() - e64).abs().max().item()
print(f"probe m64n32k8 (q layout): max |err| = {err32}")
print(f"probe m64n64k8 (K^T layout): max |err| = {err64}")
import os
torch.save({"qm": qm, "km": km, "a": a, "d32": d32.cpu(), "d64": d64.cpu()}, os.path.join(os.environ.get("OUT", "."), "probe.pt"))
sys.exit(0 if err32 == 0 and err64 == 0 else 1)
