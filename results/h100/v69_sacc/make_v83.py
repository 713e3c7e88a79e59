"""Write .gpu/v83a_adesc.py and .gpu/v83b_wg1scan.py (session 46). Candidates, not ablations.

Why. A static count of v79b's SASS by source line (local ptxas for sm_90a, `nvdisasm -gi`, each instruction charged
to the line of the kernel or of wsh_prepare it was inlined from; session 46) gives per warp and chunk: prep
warpgroup 0 ~620 instructions (gate scan ~45, q split 246, A 291), warpgroup 1 ~595 (k split 247, K^T Vt's k split
253), the consumers ~980: ~3,200 a scheduler (two warps of each role) a chunk of ~6,150 cycles. Of A's 291, ~100
come before its first wgmma and only build descriptors: wsh_amat calls wg_desc (mask, shift, or, and two R2UR)
afresh for both operands of each of its 8 wgmma, where every other product of the kernel builds one descriptor an
operand and steps it (Q S0: ~18 instructions for 48). They sit on warpgroup 0's round two, the prep's last
arrival. v83a builds A's two low words once and steps them; the wgmma, their operands and everything after are
unchanged, so y is bitwise v79b's.

  v83a_adesc    v79b_gblate with A's descriptors from two low words, stepped
  v83b_wg1scan  v83a_adesc with the gate scan (~45 instructions; on warp 8 also the G_t, beta_s / G_s, 1 / G_s
                stores, ~26) on warpgroup 1 only: warpgroup 0 never used it but for the vote, where every prep
                warp's predicate is the same; warp 12 stores instead of warp 8, and warpgroup 0 votes 0

Local ptxas (sm_90a): A 291 -> 242 instructions, its first wgmma after ~25 instead of ~100; 128 registers, no
spills, 64 HGMMA / 12 DEPBAR as v79b. (A 64-bit descriptor stepped with wg_desc_at was hoisted out of the loop
and spilled the prep path 32 bytes; an empty asm to keep it in the loop still spilled.)

Local ptxas (sm_90a) of v83b: no spills, 128 registers; warpgroup 0's path a chunk ~620 -> ~525 instructions with
v83a's change (the scan's shuffles, now under a branch on the warp, gained divergent fallbacks that a converged warp
never runs).

Prediction (written before any run): round two of warps 8-11 shorter by ~100-250 cycles (reg); since session 46
reads the two chains as equal within ~100 cycles (v82a reg), the chunk follows only as far as the SM's shared
issue falls (~50 of ~3,200 instructions a scheduler, 1.5%): chunk (bare) 6,150 -> 6,050-6,130, harness large
-0.3 to -1.5% (H200: 457 -> 450-456 µs). If the chunk falls by more than ~2%, the issue model is too coarse and
the prep chain still leads; if it does not move at all, issue slots are not the shared limit, and the profiles
next_call_v83.sh takes have to say what is. v83b: round one of warps 8-11 ~100-200 cycles shorter as well, which
cannot advance the vote (its last arrival is warp 15, the box issue), so its gain over v83a is the issue taken off
the schedulers (~95 instructions a scheduler with v83a's, 3%): chunk 6,000-6,100, harness large 446-454 µs on an
H200; outputs bitwise v79b's (the same values, stored by another warp).

  v83c_early    v83b_wg1scan with chunk 0's and 1's TMA boxes issued first, before the setup, and chunk 0's gate
                and beta fetched into L2 there: the issuer inits the mbarriers and issues the boxes, then every
                thread zeroes shared memory from the gate buffers on (~114 KB; the tiles below, which the boxes
                fill whole, are no longer zeroed) under their DRAM latency (session 47)

Why v83c (session 47, no machine). The kernel's time is the slowest CTA's entry to exit: ~7 µs of it outside
chunks 1..126 (v82's call: slowest span 450.2 µs, harness 457-458). Its setup zeroed all ~223 KB of shared memory
(~1,800 cycles at 128 bytes a cycle, ~1 µs) before the first box was issued, so chunk 0's DRAM latency came after
it. Prediction (written before any run): probe76's "entry to chunk 1's top" 0.5-1.0 µs under v83b's, the chunk
unchanged; harness large 0.5-1 µs under v83b (446-453 on an H200: within the run-to-run drift of one file, so the
probe's line is the measure, the harness the check that nothing else moved). Local ptxas (sm_90a): 128 registers,
64 HGMMA / 12 DEPBAR; 4 bytes spilled: ptxas keeps `gid` on the stack once the zeroing starts at the gate
buffers (a float or float4 loop alike; zeroing from 0 with the rest unchanged spills nothing), reloaded at each
role's setup and on the safe path, outside the non-safe chunk loops."""
from variant import catalogue_source, write_variant

