"""Write .gpu/v74_async.py from candidates/scalar_gated_delta/v69_sacc.py (session 33).

ptxas (CUDA 13.0, the device's version) serializes every wgmma of v69's gd_wsh_kernel: each of its 80 HGMMA is
followed by WARPGROUP.DEPBAR.LE gsb0, 0x0, so Q S0's split never overlaps the tensor core and K^T Vt never overlaps
y's stores. Two notes say why (ptxas -v; bisected by editing v69 and counting HGMMA / DEPBAR in the SASS):
- C7515, non-wgmma instructions defining accumulator registers inside a pipeline stage: K^T Vt is issued under
  `if (!last)` and waited after `if (last) break`; ptxas does not pair the two tests, so it sees a path on which
  the group is still in flight. Fix: the wait inside the same `if (!last)` block, y's stores (a lambda) between
  the commit and the wait there, and after the block on the last chunk.
- C7512, insufficient register resources for the wgmma pipeline: with that fixed, Q S0's groups of two k steps
  hold 32 registers of pieces (two buffers) beside S (64), O, P and the Vt'' pieces (16 each), past the
  consumers' 168. Fix: groups of one k step (16 registers of pieces, eight groups, wait_group 1 between).
Neither changes an operation or its order, so y is bitwise v69's. With both, ptxas keeps 12 DEPBAR for 80 HGMMA,
no spills (giving the consumers 184 registers instead fixes C7512 too, but the prep spills 124 bytes at 72).
One full wait stays, injected after Q S0's first group (C7517: ptxas's own reason).

NAME=v74c_pre writes v74 with group 1's split before group 0's issue: ptxas then injects no wait (the one after
group 0 goes; 11 DEPBAR), for one split's delay before the tensor core starts.

NAME=v74b_regs writes the other cure for C7512 instead, to time it beside: v69's groups of two k steps, with the
consumers at 184 registers and the prep warpgroups at 72 (124 bytes of spills in the prep)."""
import os
import subprocess
from pathlib import Path

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())
V69 = ROOT / "candidates/scalar_gated_delta/v69_sacc.py"   # in the catalogue until v76b replaced it (session 37)
src = V69.read_text() if V69.exists() else subprocess.run(
    ["git", "-C", str(ROOT), "show", "904dc1c:candidates/scalar_gated_delta/v69_sacc.py"],
    check=True, capture_output=True, text=True).stdout
(ROOT / ".gpu").mkdir(exist_ok=True)
(ROOT / ".gpu/v69_sacc.py").write_text(src)   # the base make_v70, v71, v73 and v75 read


def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old[:300], src.count(old))
    src = src.replace(old, new)


sub("# v69_sacc: v68c_both (below)",
    "# v74_async: v69_sacc (below) with its wgmma left asynchronous by ptxas: K^T Vt waited inside its own branch\n"
    "# (y's stores between its commit and wait), Q S0 in groups of one k step (its pieces fit the registers).\n"
    "# v69_sacc: v68c_both (below)")

# ---- K^T Vt: issue, y's stores and the wait on one path
start = src.index("      WSH_MARK(3, ch);\n      if (n == C) {")
end = src.index("      WSH_MARK(4, ch);\n", start)
stores = src[start + len("      WSH_MARK(3, ch);\n"):end]
src = src[:start] + "      WSH_MARK(3, ch);\n" + src[end:]  # moved into the branches below
sub("      const bool last = ch + 1 == nchunks;\n",
    "      // y's stores: between K^T Vt's commit and its wait, or alone on the last chunk\n"
    "      auto store_y = [&]() {\n" + stores.replace("\n        ", "\n          ").replace("\n      }", "\n        }")
    .replace("      if (n == C)", "        if (n == C)", 1) + "      };\n"
    "      const bool last = ch + 1 == nchunks;\n")
sub("""        wg_commit();
      }
      WSH_MARK(3, ch);""", """        wg_commit();
        WSH_MARK(3, ch);
        store_y();
        wg_wait0();  // K^T Vt in the same branch as its issue: ptxas pairs them only so (else C7515, all serialized)
        wg_keep(S[0]);
        wg_keep(S[1]);
      } else {
        WSH_MARK(3, ch);
        store_y();
      }""")
