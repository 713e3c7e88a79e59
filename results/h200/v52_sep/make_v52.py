"""Write candidates/scalar_gated_delta/v52_sep.py from v51a_trim.py (session 23). probe51 on v51a at medium: the six
A-tile prep warps arrive 240-580 cycles after the consumers, and their chunk is three prep-wide barriers in series:
the producers' barrier, then the q split (~680 cycles), the named barrier between reading k's rows and writing K^T hi
over them (k split ~610 with it), the scan and vote (~670, mostly waiting at the vote's barrier for the slowest
split), and only then the A tile (1,390-1,715). v52, at D = 64 (shared memory has room there, not at D = 128):
q hi and K^T hi get arrays of their own (two chunks each, 32 KB), so the input buffers stay raw. The gate scan and
vote come first; then the five A-tile-free warps split q and k for the consumers (no barrier between reading and
writing k now), while the six A-tile warps build their tiles at once from the raw q and k, splitting their own
operands as they load them. The split is the same function on the same values: outputs bitwise v51a's."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"


def sub(src, old, new):
    assert src.count(old) == 1, (old[:160], src.count(old))
    return src.replace(old, new)


def separate(src):
    src = sub(src, """  static constexpr int TOTAL = SF + 4;
  static_assert(REG_C * 32 * NCW""", """  static constexpr bool SEP = DP == 64;             // q hi and K^T hi in arrays of their own; the inputs stay raw
  static constexpr int QH = SF + 4;                 // q hi, 2 chunks (q's blocked layout), when SEP
  static constexpr int KTHS = QH + 2 * C * DP;      // K^T hi, 2 chunks, when SEP
  static constexpr int TOTAL = SEP ? KTHS + 2 * C * DP : SF + 4;
  static_assert(REG_C * 32 * NCW""")
    src = sub(src, "  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0, \"16-byte aligned\");\n",
              "  static_assert(BUF % 4 == 0 && QL % 4 == 0 && KTL % 4 == 0 && AM % 4 == 0 && QH % 4 == 0, \"16-byte aligned\");\n")
    # consumers: q hi and K^T hi from their arrays
    src = sub(src, """    const float* qs = cur + W::QB;
    const float* kth = cur + W::KR;
""", """    const float* qs = W::SEP ? sm + W::QH + nb * C * DP : cur + W::QB;
    const float* kth = W::SEP ? sm + W::KTHS + nb * C * DP : cur + W::KR;
""")
    # the A tile from raw q and k, and the prep order for SEP
    src = sub(src, """// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible:""", """// wsg_atile from the raw inputs (SEP): the same operands, split as they are loaded (q at its blocked offset, k from
// its rows: K^T (d, s) is k[s][d]).
template <int DP>
__device__ __forceinline__ void wsg_atile_raw(float* sm, int c, int w, int gid, int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, CS = W::CS, DPS = W::DPS;
  static_assert(DP == 64, "one 64-column k half");
  const float* buf = sm + (c % W::NBUF) * W::BUF;
  const int nb = c & 1;
  const float* qr = buf + W::QB;
  const float* kr = buf + W::KR;
  const int mtA = w < 2 ? 0 : 1;
  const int ns = w < 2 ? w : w - 2;
  const int ta = 16 * mtA + gid;
  const int sb = 8 * ns + gid;
  float aH[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
  float aL[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const int d = 8 * kk + tig;
    const int oa = wsg_qoff<DP>(ta, d), oa4 = oa + 32, ob8 = wsg_qoff<DP>(ta + 8, d), ob84 = ob8 + 32;
    uint32_t ah[4], al[4], bh0, bh1, bl0, bl1;
    split(qr[oa], ah[0], al[0]);
    split(qr[ob8], ah[1], al[1]);
    split(qr[oa4], ah[2], al[2]);
    split(qr[ob84], ah[3], al[3]);
    split(kr[sb * DPS + d], bh0, bl0);
    split(kr[sb * DPS + d + 4], bh1, bl1);
    mma8(aL[kk & 1], al, bh0, bh1);
    mma8(aL[kk & 1], ah, bl0, bl1);
    mma8(aH[kk & 1], ah, bh0, bh1);
  }
  float a[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) a[e] = (aL[0][e] + aL[1][e]) + (aH[0][e] + aH[1][e]);
  float* am = sm + W::AM + nb * C * CS;
  const int t = 16 * mtA + gid;
  const int s = 8 * ns + 2 * tig;
  am[t * CS + s] = (s <= t) ? a[0] : 0.f;
  am[t * CS + s + 1] = (s + 1 <= t) ? a[1] : 0.f;
  am[(t + 8) * CS + s] = (s <= t + 8) ? a[2] : 0.f;
  am[(t + 8) * CS + s + 1] = (s + 1 <= t + 8) ? a[3] : 0.f;
}

// Prep warps with SEP: the gate scan and vote first; then, unless the chunk takes the safe path, the six A-tile warps
// build their tiles from the raw inputs while the other five split q into q hi / q lo and k into K^T hi / K^T lo in
// their own arrays (on the safe path every prep warp splits, and no A is built).
template <int DP>
__device__ __forceinline__ void wsg_prepare_sep(float* sm, int c, int n, int ptid, int lane, int pw, int gid,
                                                int tig) {
  using W = WsgCfg<DP>;
  constexpr int C = W::C, DPS = W::DPS, NP = W::NP, NQ4 = C * DP / 4, NA = 6 * 32;
  const float* buf = sm + (c % W::NBUF) * W::BUF;
  const int nb = c & 1;
  const float* gsm = buf + W::GR;
  const float* bsm = buf + W::BR;
  float G = (lane < n) ? gsm[lane] : 1.f;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float o = __shfl_up_sync(kFull, G, off);
    if (lane >= off) G *= o;
  }
  const float GC = __shfl_sync(kFull, G, 31);
  const int pred = !(GC >= kSafe);
  if (pw == 0) {
    sm[W::GS + nb * C + lane] = G;
    sm[W::CF + nb * C + lane] = (!pred && lane < n) ? bsm[lane] / G : 0.f;
  }
  const int safe = prep_vote<NP>(pred);
  if (ptid == 0) reinterpret_cast<int*>(sm + W::SF)[nb] = safe;
  if (!safe && pw < 6) {
    wsg_atile_raw<DP>(sm, c, pw, gid, tig);
    return;
  }
  const int sp = safe ? ptid : ptid - NA, nsp = safe ? NP : NP - NA;
  const float* qr = buf + W::QB;
  const float* kr = buf + W::KR;
  float* qh = sm + W::QH + nb * C * DP;
  float* ql = sm + W::QL + nb * C * DP;
  float* kth = sm + W::KTHS + nb * C * DP;
  float* ktl = sm + W::KTL + nb * C * DP;
  for (int i = sp; i < NQ4; i += nsp) {
    const int o = 4 * i;
    const float4 x = *reinterpret_cast<const float4*>(qr + o);
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
    split(x.x, h0, l0);
    split(x.y, h1, l1);
    split(x.z, h2, l2);
    split(x.w, h3, l3);
    *reinterpret_cast<uint4*>(qh + o) = make_uint4(h0, h1, h2, h3);
    *reinterpret_cast<uint4*>(ql + o) = make_uint4(l0, l1, l2, l3);
  }
  for (int idx = sp; idx < NQ4; idx += nsp) {
    const int d = idx & (DP - 1);
    const int t4 = ((unsigned)idx / DP) * 4;
    uint32_t h0, h1, h2, h3, l0, l1, l2, l3;
    split(kr[t4 * DPS + d], h0, l0);
    split(kr[(t4 + 1) * DPS + d], h1, l1);
    split(kr[(t4 + 2) * DPS + d], h2, l2);
    split(kr[(t4 + 3) * DPS + d], h3, l3);
    const int o = wg_ktoff(wg_np(d), t4);
    *reinterpret_cast<uint4*>(kth + o) = make_uint4(h0, h1, h2, h3);
    *reinterpret_cast<uint4*>(ktl + o) = make_uint4(l0, l1, l2, l3);
  }
  wg_proxy_fence();  // q hi / lo, K^T hi / lo visible to the consumers' wgmma after the CTA barrier
}

// Prep warps (ptid 0..NP-1), chunk c's inputs landed and visible:""")
    src = sub(src, """  using W = WsgCfg<DP>;
  constexpr int C = W::C, DPS = W::DPS, NP = W::NP, NQ4 = C * DP / 4, KXR = (NQ4 + NP - 1) / NP;
  float* buf = sm + (c % W::NBUF) * W::BUF;
""", """  using W = WsgCfg<DP>;
  if constexpr (W::SEP) {
    wsg_prepare_sep<DP>(sm, c, n, ptid, lane, pw, gid, tig);
    return;
  }
  constexpr int C = W::C, DPS = W::DPS, NP = W::NP, NQ4 = C * DP / 4, KXR = (NQ4 + NP - 1) / NP;
  float* buf = sm + (c % W::NBUF) * W::BUF;
""")
    return src


src = (P / "v51a_trim.py").read_text()
src = separate(src)
stem = "v52_sep"
src = src.replace("sgd_v51a_forward", "sgd_v52_forward").replace('name="sgd_v51a_trim",', f'name="sgd_{stem}",')
src = (f"# {stem}: v51a_trim (below) with, at D = 64, q hi and K^T hi in arrays of their own, the gate scan and vote\n"
       "# first, and the A tiles built from the raw inputs beside the other prep warps' split.\n" + src)
(P / f"{stem}.py").write_text(src)
print("wrote", P / f"{stem}.py")
