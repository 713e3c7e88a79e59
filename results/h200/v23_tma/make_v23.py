"""Write candidates/*/v23_tma.py from v22_wg.py: gd_wg_kernel's next-chunk loads off the critical path (bulk copies
for k, v and channel gates; q by cp.async on warps 12-15 while warps 0-11 build the A tiles), channel G/Vt without
the IEEE division's branches."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = {
    "scalar": "# v23_tma (scalar gates): v22_wg with gd_wg_kernel's (64 < D <= 128) next-chunk loads moved off the critical\n"
              "# path: k and v rows by the bulk-copy engine (cp.async.bulk, completing on an mbarrier), q by cp.async on warps\n"
              "# 12-15 while warps 0-11 build the A tiles. A profile of v22 found the 512-thread cp.async burst (and a\n"
              "# register spill queued behind it) holding every warp ~1,650 cycles a chunk. sm_90a only, as v22.\n"
              "# Seed, medium and D <= 64 run the kernels of v20_ws.\n"
              "# Prediction (before any GPU run): large 700-770 us scalar (v22 848), 720-820 us channel (v22 951).\n",
    "channel": "# v23_tma (channel gates): v22_wg with gd_wg_kernel's (64 < D <= 128) next-chunk loads moved off the critical\n"
               "# path: k, v and gate rows by the bulk-copy engine (cp.async.bulk, completing on an mbarrier), q by cp.async on\n"
               "# warps 12-15 while warps 0-11 build the A tiles; G and Vt = v / G with all loads first and a branch-free\n"
               "# division. A profile of v22 found the 512-thread cp.async burst holding every warp ~1,650 cycles a chunk and\n"
               "# the division's slow-path branches serialising G/Vt (~1,850). sm_90a only, as v22.\n"
               "# Seed, medium and D <= 64 run the kernels of v21_ws_bal.\n"
               "# Prediction (before any GPU run): large 700-770 us scalar (v22 848), 720-820 us channel (v22 951).\n",
}

HELPERS = r'''
// Bulk copies (the copy engine, sm_90) completing on an mbarrier: no thread waits for their issue.
__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t* m, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(m)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* m, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(m)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* m, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n"
      "MBAR_WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n @!done bra MBAR_WAIT;\n}" ::"r"(
          smem_addr(m)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_load(float* dst, const float* src, unsigned bytes, uint64_t* m) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(m))
               : "memory");
}
'''

BULK_LOAD = r'''
// A full chunk's inputs (D == 128, 16-byte aligned) on 128 threads (ltid 0..127): k and v rows (channel: gate rows)
// by bulk copies on the mbarrier m, q into its blocked layout by cp.async (the copy engine writes contiguous bytes
// only), scalar gate and beta by cp.async. The caller commits the cp.async group.
template <bool CHAN>
__device__ __forceinline__ void wg_load_chunk_bulk(float* buf, uint64_t* m, const float* __restrict__ q,
                                                   const float* __restrict__ k, const float* __restrict__ v,
                                                   const float* __restrict__ gate, const float* __restrict__ beta,
                                                   int b, int h, int T, int H, int t0, int ltid) {
  using Wf = WgCfg<CHAN>;
  constexpr int C = Wf::C, DPS = Wf::DPS, NCS = Wf::NCS;
  const long long rs = (long long)H * 128;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * 128;
  const int lane = ltid & 31;
  if (ltid < 32) {
    if (lane == 0) mbar_expect_tx(m, (CHAN ? 3 : 2) * C * 128 * 4);
    __syncwarp();
    const long long o = base + lane * rs;
    bulk_load(buf + Wf::KR + lane * DPS, k + o, 512, m);
    bulk_load(buf + Wf::VR + lane * NCS, v + o, 512, m);
    if constexpr (CHAN) bulk_load(buf + Wf::GR + lane * NCS, gate + o, 512, m);
  }
  float* qs = buf + Wf::QB;
  const float* qb = q + base;
#pragma unroll
  for (int it = 0; it < 8; ++it) {
    const int idx = ltid + it * 128;
    const int t8 = idx & 7, e = (idx >> 3) & 31, tb = idx >> 8;
    __pipeline_memcpy_async(qs + tb * 1024 + e * 32 + t8 * 4, qb + (8 * tb + t8) * rs + 4 * e, 16);
  }
  if constexpr (!CHAN) {
    if (ltid >= 32 && ltid < 64) {
      const long long o = ((long long)b * T + t0 + lane) * H + h;
      __pipeline_memcpy_async(buf + Wf::GR + lane, gate + o, 4);
      __pipeline_memcpy_async(buf + Wf::BR + lane, beta + o, 4);
    }
  }
}
'''


def make(problem: str):
    src_path = ROOT / f"candidates/{problem}_gated_delta/v22_wg.py"
    s = src_path.read_text()
    tag = "cgd" if problem == "channel" else "sgd"

    def sub(old, new, count=1):
        nonlocal s
        assert s.count(old) == count, (problem, old[:80], s.count(old))
        s = s.replace(old, new)

    lines = s.split("\n")
    s = HEADER[problem] + "\n".join(lines[4:])
    sub('__device__ __forceinline__ void wg_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }\n',
        '__device__ __forceinline__ void wg_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }\n'
        + HELPERS)
    sub("template <bool CHAN>\n__global__ void __launch_bounds__(512, 1)\ngd_wg_kernel(",
        BULK_LOAD.lstrip("\n") + "\ntemplate <bool CHAN>\n__global__ void __launch_bounds__(512, 1)\ngd_wg_kernel(")
    # mbarriers: one per input buffer
    sub("  for (int i = tid; i < Wf::TOTAL; i += 512) sm[i] = 0.f;\n  __syncthreads();\n\n  const int nchunks = (T + C - 1) / C;\n"
        "  wg_load_chunk<CHAN>(",
        "  __shared__ __align__(8) uint64_t mbar[2];\n"
        "  for (int i = tid; i < Wf::TOTAL; i += 512) sm[i] = 0.f;\n"
        "  if (tid == 0) {\n    mbar_init(&mbar[0], 1);\n    mbar_init(&mbar[1], 1);\n"
        "    asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n  }\n"
        "  __syncthreads();\n\n  const int nchunks = (T + C - 1) / C;\n  wg_load_chunk<CHAN>(")
    sub("  int psafe = 0;\n  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;\n    const int n = min(C, T - t0);\n"
        "    float* cur = sm + (ch & 1) * Wf::BUF;\n    __pipeline_wait_prior(0);\n"
        "    __syncthreads();  // this chunk's inputs landed; the previous chunk's O partials (and G) complete\n"
        "    if constexpr (!CHAN) {\n"
        "      if (ch + 1 < nchunks)\n"
        "        wg_load_chunk<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C,\n"
        "                            min(C, T - t0 - C), tid, vec, fast && T - t0 - C >= C);\n"
        "      __pipeline_commit();\n    }\n",
        "  int psafe = 0;\n"
        "  // Per buffer: whether its pending load went by bulk copy, and that mbarrier's phase parity to wait for.\n"
        "  uint32_t bulk_on = 0, bulk_par = 0;\n"
        "  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;\n    const int n = min(C, T - t0);\n"
        "    float* cur = sm + (ch & 1) * Wf::BUF;\n    __pipeline_wait_prior(0);\n"
        "    if ((bulk_on >> (ch & 1)) & 1) mbar_wait(&mbar[ch & 1], ((bulk_par >> (ch & 1)) & 1) ^ 1);\n"
        "    __syncthreads();  // this chunk's inputs landed; the previous chunk's O partials (and G) complete\n")
    old_vote = ("    const int safe = __syncthreads_or(pred);\n"
                "    if constexpr (CHAN) {\n"
                "      // Every thread is past the previous chunk's output (which read G in the buffer loaded here).\n"
                "      if (ch + 1 < nchunks)\n"
                "        wg_load_chunk<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C,\n"
                "                            min(C, T - t0 - C), tid, vec, fast && T - t0 - C >= C);\n"
                "      __pipeline_commit();\n    }\n")
    sub(old_vote,
        "    wg_proxy_fence();  // this thread's reads of the buffer loaded next (the previous chunk's) before the copy engine's writes\n"
        "    const int safe = __syncthreads_or(pred);\n"
        "    // Chunk c+1's loads, into the previous chunk's buffer (every thread is past its output, which read G there):\n"
        "    // a full chunk by warps 12-15 beside the A tiles, a partial one by all warps.\n"
        "    if (ch + 1 < nchunks) {\n"
        "      const int nb = (ch + 1) & 1;\n"
        "      if (fast && T - t0 - C >= C) {\n"
        "        if (warp >= 12)\n"
        "          wg_load_chunk_bulk<CHAN>(sm + nb * Wf::BUF, &mbar[nb], q, k, v, gate, beta, b, h, T, H, t0 + C, tid - 384);\n"
        "        bulk_on |= 1u << nb;\n"
        "        bulk_par ^= 1u << nb;\n"
        "      } else {\n"
        "        wg_load_chunk<CHAN>(sm + nb * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C, min(C, T - t0 - C), tid,\n"
        "                            vec, false);\n"
        "        bulk_on &= ~(1u << nb);\n"
        "      }\n"
        "    }\n"
        "    __pipeline_commit();\n")
    if problem == "channel":
        sub("        // In place: gate -> G (cumulative), v -> v / G (0 beyond the chunk end).\n"
            "        if (sj < NC) {\n"
            "#pragma unroll\n"
            "          for (int u = 0; u < 8; ++u) {\n"
            "            const int t = sseg * 8 + u;\n"
            "            if (t < n) {\n"
            "              const float G = excl * gv[u];\n"
            "              gsm[t * NCS + sj] = G;\n"
            "              vsm[t * NCS + sj] = vsm[t * NCS + sj] / G;\n"
            "            } else {\n"
            "              vsm[t * NCS + sj] = 0.f;\n"
            "            }\n"
            "          }\n"
            "        }\n",
            "        // In place: gate -> G (cumulative), v -> v / G (0 beyond the chunk end). Loads first; __fdividef (2 ulp,\n"
            "        // exact-enough beside the 3xTF32 split; G in [1e-18, 1] here) has no slow-path branch to serialise them.\n"
            "        if (sj < NC) {\n"
            "          float vv[8];\n"
            "#pragma unroll\n"
            "          for (int u = 0; u < 8; ++u) vv[u] = vsm[(sseg * 8 + u) * NCS + sj];\n"
            "#pragma unroll\n"
            "          for (int u = 0; u < 8; ++u) {\n"
            "            const int t = sseg * 8 + u;\n"
            "            if (t < n) {\n"
            "              const float G = excl * gv[u];\n"
            "              gsm[t * NCS + sj] = G;\n"
            "              vsm[t * NCS + sj] = __fdividef(vv[u], G);\n"
            "            } else {\n"
            "              vsm[t * NCS + sj] = 0.f;\n"
            "            }\n"
            "          }\n"
            "        }\n")
    sub(f"{tag}_v22_forward", f"{tag}_v23_forward", 4)
    sub(f'name="{tag}_v22_wg"', f'name="{tag}_v23_tma"')
    out = ROOT / f"candidates/{problem}_gated_delta/v23_tma.py"
    out.write_text(s)
    print("wrote", out)


for p in ("scalar", "channel"):
    make(p)
