# wgmma cost model on one SM: cycles a group of fp16 (f32-accumulating) wgmma takes, register (RS) or shared (SS)
# A operand, N = 32 / 64 / 128, one to three warpgroups issuing at once; plus v56's Q S0 (state split into fp16
# pieces, then 2 groups of 12 m64n32k16) and the split alone. Writes wgbench.cu; build: nvcc -arch=sm_90a -O3.
import sys

CONFIGS = [  # name, N, RS, instructions, groups, conv (0 none, 1 split + mma, 2 split only)
    ("rs_n32_x24_g1", 32, True, 24, 1, 0),
    ("rs_n32_x24_g2", 32, True, 24, 2, 0),
    ("rs_n64_x12_g1", 64, True, 12, 1, 0),
    ("rs_n128_x6_g1", 128, True, 6, 1, 0),
    ("rs_n64_x24_g1", 64, True, 24, 1, 0),
    ("rs_n128_x12_g1", 128, True, 12, 1, 0),
    ("ss_n32_x24_g1", 32, False, 24, 1, 0),
    ("ss_n64_x12_g1", 64, False, 12, 1, 0),
    ("ss_n128_x6_g1", 128, False, 6, 1, 0),
    ("ss_n64_x24_g1", 64, False, 24, 1, 0),
    ("rs_n32_x1_g1", 32, True, 1, 1, 0),
    ("rs_n64_x1_g1", 64, True, 1, 1, 0),
    ("rs_n128_x1_g1", 128, True, 1, 1, 0),
    ("qs0_v56", 32, True, 24, 2, 1),
    ("qs0_split_only", 32, True, 24, 2, 2),
]


def mma_fn(n, rs):
    nacc = n // 2
    outs = ", ".join(f'"+f"(d[{i // 4}][{i % 4}])' for i in range(nacc))
    accs = ",".join(f"%{i}" for i in range(nacc))
    if rs:
        a = f"{{%{nacc},%{nacc + 1},%{nacc + 2},%{nacc + 3}}}, %{nacc + 4}"
        ins = '"r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(bd)'
        tail = "1, 1, 1, 0"
        sig = f"float (&d)[{n // 8}][4], const uint32_t (&a)[4], uint64_t ad, uint64_t bd"
    else:
        a = f"%{nacc}, %{nacc + 1}"
        ins = '"l"(ad), "l"(bd)'
        tail = "1, 1, 1, 0, 0"
        sig = f"float (&d)[{n // 8}][4], const uint32_t (&a)[4], uint64_t ad, uint64_t bd"
    name = f"mma_{'rs' if rs else 'ss'}_n{n}"
    return f"""__device__ __forceinline__ void {name}({sig}) {{
  asm volatile("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{accs}}}, {a}, {tail};"
               : {outs} : {ins});
}}
"""


HEAD = r"""
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_fp16.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)
__device__ __forceinline__ uint64_t wg_desc(const void* p, uint32_t lbo, uint32_t sbo) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
template <int N> __device__ __forceinline__ void keepf(float (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(r[i][e])::"memory");
}
template <int N> __device__ __forceinline__ void keepu(uint32_t (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(r[i][e])::"memory");
}
__device__ __forceinline__ void pow2_scale(float m, float& s, float& inv) {
  const int eb = (int)(__float_as_uint(m) >> 23);
  const int f = min(max(268 - eb, 2), 252);
  s = __uint_as_float((uint32_t)f << 23);
  inv = __uint_as_float((uint32_t)(254 - f) << 23);
}
__device__ __forceinline__ void split_h2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 hf = __half22float2(h);
  const __half2 l = __floats2half2_rn(x0 - hf.x, x1 - hf.y);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = *reinterpret_cast<const uint32_t*>(&l);
}
"""