AMAT_V79B = """  float a[8][4];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[nt][e] = 0.f;
  wg_keep(a);
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)  // columns 16 kk ..: 128 halves (64 floats) a step
    wh_mma_ss_n64(a, wg_desc(qp + 64 * kk, 128, 2048), wg_desc(kp + 64 * kk, 128, 2048));"""

AMAT_V83A = """  // A's two descriptors: the low words once, stepped by 16 (256 bytes) a k step, the high word (SBO 2048 >> 4) a
  // constant. v79b called wg_desc afresh for all 16 (mask, shift and or each, ~100 instructions before the first
  // wgmma); a 64-bit descriptor stepped by wg_desc_at was hoisted out of the loop for both chunk parities and
  // spilled the prep path (32 bytes, local ptxas).
  const uint32_t lq = (wg_desc(qp, 128, 2048) & 0xffffffffu), lk = (wg_desc(kp, 128, 2048) & 0xffffffffu);
  constexpr uint64_t hi = (uint64_t)(2048 >> 4) << 32;
  float a[8][4];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[nt][e] = 0.f;
  wg_keep(a);
  wg_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)  // columns 16 kk ..: 128 halves (64 floats) a step
    wh_mma_ss_n64(a, hi | (lq + 16u * kk), hi | (lk + 16u * kk));"""

SCAN_V79B = """  float G = (lane < n) ? gsm[lane] : 1.f;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float o = __shfl_up_sync(kFull, G, off);
    if (lane >= off) G *= o;
  }
  const float GC = __shfl_sync(kFull, G, 31);
  const int pred = !(GC >= kSafe);
  const float rg = (!pred && lane < n) ? 1.f / G : 0.f;
  if (pw == 0) {
    sm[W::GS + nb * C + lane] = G;
    sm[W::CF + nb * C + lane] = (!pred && lane < n) ? bsm[lane] / G : 0.f;
    sm[W::RG + nb * C + lane] = rg;
  }
  if (pw < 4) {
    wsh_split_q<false, true>(qt, reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16),
                             reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16 + 512), sm + W::RQ + nb * C, pw,
                             lane);
  } else {
    const float m = wsh_split_q<true>("""

SCAN_V83B = """  int pred = 0;  // warpgroup 0 votes 0: the gates' vote is warpgroup 1's, which needs the scan for 1 / G_s
  if (pw < 4) {
    wsh_split_q<false, true>(qt, reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16),
                             reinterpret_cast<uint32_t*>(sm + W::QH + 2 * nb * W::H16 + 512), sm + W::RQ + nb * C, pw,
                             lane);
  } else {
    float G = (lane < n) ? gsm[lane] : 1.f;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const float o = __shfl_up_sync(kFull, G, off);
      if (lane >= off) G *= o;
    }
    const float GC = __shfl_sync(kFull, G, 31);
    pred = !(GC >= kSafe);
    const float rg = (!pred && lane < n) ? 1.f / G : 0.f;
    if (pw == 4) {  // A reads G_t and 1 / G_s after the vote's barrier, the consumers after the CTA's
      sm[W::GS + nb * C + lane] = G;
      sm[W::CF + nb * C + lane] = (!pred && lane < n) ? bsm[lane] / G : 0.f;
      sm[W::RG + nb * C + lane] = rg;
    }
    const float m = wsh_split_q<true>("""

