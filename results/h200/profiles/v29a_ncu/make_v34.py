"""Write v34 variants of candidates/scalar_gated_delta/v33_yprep_ql.py: the CTAs start in NPH phases spread over one
chunk's length (a clock64 spin before any work), so that the 128 CTAs' load bursts and y stores stop landing on
the memory system at the same moment."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
P = ROOT / "candidates/scalar_gated_delta"
ANCHOR = "  for (int i = tid; i < W::TOTAL; i += 512) sm[i] = 0.f;\n  __syncthreads();\n\n  const int nchunks"
# cycles a chunk at medium / large in v29a's harness times (73.5 us / 32 chunks, 621 us / 128 chunks at 1.98 GHz)
SPIN = ("  {{  // start in {n} phases over a chunk's length: the CTAs' memory bursts stop coinciding\n"
        "    const long long wait = (long long)(blockIdx.x % {n}) * (DP == 64 ? 4550 : 9600) / {n};\n"
        "    const long long t_start = clock64();\n"
        "    while (clock64() - t_start < wait) {{\n    }}\n  }}\n")
for stem, n in (("v34s2_stagger", 2), ("v34s4_stagger", 4)):
    src = (P / "v33_yprep_ql.py").read_text()
    assert src.count(ANCHOR) == 1
    src = src.replace(ANCHOR, SPIN.format(n=n) + ANCHOR)
    src = src.replace("sgd_v33_forward", "sgd_v34_forward").replace('name="sgd_v33_yprep_ql",', f'name="sgd_{stem}",')
    src = f"# {stem}: v33_yprep_ql (below) with the CTAs started in {n} phases over a chunk's length.\n" + src
    assert f'name="sgd_{stem}"' in src
    (P / f"{stem}.py").write_text(src)
    print("wrote", P / f"{stem}.py")