sub("""      if (last) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
      wg_wait0();  // K^T Vt, issued before y's stores
      wg_keep(S[0]);
      wg_keep(S[1]);
""", """      if (last) {
        cta_sync();
        break;  // the last chunk: no state after it
      }
""")

NAME = os.environ.get("NAME", "v74_async")
if NAME == "v74b_regs":
    sub("REG_C = 168, REG_P = 88, QG = 4;", "REG_C = 184, REG_P = 72, QG = 4;")


def sub_groups(old, new, count=1):  # v74b_regs keeps v69's groups of two k steps
    if NAME != "v74b_regs":
        sub(old, new, count)


# ---- Q S0 in eight groups of one k step
sub_groups("""        // Four groups of two k steps, the pieces in two register buffers: group qb's split runs while group qb - 1's
        // wgmma execute; a buffer is rewritten only after its group has completed (wait_group 1).
        uint32_t ah[2][2][4], al[2][2][4];""",
    """        // Eight groups of one k step, the pieces in two register buffers: group qb's split runs while group qb - 1's
        // wgmma execute; a buffer is rewritten only after its group has completed (wait_group 1). Two steps a group
        // need 16 registers more than the consumers hold beside S, O, P and Vt'' (else C7512, all serialized).
        uint32_t ah[2][1][4], al[2][1][4];""")
sub_groups("for (int qb = 0; qb < 4; ++qb) {", "for (int qb = 0; qb < 8; ++qb) {")
sub_groups("""for (int u = 0; u < 2; ++u) {
            const int kk = 2 * qb + u;""", """for (int u = 0; u < 1; ++u) {
            const int kk = qb + u;""", count=2)
sub_groups("if (qb == 3) wsh_zero(P);", "if (qb == 7) wsh_zero(P);")
sub_groups("if (qb == 3) wsh_avt(P, wh, wl, aph, apl);  // A Vt in Q S0's last group",
    "if (qb == 7) wsh_avt(P, wh, wl, aph, apl);  // A Vt in Q S0's last group")

if NAME == "v74c_pre":
    sub("""#pragma unroll
          for (int u = 0; u < 1; ++u) {
            const int kk = qb + u;
            split_h2(S[(2 * kk) >> 3][(2 * kk) & 7][0] * s0, S[(2 * kk) >> 3][(2 * kk) & 7][1] * s0, ah[bf][u][0], al[bf][u][0]);
            split_h2(S[(2 * kk) >> 3][(2 * kk) & 7][2] * s1, S[(2 * kk) >> 3][(2 * kk) & 7][3] * s1, ah[bf][u][1], al[bf][u][1]);
            split_h2(S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][0] * s0, S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][1] * s0, ah[bf][u][2], al[bf][u][2]);
            split_h2(S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][2] * s1, S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][3] * s1, ah[bf][u][3], al[bf][u][3]);
          }""", """          // Steps 0 and 1 split before group 0's issue: a read of S after the iteration's first commit makes ptxas
          // inject a full wait there (C7517).
#pragma unroll
          for (int kk = qb == 0 ? 0 : qb; kk <= (qb == 0 ? 1 : qb); ++kk) {
            if (qb == 1) break;  // split with step 0
            const int kb = kk & 1;
            split_h2(S[(2 * kk) >> 3][(2 * kk) & 7][0] * s0, S[(2 * kk) >> 3][(2 * kk) & 7][1] * s0, ah[kb][0][0], al[kb][0][0]);
            split_h2(S[(2 * kk) >> 3][(2 * kk) & 7][2] * s1, S[(2 * kk) >> 3][(2 * kk) & 7][3] * s1, ah[kb][0][1], al[kb][0][1]);
            split_h2(S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][0] * s0, S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][1] * s0, ah[kb][0][2], al[kb][0][2]);
            split_h2(S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][2] * s1, S[(2 * kk + 1) >> 3][(2 * kk + 1) & 7][3] * s1, ah[kb][0][3], al[kb][0][3]);
          }""")

# names
src = src.replace("sgd_v69_forward", "sgd_v74_forward")
assert src.count('name="sgd_v69_sacc",') == 1
src = src.replace('name="sgd_v69_sacc",', f'name="sgd_{NAME}",')
assert "v69_sacc\"" not in src
out = ROOT / f".gpu/{NAME}.py"
out.parent.mkdir(exist_ok=True)
out.write_text(src)
print("wrote", out)