KERNEL = r"""
// CONV 0: NI wgmma in NG groups, each group fenced, committed and waited. CONV 1: v56's Q S0 (the state's 64 values
// a thread split into fp16 pieces before each group of 12, 3 wgmma a k step). CONV 2: the split alone.
template <int N, bool RS, int NI, int NG, int CONV>
__global__ void __launch_bounds__(384, 1) bench(int iters, int nwg, long long* out, float* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
  for (int i = tid; i < 160 * 1024 / 4; i += blockDim.x)
    reinterpret_cast<float*>(smem)[i] = 0.001f * (float)((i * 37 + blockIdx.x) % 101) - 0.05f;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (wg >= nwg) return;
  float d[N / 8][4];
#pragma unroll
  for (int i = 0; i < N / 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) d[i][e] = 0.f;
  uint32_t a[8][4];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[i][e] = 0x3c003c00u ^ (uint32_t)((tid * 7 + i * 3 + e) & 0x3ff);
  float S[16][4];
#pragma unroll
  for (int n = 0; n < 16; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) S[n][e] = 0.01f * (float)((tid + 5 * n + e) % 17) - 0.08f;
  const unsigned char* bbase = smem + 32768 * wg % 65536;
  long long hold = 0;
  __syncwarp();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    if constexpr (CONV != 0) {
      float m0 = 0.f, m1 = 0.f;
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        m0 = fmaxf(m0, fmaxf(fabsf(S[i][0]), fabsf(S[i][1])));
        m1 = fmaxf(m1, fmaxf(fabsf(S[i][2]), fabsf(S[i][3])));
      }
      m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, 1));
      m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, 1));
      m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, 2));
      m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, 2));
      float s0, inv0, s1, inv1;
      pow2_scale(m0, s0, inv0);
      pow2_scale(m1, s1, inv1);
#pragma unroll
      for (int qb = 0; qb < 2; ++qb) {
        uint32_t ah[4][4], al[4][4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int kk = 4 * qb + u;
          split_h2(S[2 * kk][0] * s0, S[2 * kk][1] * s0, ah[u][0], al[u][0]);
          split_h2(S[2 * kk][2] * s1, S[2 * kk][3] * s1, ah[u][1], al[u][1]);
          split_h2(S[2 * kk + 1][0] * s0, S[2 * kk + 1][1] * s0, ah[u][2], al[u][2]);
          split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, ah[u][3], al[u][3]);
        }
        if constexpr (CONV == 1) {
          keepf(d);
          keepu(ah);
          keepu(al);
          wg_fence();
#pragma unroll
          for (int u = 0; u < 4; ++u) {
            const int kk = 4 * qb + u;
            const uint64_t dh = wg_desc(bbase + 128 * kk, 128, 2048), dl = wg_desc(bbase + 16384 + 128 * kk, 128, 2048);
            mma_rs_n32(d, al[u], 0, dh);
            mma_rs_n32(d, ah[u], 0, dl);
            mma_rs_n32(d, ah[u], 0, dh);
          }
          if (it == 0 && qb == 0) hold = clock64() - t0;
          wg_commit();
          wg_wait0();
          keepf(d);
          keepu(ah);
          keepu(al);
        } else {
#pragma unroll
          for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int e = 0; e < 4; ++e) d[u][e] += __uint_as_float(ah[u][e] ^ al[u][e]);
        }
      }
#pragma unroll
      for (int n = 0; n < 16; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) S[n][e] = fmaf(S[n][e], 0.999f, 1e-4f * d[n & 3][e]);
    } else {
#pragma unroll
      for (int g = 0; g < NG; ++g) {
        keepf(d);
        keepu(a);
        wg_fence();
#pragma unroll
        for (int i = 0; i < NI / NG; ++i) {
          const int j = g * (NI / NG) + i;
          const uint64_t bd = wg_desc(bbase + 256 * (j % 16), 128, 2048);
          const uint64_t ad = wg_desc(smem + 65536 + 128 * (j % 8), 128, 1024);
          MMA(d, a[j % 8], ad, bd);
        }
        if (it == 0 && g == 0) hold = clock64() - t0;
        wg_commit();
        wg_wait0();
        keepf(d);
      }
    }
  }
  const long long t1 = clock64();
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < N / 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc += d[i][e];
  sink[blockIdx.x * blockDim.x + tid] = acc;
  if (lane == 0) {
    const int w = tid >> 5;
    out[(blockIdx.x * 12 + w) * 2] = (t1 - t0);
    out[(blockIdx.x * 12 + w) * 2 + 1] = hold;
  }
}
"""

