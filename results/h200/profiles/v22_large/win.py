import pandas as pd, sys
f, lo, hi = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16)
df = pd.read_csv(f, skiprows=1)
df = df[pd.to_numeric(df["# Samples"], errors="coerce").notna()]
for _, r in df.iterrows():
    a = int(r["Address"], 16)
    if lo <= a <= hi:
        print(f'{a & 0xfffff:05x} {r["Warp Stall Sampling (All Samples)"]:>6} {int(float(r["Instructions Executed"])):>9} {r["Source"].strip()[:90]}')
