"""Write candidates/*/v25_split_issue.py from v22_wg.py: gd_wg_kernel's next-chunk cp.async on warps 12-15 beside the
A tiles; channel G/Vt without the IEEE division's branches."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = {
    "scalar": "# v25_split_issue (scalar gates): v22_wg with gd_wg_kernel's (64 < D <= 128) next-chunk cp.async issued by warps\n"
              "# 12-15 alone, while warps 0-11 build the A tiles, instead of by all 512 threads at the top of the chunk. A profile\n"
              "# of v22 found that issue (48 KB a chunk) holding every warp ~1,780 cycles; v24_bulk_kv measured it at ~21 bytes\n"
              "# a cycle per SM. sm_90a only, as v22. Seed, medium and D <= 64 run the kernels of v20_ws.\n"
              "# Prediction (before any GPU run): large 740-800 us scalar (v22 846), 880-950 us channel (v22 955).\n",
    "channel": "# v25_split_issue (channel gates): v22_wg with gd_wg_kernel's (64 < D <= 128) next-chunk cp.async issued by warps\n"
               "# 12-15 alone, while warps 0-11 build the A tiles, instead of by all 512 threads after the gate scan; G and\n"
               "# Vt = v / G with the loads first and a branch-free division. A profile of v22 found that issue (64 KB a\n"
               "# chunk) holding every warp ~1,630 cycles; v24_bulk_kv measured it at ~21 bytes a cycle per SM. sm_90a only,\n"
               "# as v22. Seed, medium and D <= 64 run the kernels of v21_ws_bal.\n"
               "# Prediction (before any GPU run): large 740-800 us scalar (v22 846), 880-950 us channel (v22 955).\n",
}

HELPERS = ''

BULK_LOAD = r'''
// A full chunk's inputs (D == 128, 16-byte aligned) by cp.async on 128 threads (ltid 0..127): q into its blocked
// layout, k and v rows (channel: gate rows), scalar gate and beta. The caller commits the group.
template <bool CHAN>
__device__ __forceinline__ void wg_load_chunk_part(float* buf, const float* __restrict__ q, const float* __restrict__ k,
                                                   const float* __restrict__ v, const float* __restrict__ gate,
                                                   const float* __restrict__ beta, int b, int h, int T, int H, int t0,
                                                   int ltid) {
  using Wf = WgCfg<CHAN>;
  constexpr int DPS = Wf::DPS, NCS = Wf::NCS;
  const long long rs = (long long)H * 128;
  const long long base = ((long long)b * T + t0) * rs + (long long)h * 128;
  float* qs = buf + Wf::QB;
#pragma unroll
  for (int it = 0; it < 8; ++it) {
    const int idx = ltid + it * 128;
    const int t8 = idx & 7, e = (idx >> 3) & 31, tb = idx >> 8;
    __pipeline_memcpy_async(qs + tb * 1024 + e * 32 + t8 * 4, q + base + (8 * tb + t8) * rs + 4 * e, 16);
    const int t = idx >> 5;
    const int c = (idx & 31) * 4;
    const long long o = base + t * rs + c;
    __pipeline_memcpy_async(buf + Wf::KR + t * DPS + c, k + o, 16);
    __pipeline_memcpy_async(buf + Wf::VR + t * NCS + c, v + o, 16);
    if constexpr (CHAN) __pipeline_memcpy_async(buf + Wf::GR + t * NCS + c, gate + o, 16);
  }
  if constexpr (!CHAN) {
    if (ltid < 32) {
      const long long o = ((long long)b * T + t0 + ltid) * H + h;
      __pipeline_memcpy_async(buf + Wf::GR + ltid, gate + o, 4);
      __pipeline_memcpy_async(buf + Wf::BR + ltid, beta + o, 4);
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
    sub("  int psafe = 0;\n  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;\n    const int n = min(C, T - t0);\n"
        "    float* cur = sm + (ch & 1) * Wf::BUF;\n    __pipeline_wait_prior(0);\n"
        "    __syncthreads();  // this chunk's inputs landed; the previous chunk's O partials (and G) complete\n"
        "    if constexpr (!CHAN) {\n"
        "      if (ch + 1 < nchunks)\n"
        "        wg_load_chunk<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C,\n"
        "                            min(C, T - t0 - C), tid, vec, fast && T - t0 - C >= C);\n"
        "      __pipeline_commit();\n    }\n",
        "  int psafe = 0;\n"
        "  for (int ch = 0; ch < nchunks; ++ch) {\n    const int t0 = ch * C;\n    const int n = min(C, T - t0);\n"
        "    float* cur = sm + (ch & 1) * Wf::BUF;\n    __pipeline_wait_prior(0);\n"
        "    __syncthreads();  // this chunk's inputs landed; the previous chunk's O partials (and G) complete\n")
    old_vote = ("    const int safe = __syncthreads_or(pred);\n"
                "    if constexpr (CHAN) {\n"
                "      // Every thread is past the previous chunk's output (which read G in the buffer loaded here).\n"
                "      if (ch + 1 < nchunks)\n"
                "        wg_load_chunk<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C,\n"
                "                            min(C, T - t0 - C), tid, vec, fast && T - t0 - C >= C);\n"
                "      __pipeline_commit();\n    }\n")
    sub(old_vote,
        "    const int safe = __syncthreads_or(pred);\n"
        "    // Chunk c+1's loads, into the previous chunk's buffer (every thread is past its output, which read G there):\n"
        "    // a full chunk by warps 12-15 while warps 0-11 build the A tiles, a partial one by every thread.\n"
        "    if (ch + 1 < nchunks) {\n"
        "      if (fast && T - t0 - C >= C) {\n"
        "        if (warp >= 12)\n"
        "          wg_load_chunk_part<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, t0 + C, tid - 384);\n"
        "      } else {\n"
        "        wg_load_chunk<CHAN>(sm + ((ch + 1) & 1) * Wf::BUF, q, k, v, gate, beta, b, h, T, H, D, t0 + C, min(C, T - t0 - C),\n"
        "                            tid, vec, false);\n"
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
    sub(f"{tag}_v22_forward", f"{tag}_v25_forward", 4)
    sub(f'name="{tag}_v22_wg"', f'name="{tag}_v25_split_issue"')
    out = ROOT / f"candidates/{problem}_gated_delta/v25_split_issue.py"
    out.write_text(s)
    print("wrote", out)


for p in ("scalar", "channel"):
    make(p)
