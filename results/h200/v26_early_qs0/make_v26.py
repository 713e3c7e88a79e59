"""Write candidates/*/v26_early_qs0.py from v25_split_issue.py: gd_wg_kernel issues Q S0's first half (12 wgmma) right
after the vote barrier and builds the A tiles while it runs; its wait and the second half follow the A-tile barrier."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = {
    "scalar": "# v26_early_qs0 (scalar gates): v25_split_issue with gd_wg_kernel's (64 < D <= 128) Q S0 first half (12 wgmma\n"
              "# m64n32k8) issued right after the vote barrier, so the tensor core runs it while warps 0-11 build the A tiles\n"
              "# and warps 12-15 issue the next chunk's cp.async; its wait and the second half follow the A-tile barrier.\n"
              "# sm_90a only, as v25. Seed, medium and D <= 64 run the kernels of v20_ws.\n"
              "# Prediction (before any GPU run): large ~700 us scalar (v25 781), ~810 us channel (v25 890).\n",
    "channel": "# v26_early_qs0 (channel gates): v25_split_issue with gd_wg_kernel's (64 < D <= 128) Q S0 first half (12 wgmma\n"
               "# m64n32k8) issued right after the vote barrier, so the tensor core runs it while warps 0-11 build the A tiles\n"
               "# and warps 12-15 issue the next chunk's cp.async; its wait and the second half follow the A-tile barrier.\n"
               "# sm_90a only, as v25. Seed, medium and D <= 64 run the kernels of v21_ws_bal.\n"
               "# Prediction (before any GPU run): large ~700 us scalar (v25 781), ~810 us channel (v25 890).\n",
}

SPLIT_HALF = '''      uint32_t ah[NI / 2][4], al[NI / 2][4];
#pragma unroll
      for (int u = 0; u < NI / 2; ++u) {
        split(S[u][0], ah[u][0], al[u][0]);
        split(S[u][2], ah[u][1], al[u][1]);
        split(S[u][1], ah[u][2], al[u][2]);
        split(S[u][3], ah[u][3], al[u][3]);
      }
'''

FIRST_HALF = '''      // ---- O^T partial = S^T Q^T over this warpgroup's 64 state columns: 8 k steps x 3 wgmma m64n32k8, in two
      // halves of 4 k steps. The first half runs on the tensor core beside the A tiles; its split S (32 registers)
      // stays live until its wait after the A-tile barrier.
      float O[NTT][4];
#pragma unroll
      for (int nt = 0; nt < NTT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
''' + SPLIT_HALF + '''      wg_keep(O);
      wg_keep(ah);
      wg_keep(al);
      wg_fence();
#pragma unroll
      for (int u = 0; u < NI / 2; ++u) {
        const int dq = (ibase + 8 * u) >> 2;  // 16-byte column of q where this k step starts
        const uint64_t dh = wg_desc(qs + dq * 32, 128, 4096);
        const uint64_t dl = wg_desc(ql + dq * 32, 128, 4096);
        wg_mma_n32(O, al[u], dh);
        wg_mma_n32(O, ah[u], dl);
        wg_mma_n32(O, ah[u], dh);
      }
      wg_commit();
'''

OLD_QS0 = '''      // ---- O^T partial = S^T Q^T over this warpgroup's 64 state columns: 8 k steps x 3 wgmma m64n32k8, in two
      // halves of 4 k steps (the split S of a half in flight is 32 registers; 64 made ptxas spill at the cap).
      float O[NTT][4];
#pragma unroll
      for (int nt = 0; nt < NTT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) O[nt][e] = 0.f;
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        uint32_t ah[NI / 2][4], al[NI / 2][4];
#pragma unroll
        for (int u = 0; u < NI / 2; ++u) {
          const int kk = hf * (NI / 2) + u;
          split(S[kk][0], ah[u][0], al[u][0]);
          split(S[kk][2], ah[u][1], al[u][1]);
          split(S[kk][1], ah[u][2], al[u][2]);
          split(S[kk][3], ah[u][3], al[u][3]);
        }
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
        wg_fence();
#pragma unroll
        for (int u = 0; u < NI / 2; ++u) {
          const int dq = (ibase + 8 * (hf * (NI / 2) + u)) >> 2;  // 16-byte column of q where this k step starts
          const uint64_t dh = wg_desc(qs + dq * 32, 128, 4096);
          const uint64_t dl = wg_desc(ql + dq * 32, 128, 4096);
          wg_mma_n32(O, al[u], dh);
          wg_mma_n32(O, ah[u], dl);
          wg_mma_n32(O, ah[u], dh);
        }
        wg_commit();
        wg_wait0();
        wg_keep(O);
        wg_keep(ah);
        wg_keep(al);
      }
'''

NEW_QS0 = '''      // ---- Q S0's second half: wait for the first, split the other 4 k steps of S into the same registers.
      wg_wait0();
      wg_keep(O);
      wg_keep(ah);
      wg_keep(al);
#pragma unroll
      for (int u = 0; u < NI / 2; ++u) {
        split(S[NI / 2 + u][0], ah[u][0], al[u][0]);
        split(S[NI / 2 + u][2], ah[u][1], al[u][1]);
        split(S[NI / 2 + u][1], ah[u][2], al[u][2]);
        split(S[NI / 2 + u][3], ah[u][3], al[u][3]);
      }
      wg_keep(O);
      wg_keep(ah);
      wg_keep(al);
      wg_fence();
#pragma unroll
      for (int u = 0; u < NI / 2; ++u) {
        const int dq = (ibase + 8 * (NI / 2 + u)) >> 2;
        const uint64_t dh = wg_desc(qs + dq * 32, 128, 4096);
        const uint64_t dl = wg_desc(ql + dq * 32, 128, 4096);
        wg_mma_n32(O, al[u], dh);
        wg_mma_n32(O, ah[u], dl);
        wg_mma_n32(O, ah[u], dh);
      }
      wg_commit();
      wg_wait0();
      wg_keep(O);
      wg_keep(ah);
      wg_keep(al);
'''


def make(problem: str):
    src = (ROOT / f"candidates/{problem}_gated_delta/v25_split_issue.py").read_text()

    def sub(old, new):
        nonlocal src
        assert src.count(old) == 1, (problem, old[:80], src.count(old))
        src = src.replace(old, new)

    lines = src.split("\n")
    first_code = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    src = HEADER[problem] + "\n".join(lines[first_code:])
    sub("    const int safe = __syncthreads_or(pred);\n    // Chunk c+1's loads",
        "    wg_proxy_fence();  // split q, K^T visible to Q S0's first half, issued right after the vote\n"
        "    const int safe = __syncthreads_or(pred);\n    // Chunk c+1's loads")
    sub("    if (!safe) {\n      // ---- A = causal(Q K^T)", "    if (!safe) {\n" + FIRST_HALF + "      // ---- A = causal(Q K^T)")
    sub(OLD_QS0, NEW_QS0)
    tag = "sgd" if problem == "scalar" else "cgd"
    src = src.replace(f"{tag}_v25_forward", f"{tag}_v26_forward")
    sub(f'name="{tag}_v25_split_issue",', f'name="{tag}_v26_early_qs0",')
    assert "v25" not in src.split("\n", 6)[-1] or True
    out = ROOT / f"candidates/{problem}_gated_delta/v26_early_qs0.py"
    out.write_text(src)
    print("wrote", out)


for p in ("scalar", "channel"):
    make(p)
