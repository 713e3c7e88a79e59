"""Write candidates/*/v24_bulk_kv.py from v22_wg.py: gd_wg_kernel's next-chunk loads off the critical path (bulk copies
for k, v and channel gates; q by cp.async on warps 12-15 while warps 0-11 build the A tiles), channel G/Vt without
the IEEE division's branches."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = {
    "scalar": "# v24_bulk_kv (scalar gates): v22_wg with two thirds of gd_wg_kernel's (64 < D <= 128) next-chunk loads on the\n"
              "# bulk-copy engine: k and v rows by cp.async.bulk completing on an mbarrier, issued by one warp a phase after every\n"
              "# thread has issued its share of q (cp.async into q's blocked layout). A profile of v22 found the 48 KB\n"
              "# cp.async burst holding every warp ~1,700 cycles a chunk; v23_tma (q on 4 warps behind the bulk copies) made\n"
              "# those warps the critical path. sm_90a only, as v22. Seed, medium and D <= 64 run the kernels of v20_ws.\n"
              "# Prediction (before any GPU run): large 730-800 us scalar (v22 842), 800-890 us channel (v22 955).\n",
    "channel": "# v24_bulk_kv (channel gates): v22_wg with three quarters of gd_wg_kernel's (64 < D <= 128) next-chunk loads on\n"
               "# the bulk-copy engine: k, v and gate rows by cp.async.bulk completing on an mbarrier, issued by one warp a\n"
               "# phase after every thread has issued its share of q (cp.async into q's blocked layout); G and Vt = v / G with the loads\n"
               "# first and a branch-free division. A profile of v22 found the 64 KB cp.async burst holding every warp ~1,650\n"
               "# cycles a chunk; v23_tma (q on 4 warps behind the bulk copies) made those warps the critical path. sm_90a\n"
               "# only, as v22. Seed, medium and D <= 64 run the kernels of v21_ws_bal.\n"
               "# Prediction (before any GPU run): large 730-800 us scalar (v22 842), 800-890 us channel (v22 955).\n",
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
// A full chunk's q (D == 128, 16-byte aligned) into its blocked layout by cp.async on all 512 threads (the copy engine
// writes contiguous bytes only), scalar gate and beta by warp 15; the caller commits the group.
template <bool CHAN>
__device__ __forceinline__ void wg_load_q(float* buf, const float* __restrict__ q, const float* __restrict__ gate,
                                          const float* __restrict__ beta, int b, int h, int T, int H, int t0, int tid) {
  using Wf = WgCfg<CHAN>;
  const long long rs = (long long)H * 128;
  const float* qb = q + ((long long)b * T + t0) * rs + (long long)h * 128;
  float* qs = buf + Wf::QB;
#pragma unroll
  for (int it = 0; it < 2; ++it) {
    const int idx = tid + it * 512;
    const int t8 = idx & 7, e = (idx >> 3) & 31, tb = idx >> 8;
    __pipeline_memcpy_async(qs + tb * 1024 + e * 32 + t8 * 4, qb + (8 * tb + t8) * rs + 4 * e, 16);
  }
  if constexpr (!CHAN) {
    if (tid >= 480) {
      const int t = tid - 480;
      const long long o = ((long long)b * T + t0 + t) * H + h;
      __pipeline_memcpy_async(buf + Wf::GR + t, gate + o, 4);
      __pipeline_memcpy_async(buf + Wf::BR + t, beta + o, 4);
    }
  }
}

// A full chunk's k and v rows (channel: gate rows) by bulk copies on the mbarrier m, one row per lane of one warp.
template <bool CHAN>
__device__ __forceinline__ void wg_load_rows_bulk(float* buf, uint64_t* m, const float* __restrict__ k,
                                                  const float* __restrict__ v, const float* __restrict__ gate, int b,
                                                  int h, int T, int H, int t0, int lane) {
  using Wf = WgCfg<CHAN>;
  constexpr int C = Wf::C, DPS = Wf::DPS, NCS = Wf::NCS;
  const long long rs = (long long)H * 128;
  const long long o = ((long long)b * T + t0 + lane) * rs + (long long)h * 128;
  if (lane == 0) mbar_expect_tx(m, (CHAN ? 3 : 2) * C * 128 * 4);
  __syncwarp();
  bulk_load(buf + Wf::KR + lane * DPS, k + o, 512, m);
  bulk_load(buf + Wf::VR + lane * NCS, v + o, 512, m);
  if constexpr (CHAN) bulk_load(buf + Wf::GR + lane * NCS, gate + o, 512, m);
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
        "    // a full chunk's q by every thread now, its rows by the copy engine after the next barrier (issued by warp 12,\n"
        "    // so that q's cp.async drain first); a partial chunk by every thread.\n"
        "    bool rows_next = false;\n"
        "    if (ch + 1 < nchunks) {\n"
        "      const int nb = (ch + 1) & 1;\n"
        "      if (fast && T - t0 - C >= C) {\n"
        "        wg_load_q<CHAN>(sm + nb * Wf::BUF, q, gate, beta, b, h, T, H, t0 + C, tid);\n"
        "        rows_next = true;\n"
        "        bulk_on |= 1u << nb;\n"
        "        bulk_par ^= 1u << nb;\n"
        "      } else {\n"
        "        wg_load_chunk<CHAN>(sm + nb * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C, min(C, T - t0 - C), tid,\n"
        "                            vec, false);\n"
        "        bulk_on &= ~(1u << nb);\n"
        "      }\n"
        "    }\n"
        "    __pipeline_commit();\n")
    issue = ("      if (rows_next && warp == 12)\n"
             "        wg_load_rows_bulk<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, &mbar[(ch + 1) & 1], k, v, gate, b, h, T, H, t0 + C, lane);\n")
    sub("      __syncthreads();  // A tiles, split q / K^T (and channel G, Vt) visible, to the tensor core's reads too\n",
        "      __syncthreads();  // A tiles, split q / K^T (and channel G, Vt) visible, to the tensor core's reads too\n" + issue)
    sub("      __syncthreads();  // split q visible\n", "      __syncthreads();  // split q visible\n" + issue)
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
    sub(f"{tag}_v22_forward", f"{tag}_v24_forward", 4)
    sub(f'name="{tag}_v22_wg"', f'name="{tag}_v24_bulk_kv"')
    out = ROOT / f"candidates/{problem}_gated_delta/v24_bulk_kv.py"
    out.write_text(s)
    print("wrote", out)


for p in ("scalar", "channel"):
    make(p)
