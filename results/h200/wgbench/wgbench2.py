# Interference on one H200 SM: four "prep" warps (the third warpgroup) split a block of 8 steps x 128 columns each
# into fp16 pieces from shared memory (v56's wsh_split_q: 8 float4 loads, a maximum, 16 split_h2, 16 8-byte stores)
# while the two "consumer" warpgroups run nothing, a stream of RS or SS wgmma groups, or the state's split. Prints
# the prep warps' cycles a block. Writes wgbench2.cu; build: nvcc -gencode arch=compute_90a,code=sm_90a -O3.
import sys
from wgbench import HEAD, mma_fn

MODES = [  # name, N, RS, instructions a group (0: the state's split, -1: idle)
    ("idle", 32, True, -1),
    ("rs_n32_x24", 32, True, 24),
    ("ss_n32_x24", 32, False, 24),
    ("rs_n64_x12", 64, True, 12),
    ("ss_n64_x12", 64, False, 12),
    ("state_split", 32, True, 0),
]

KERNEL = r"""
template <int N, bool RS> struct Mma;
""" + "".join(f"""template <> struct Mma<{n}, {'true' if rs else 'false'}> {{
  static __device__ __forceinline__ void f(float (&d)[{n // 8}][4], const uint32_t (&a)[4], uint64_t ad, uint64_t bd) {{
    mma_{'rs' if rs else 'ss'}_n{n}(d, a, ad, bd);
  }}
}};
""" for n in (32, 64) for rs in (True, False)) + r"""
template <int N, bool RS, int NI>
__global__ void __launch_bounds__(384, 1) interf(int iters, long long* out, float* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  volatile int* done = reinterpret_cast<volatile int*>(smem + 160 * 1024 - 16);
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, warp = tid >> 5;
  for (int i = tid; i < (160 * 1024 - 16) / 4; i += blockDim.x)
    reinterpret_cast<float*>(smem)[i] = 0.001f * (float)((i * 37 + blockIdx.x) % 101) - 0.05f;
  if (tid == 0) *done = 0;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (wg < 2) {
    if (NI < 0) return;
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
    const unsigned char* bbase = smem + 32768 * wg;
    for (;;) {  // a flag the warpgroup agrees on (bar.red), so its wgmma stay warpgroup-uniform
      int stop;
      asm volatile("{ .reg .pred p; setp.ne.s32 p, %1, 0; bar.red.or.pred p, %2, 128, p; selp.s32 %0, 1, 0, p; }"
                   : "=r"(stop) : "r"(*done), "r"(wg + 2) : "memory");
      if (stop) break;
      if constexpr (NI == 0) {
        float m0 = 0.f, m1 = 0.f;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          m0 = fmaxf(m0, fmaxf(fabsf(S[i][0]), fabsf(S[i][1])));
          m1 = fmaxf(m1, fmaxf(fabsf(S[i][2]), fabsf(S[i][3])));
        }
        m0 = fmaxf(m0, __shfl_xor_sync(0xffffffffu, m0, 1));
        m1 = fmaxf(m1, __shfl_xor_sync(0xffffffffu, m1, 1));
        float s0, inv0, s1, inv1;
        pow2_scale(m0, s0, inv0);
        pow2_scale(m1, s1, inv1);
#pragma unroll
        for (int kk = 0; kk < 8; ++kk) {
          uint32_t h[4], l[4];
          split_h2(S[2 * kk][0] * s0, S[2 * kk][1] * s0, h[0], l[0]);
          split_h2(S[2 * kk][2] * s1, S[2 * kk][3] * s1, h[1], l[1]);
          split_h2(S[2 * kk + 1][0] * s0, S[2 * kk + 1][1] * s0, h[2], l[2]);
          split_h2(S[2 * kk + 1][2] * s1, S[2 * kk + 1][3] * s1, h[3], l[3]);
#pragma unroll
          for (int e = 0; e < 4; ++e) d[kk & 3][e] += __uint_as_float(h[e] ^ l[e]);
        }
#pragma unroll
        for (int n = 0; n < 16; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) S[n][e] = fmaf(S[n][e], 0.999f, 1e-4f * d[n & 3][e]);
      } else {
#pragma unroll
        for (int g = 0; g < 2; ++g) {
          keepf(d);
          keepu(a);
          wg_fence();
#pragma unroll
          for (int i = 0; i < NI / 2; ++i) {
            const int j = g * (NI / 2) + i;
            const uint64_t bd = wg_desc(bbase + 256 * (j % 16), 128, 2048);
            const uint64_t ad = wg_desc(smem + 65536 + 128 * (j % 8), 128, 1024);
            Mma<N, RS>::f(d, a[j % 8], ad, bd);
          }
          wg_commit();
          wg_wait0();
          keepf(d);
        }
      }
    }
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < N / 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc += d[i][e];
    sink[blockIdx.x * blockDim.x + tid] = acc;
    return;
  }
  // prep warps: v56's wsh_split_q<false> on block (warp & 3) of a 32 x 128 q, into pieces at 96 KB
  const float* qr = reinterpret_cast<const float*>(smem + 98304);
  uint32_t* qh = reinterpret_cast<uint32_t*>(smem + 114688);
  uint32_t* ql = reinterpret_cast<uint32_t*>(smem + 122880);
  const int tb = warp & 3, r = lane & 7, g = lane >> 3, t = 8 * tb + r;
  float chk = 0.f;
  __syncwarp();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    float4 x[8];
    float m = 0.f;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      x[u] = *reinterpret_cast<const float4*>(qr + tb * 1024 + (g + 4 * u) * 32 + r * 4 + (it & 1) * 8192);
      m = fmaxf(m, fmaxf(fmaxf(fabsf(x[u].x), fabsf(x[u].y)), fmaxf(fabsf(x[u].z), fabsf(x[u].w))));
    }
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 8));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 16));
    float sc, inv;
    pow2_scale(m, sc, inv);
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      uint32_t h0, h1, l0, l1;
      split_h2(x[u].x * sc, x[u].y * sc, h0, l0);
      split_h2(x[u].z * sc, x[u].w * sc, h1, l1);
      const int c = 4 * (g + 4 * u);
      const int o = ((t >> 3) * 1024 + (c >> 3) * 64 + (t & 7) * 8 + (c & 7)) >> 1;
      *reinterpret_cast<uint2*>(qh + o) = make_uint2(h0, h1);
      *reinterpret_cast<uint2*>(ql + o) = make_uint2(l0, l1);
    }
    chk += inv;
    __syncwarp();
  }
  const long long t1 = clock64();
  asm volatile("bar.sync 1, 128;" ::: "memory");
  if (tid == 256) *done = 1;
  sink[blockIdx.x * blockDim.x + tid] = chk;
  if (lane == 0) out[blockIdx.x * 4 + (warp & 3)] = t1 - t0;
}
"""