MAIN_HEAD = r"""
template <int N, bool RS, int NI, int NG, int CONV>
int run(const char* name, int iters, int nwg, int grid, long long* dout, float* dsink) {
  auto k = bench<N, RS, NI, NG, CONV>;
  const int smem = 160 * 1024;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaMemset(dout, 0, sizeof(long long) * grid * 24));
  k<<<grid, 384, smem>>>(2, nwg, dout, dsink);  // warm-up
  CK(cudaDeviceSynchronize());
  k<<<grid, 384, smem>>>(iters, nwg, dout, dsink);
  CK(cudaDeviceSynchronize());
  std::vector<long long> h(grid * 24);
  CK(cudaMemcpy(h.data(), dout, sizeof(long long) * grid * 24, cudaMemcpyDeviceToHost));
  std::vector<double> per, hold;
  for (int b = 0; b < grid; ++b)
    for (int w = 0; w < 4 * nwg; ++w) {
      per.push_back((double)h[(b * 12 + w) * 2] / iters);
      hold.push_back((double)h[(b * 12 + w) * 2 + 1]);
    }
  std::sort(per.begin(), per.end());
  std::sort(hold.begin(), hold.end());
  const double macs = (double)NI * 64 * N * 16;
  const double med = per[per.size() / 2];
  printf("%-16s wg %d  cycles/iter median %8.1f  (p10 %8.1f p90 %8.1f)  per wgmma %6.1f  MAC/cycle/SM %7.1f  first-group issue hold %7.0f\n",
         name, nwg, med, per[per.size() / 10], per[per.size() * 9 / 10], NI ? med / NI : 0.0,
         CONV == 2 ? 0.0 : macs * nwg / med, hold[hold.size() / 2]);
  return 0;
}
int main() {
  long long* dout; float* dsink;
  const int grid = 132;
  CK(cudaMalloc(&dout, sizeof(long long) * grid * 24));
  CK(cudaMalloc(&dsink, sizeof(float) * grid * 384));
  int clk = 0; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  printf("clock rate attribute %d kHz; 132 CTAs, 1 a SM; cycles are SM clock64\n", clk);
  const int iters = 400;
  for (int nwg = 1; nwg <= 3; ++nwg) {
"""


def main():
    src = [HEAD]
    for n in (32, 64, 128):
        for rs in (True, False):
            src.append(mma_fn(n, rs))
    # MMA dispatch by template parameters
    src.append("""template <int N, bool RS> struct Mma;
""")
    for n in (32, 64, 128):
        for rs in (True, False):
            src.append(f"""template <> struct Mma<{n}, {'true' if rs else 'false'}> {{
  static __device__ __forceinline__ void f(float (&d)[{n // 8}][4], const uint32_t (&a)[4], uint64_t ad, uint64_t bd) {{
    mma_{'rs' if rs else 'ss'}_n{n}(d, a, ad, bd);
  }}
}};
""")
    src.append("#define MMA(d, a, ad, bd) Mma<N, RS>::f(d, a, ad, bd)\n")
    src.append(KERNEL)
    src.append(MAIN_HEAD)
    for name, n, rs, ni, ng, conv in CONFIGS:
        src.append(f'    if (run<{n}, {"true" if rs else "false"}, {ni}, {ng}, {conv}>("{name}", iters, nwg, grid, dout, dsink)) return 1;\n')
    src.append("  }\n  return 0;\n}\n")
    sys.stdout.write("".join(src))


if __name__ == "__main__":
    main()