base = catalogue_source("v79b_gblate", "HEAD")
assert base.count(AMAT_V79B) == 1
assert base.count(SCAN_V79B) == 1
v83a = base.replace(AMAT_V79B, AMAT_V83A)
write_variant(v83a, "v79b_gblate", "v83a_adesc",
              "# v83a_adesc: v79b_gblate (below) with A's wgmma descriptors built from two low words and stepped.")
write_variant(v83a.replace(SCAN_V79B, SCAN_V83B), "v79b_gblate", "v83b_wg1scan",
              "# v83b_wg1scan: v79b_gblate (below) with A's descriptors as v83a_adesc's and the gate scan on warpgroup 1 "
              "only.")

SETUP_V79B = """  if (sm_addr(sm) & 1023) __trap();  // wsh_toff's swizzle assumes 1024-byte aligned tiles
  for (int i = tid; i < W::MB; i += 512) sm[i] = 0.f;
  if (tid == 0) {
    for (int i = 0; i < W::NBUF; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  wg_proxy_fence();  // the zeros before the copy engine's writes
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
"""

SETUP_V83C = """  if (sm_addr(sm) & 1023) __trap();  // wsh_toff's swizzle assumes 1024-byte aligned tiles
  // Chunk 0's and 1's boxes first, and chunk 0's gate and beta fetched into L2 (the issuer, warp NCW + NPW - 1):
  // the zeroing below runs under their DRAM latency. It stops short of the TMA tiles, which the boxes fill whole
  // (rows past T as zeros) before anything reads them. (With the zeroing starting there ptxas keeps gid on the
  // stack: 4 bytes, reloaded outside the non-safe chunk loops.)
  if (warp == W::NCW + W::NPW - 1) {
    if (lane == 0) {
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tq)) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tk)) : "memory");
      asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tv)) : "memory");
      for (int i = 0; i < W::NBUF; ++i) mbar_init(reinterpret_cast<uint64_t*>(sm + W::MB) + i, 1);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      wsh_tma_chunk(sm, &tq, &tk, &tv, 0, b, h);
      if (C < T) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);
    }
    if (lane < min(C, T)) {
      const long long o = ((long long)b * T + lane) * H + h;
      asm volatile("prefetch.global.L2 [%0];" ::"l"(gate + o));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(beta + o));
    }
  }
  static_assert(W::GB % 4 == 0 && W::MB % 4 == 0, "16-byte zeros");
  for (int i = W::GB / 4 + tid; i < W::MB / 4; i += 512) smem_f4[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  wg_proxy_fence();  // the zeros before any wgmma reads them
  __syncthreads();

  const int nchunks = (T + C - 1) / C;
"""

ISSUE_V79B = """    if (issuer) {
      if (lane == 0) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tq)) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tk)) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tv)) : "memory");
        wsh_tma_chunk(sm, &tq, &tk, &tv, 0, b, h);
        if (1 < nchunks) wsh_tma_chunk(sm, &tq, &tk, &tv, 1, b, h);
      }
      wsh_gb_load(gate, beta, b, h, T, H, 0, lane, gn, bn);
      wsh_gb_store(sm, 0, gn, bn, lane);
"""

ISSUE_V83C = """    if (issuer) {  // chunk 0's boxes issued before the setup, its gate and beta fetched into L2 there
      wsh_gb_load(gate, beta, b, h, T, H, 0, lane, gn, bn);
      wsh_gb_store(sm, 0, gn, bn, lane);
"""

v83b = v83a.replace(SCAN_V79B, SCAN_V83B)
assert v83b.count(SETUP_V79B) == 1 and v83b.count(ISSUE_V79B) == 1
write_variant(v83b.replace(SETUP_V79B, SETUP_V83C).replace(ISSUE_V79B, ISSUE_V83C), "v79b_gblate", "v83c_early",
              "# v83c_early: v79b_gblate (below) as v83b_wg1scan, with chunk 0's boxes issued (its gate and beta "
              "fetched into L2) before the setup's zeroing, which stops short of the TMA tiles.")