MAIN = r"""
template <int N, bool RS, int NI>
int run(const char* name, int iters, int grid, long long* dout, float* dsink) {
  auto k = interf<N, RS, NI>;
  const int smem = 160 * 1024;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  k<<<grid, 384, smem>>>(4, dout, dsink);
  CK(cudaDeviceSynchronize());
  k<<<grid, 384, smem>>>(iters, dout, dsink);
  CK(cudaDeviceSynchronize());
  std::vector<long long> h(grid * 4);
  CK(cudaMemcpy(h.data(), dout, sizeof(long long) * grid * 4, cudaMemcpyDeviceToHost));
  std::vector<double> per;
  for (auto x : h) per.push_back((double)x / iters);
  std::sort(per.begin(), per.end());
  printf("consumers: %-12s  prep split, cycles a block a warp: median %7.1f (p10 %7.1f p90 %7.1f)\n", name,
         per[per.size() / 2], per[per.size() / 10], per[per.size() * 9 / 10]);
  return 0;
}
int main() {
  long long* dout; float* dsink;
  const int grid = 132;
  CK(cudaMalloc(&dout, sizeof(long long) * grid * 4));
  CK(cudaMalloc(&dsink, sizeof(float) * grid * 384));
  printf("132 CTAs, 1 a SM: warpgroups 0-1 the consumers' work, warpgroup 2 a prep-like split (one block a warp a pass)\n");
  for (int rep = 0; rep < 2; ++rep) {
"""


def main():
    src = [HEAD]
    for n in (32, 64):
        for rs in (True, False):
            src.append(mma_fn(n, rs))
    src.append(KERNEL)
    src.append(MAIN)
    for name, n, rs, ni in MODES:
        src.append(f'    if (run<{n}, {"true" if rs else "false"}, {ni}>("{name}", 400, grid, dout, dsink)) return 1;\n')
    src.append("  }\n  return 0;\n}\n")
    sys.stdout.write("".join(src))


if __name__ == "__main__":
    main()
