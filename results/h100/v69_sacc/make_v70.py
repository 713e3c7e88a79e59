"""Write .gpu/v70_tmalate.py from .gpu/v69_sacc.py (make_v69.py; session 29).

probe63 on v68c (results/h200/v68_pipe/call2): lane 0 of prep warp 15 issues chunk c+2's 12 TMA boxes before its
round one, and that issue reads 1,145 cycles; warp 15's round one then ends ~650 cycles after the others', and
every prep warp waits for it at the vote (730-980 cycles on warpgroup 0, which builds A after the vote and arrives
only ~720 cycles before the consumers). v70 issues the TMA after the vote, on warpgroup 1 (whose round two, the k
split by column, arrives ~2,585 cycles early), so the vote waits for the split alone. The buffers it fills are read
by no one between the two places (q / k: chunk c's raw tiles, split during chunk c - 1; v: chunk c - 1's tile),
and the data still lands a chunk before its prep. Bitwise v69_sacc: no arithmetic changes."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v69_sacc.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v69_sacc: v68c_both (below)", "# v70_tmalate: v69_sacc (below) with chunk c+2's TMA issued after the prep's vote, beside the k split by column.\n"
    "# v69_sacc: v68c_both (below)")
sub("""__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig) {""",
    """__device__ __forceinline__ void wsh_prepare(float* sm, int c, int n, int ptid, int lane, int pw, int gid, int tig,
                                            const CUtensorMap* tq, const CUtensorMap* tk, const CUtensorMap* tv,
                                            int b, int h, int issue) {""")
sub("""  } else {
    const float km = fmaxf(fmaxf(sm[W::KMX], sm[W::KMX + 1]), fmaxf(sm[W::KMX + 2], sm[W::KMX + 3]));""",
    """  } else {
    // chunk `issue`'s TMA (c + 1 when preparing c: the vote no longer waits for it)
    if (issue >= 0 && pw == NP / 32 - 1 && lane == 0) wsh_tma_chunk(sm, tq, tk, tv, issue, b, h);
    WSH_MARK(7, c);
    const float km = fmaxf(fmaxf(sm[W::KMX], sm[W::KMX + 1]), fmaxf(sm[W::KMX + 2], sm[W::KMX + 3]));""")
sub("""    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig);""",
    """    wsh_prepare(sm, 0, min(C, T), ptid, lane, pw, gid, tig, &tq, &tk, &tv, b, h, -1);""")
sub("""        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);""",
    """        // chunk c + 2 (issued after the vote): q / k into chunk c's buffers (split during chunk c - 1), v into
        // chunk c - 1's
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig, &tq, &tk, &tv, b, h,
                    ch + 2 < nchunks ? ch + 2 : -1);""")
src = src.replace('name="sgd_v69_sacc"', 'name="sgd_v70_tmalate"').replace("sgd_v69_forward", "sgd_v70_forward")
(ROOT / ".gpu/v70_tmalate.py").write_text(src)
print("wrote v70_tmalate")
