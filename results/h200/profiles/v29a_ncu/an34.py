"""Summarise an ncu source page (--page source --csv --print-source sass): stall reasons over all samples, samples by
opcode, the 25 costliest instructions, and the stall reasons on the global-memory instructions (STG, LDGSTS)."""
import sys

import pandas as pd

for f in sys.argv[1:]:
    df = pd.read_csv(f, skiprows=1)
    df = df[pd.to_numeric(df["# Samples"], errors="coerce").notna()]
    for c in df.columns[2:]:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    tot = df["Warp Stall Sampling (All Samples)"].sum()
    print("==", f, "samples", tot, "instructions", len(df))
    st = [c for c in df.columns if c.startswith("stall_") and "Not Issued" not in c]
    s = df[st].sum().sort_values(ascending=False)
    print("stall reasons (% of samples):", ", ".join(f"{k[6:]} {100*v/tot:.1f}" for k, v in s.items() if v > 0.01 * tot))
    df["op"] = df["Source"].str.strip().str.replace(r"^@!?U?P\w+\s+", "", regex=True).str.split().str[0].str.split(".").str[0]
    g = df.groupby("op")[["Warp Stall Sampling (All Samples)", "Instructions Executed"]].sum().sort_values(
        "Warp Stall Sampling (All Samples)", ascending=False)
    g["pct"] = 100 * g["Warp Stall Sampling (All Samples)"] / tot
    print(g.head(16).to_string())
    for op in ("STG", "LDGSTS", "STS", "LDS", "BAR", "WARPGROUP", "HGMMA", "HMMA"):
        sub = df[df["op"] == op]
        if len(sub) == 0:
            continue
        r = sub[st].sum().sort_values(ascending=False)
        n = sub["Warp Stall Sampling (All Samples)"].sum()
        print(f"{op}: {len(sub)} instructions, {100*n/tot:.1f}% of samples:",
              ", ".join(f"{k[6:]} {100*v/tot:.1f}" for k, v in r.items() if v > 0.002 * tot))
    top = df.sort_values("Warp Stall Sampling (All Samples)", ascending=False).head(25)
    for _, r in top.iterrows():
        reasons = sorted(((r[c], c[6:]) for c in st), reverse=True)[:3]
        print(f'{r["Address"]:>8} {100*r["Warp Stall Sampling (All Samples)"]/tot:5.1f}% {r["Source"][:60]:60s}',
              " ".join(f"{n}:{int(v)}" for v, n in reasons))
