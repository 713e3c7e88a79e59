"""Write .gpu/v63b_tma.py from .gpu/v63_tma.py (make_v63.py; session 27, call 2). probe63 on v63 (call 1): the
consumers' chain grew ~1,700 cycles against v56's (top to the Vt^T fragments +875, A Vt +630, K^T Vt +200) while
the prep warps arrived ~3,000 early; the TMA-issuing warp finished its round one last (3,073 cycles against ~1,900),
and `fence.proxy.async` compiles to MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC, which waits for the thread's outstanding
memory operations: that warp's gate / beta loads, issued just before its split's fence. v63b: those loads after the
prep (where the fences are behind it), `prefetch.tensormap` at the start, and no mbarrier wait on the consumers
(the prep warps waited for the same phase a chunk before, and the CTA barrier orders the rest)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
src = (ROOT / ".gpu/v63_tma.py").read_text()


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v63_tma: v56_kuni (below)", """# v63b_tma: v63_tma (below) with the gate / beta loads after the prep (away from its fences), the tensor maps
# prefetched, and no mbarrier wait on the consumers.
# v63_tma: v56_kuni (below)""")
sub("""    wsh_wait_chunk(sm, ch);  // v's tile (the prep warps waited for it a chunk ago: this is for the memory model)
    WSH_MARK(8, ch);
""", "")
sub("""    if (issuer) {
      if (lane == 0) {
        wsh_tma_chunk(sm, &tq, &tk, &tv, 0, b, h);""", """    if (issuer) {
      if (lane == 0) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tq)) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tk)) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&tv)) : "memory");
        wsh_tma_chunk(sm, &tq, &tk, &tv, 0, b, h);""")
sub("""          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
""", """          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }
        wsh_prepare(sm, ch + 1, min(C, T - (ch + 1) * C), ptid, lane, pw, gid, tig);
        // chunk c + 2's gate and beta after the prep's fences (each waits for this thread's outstanding loads)
        if (issuer && ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
""")
src = src.replace('name="sgd_v63_tma"', 'name="sgd_v63b_tma"').replace("sgd_v63_forward", "sgd_v63b_forward")
(ROOT / ".gpu/v63b_tma.py").write_text(src)
print("wrote .gpu/v63b_tma.py")
