"""Write .gpu/v63c_tma.py from .gpu/v63b_tma.py (make_v63b.py; session 27, call 2): v63b with chunk c+2's TMA issued
after the issuing warp's prep (round two) instead of before its round one, so that the copy engine's 48 KB land
beside the consumers' y stores and K^T Vt rather than beside their Vt^T fragments and Q S0 (call 1: the consumers'
top grew ~875 cycles while the copies landed). The data then has ~2,000-3,000 cycles to land before the prep warps
wait for it."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v63b_tma.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v63b_tma: v63_tma (below)", """# v63c_tma: v63b_tma (below) with chunk c+2's TMA issued after the prep of chunk c+1.
# v63b_tma: v63_tma (below)""")
sub("""        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
""", """        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }
""")
src = src.replace('name="sgd_v63b_tma"', 'name="sgd_v63c_tma"').replace("sgd_v63b_forward", "sgd_v63c_forward")
(ROOT / ".gpu/v63c_tma.py").write_text(src)
print("wrote .gpu/v63c_tma.py")
