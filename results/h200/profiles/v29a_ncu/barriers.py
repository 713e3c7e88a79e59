import pandas as pd, sys
f=sys.argv[1]
df = pd.read_csv(f, skiprows=1)
df = df[pd.to_numeric(df["# Samples"], errors="coerce").notna()].copy()
for c in df.columns[2:]:
    df[c] = pd.to_numeric(df[c], errors="coerce")
df["addr"]=df["Address"].apply(lambda a:int(a,16)); df["addr"]-=df["addr"].min()
tot=df["Warp Stall Sampling (All Samples)"].sum()
d=df.sort_values("stall_barrier",ascending=False).head(12)
for _,r in d.iterrows():
    i=r.name
    prev=df.loc[max(df.index.min(),i-3):i, "Source"].tolist()
    print(f'{r.addr:6x} bar={int(r.stall_barrier)} ({100*r.stall_barrier/tot:.1f}%) exec={int(r["Instructions Executed"])} |', " ; ".join(s.strip()[:40] for s in prev))
