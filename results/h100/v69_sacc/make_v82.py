"""Write .gpu/v82a_tma11.py and .gpu/v82b_tma10.py (session 45, not run: the session's device time was spent).
Candidates, not ablations.

Why. results/h100/v81 (session 45, H100): without its proxy fence the loop's box issue still costs warp 15 376
cycles (v81a reg), and the chunk did not move (bare 6,160 against v79b's 6,152; harness large 457 against 455).
So the fence was not the cost; the issue's ~350-390 cycles a warp are paid whatever the number of boxes (v80a:
one box, 388-393 on each of three warps) and whatever precedes them. Where they are paid is the lever: v79b pays
them in warp 15's round one, which is the vote's last arrival (v81a reg: warp 15 217 + 3,107 against warps 13-14
218 + 2,707-2,711, warp 12 216 + 2,637, warps 8-11 207-209 + 2,192-2,506). Warps 9-11 (q split) end round one
~350-530 cycles before warps 13-14 (k split, which also takes the block's largest |value|). v82 moves the three
boxes, issued as in v79b (one thread, the fence kept), to one of them; warp 15 keeps its gate and beta loads where
they were (after its round-one start, a chunk ahead). No operation on data changes: y is bitwise v79b's.

  v82a_tma11  the loop's boxes on warp 11 (prep warp 3)
  v82b_tma10  the loop's boxes on warp 10 (prep warp 2)

Prediction (written before any run; probe76 bare and reg beside v79b, then a harness run), revised the same session
after reading v81a's reg probe beside v79b's (results/h100/v79/call3; two H100s, two sessions): v81a already let the vote go ~140-300 cycles
earlier than v79b (warps 8-11 leave it at ~3,670 against ~3,806), and A's round two grew by ~160-190 (2,270-2,302 ->
2,429-2,468), so warpgroup 0's arrival moved only ~60-80 cycles and the bare chunk not at all (6,160 against
6,152). That is the refill sessions 28-40 met (v66, v71b, v75, v77, v78a): started earlier, A's round two overlaps
more of the consumers' dense phase on the four schedulers they share (ncu on v68c: issue 50% active, no pipe near
its peak, barrier the largest stall) and stretches. So: warp 15's round one 3,107 -> ~2,730, the vote ~300 cycles
earlier still, A's round two longer by most of that; chunk (bare) 6,152 -> 6,050-6,150, harness large 455 ->
448-455 us on an H100. Worth its one run only beside something else: it measures how much of a vote's advance A
keeps, which says whether any rearrangement of the prep can still move this chunk. If the chunk reads <= ~5,950 the
refill reading is wrong and the vote was the chain after all."""
from variant import catalogue_source, write_variant

LOOP_ISSUE_V79B = """        if (issuer && ch + 2 < nchunks) {
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
          // chunk c + 2's gate and beta a whole chunk before they are stored, after the boxes: the boxes' proxy
          // fence would wait for these loads; round one's, ~2,400 cycles later, finds them landed
          wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);
        }"""


def moved(pw: int) -> str:
    return f"""        if (pw == {pw} && ch + 2 < nchunks) {{
          // chunk c + 2: q / k into chunk c's buffers (split during chunk c - 1), v into chunk c - 1's; on warp
          // {8 + pw}, whose round one (a q block) ends ~350-530 cycles before the k-splitting warps' (v81a reg)
          if (lane == 0) wsh_tma_chunk(sm, &tq, &tk, &tv, ch + 2, b, h);
          WSH_MARK(7, ch + 1);
        }}
        // chunk c + 2's gate and beta a whole chunk before they are stored; round one's fence, ~2,400 cycles later,
        // finds them landed
        if (issuer && ch + 2 < nchunks) wsh_gb_load(gate, beta, b, h, T, H, ch + 2, lane, gn, bn);"""


base = catalogue_source("v79b_gblate", "HEAD")
assert base.count(LOOP_ISSUE_V79B) == 1
for pw, name in ((3, "v82a_tma11"), (2, "v82b_tma10")):
    write_variant(base.replace(LOOP_ISSUE_V79B, moved(pw)), "v79b_gblate", name,
                  f"# {name}: v79b_gblate (below) with the loop's TMA boxes (chunk c+2) issued by warp {8 + pw}, "
                  "not warp 15.")
