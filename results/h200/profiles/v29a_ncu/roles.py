import pandas as pd, sys
f=sys.argv[1]; lo=int(sys.argv[2],16); hi=int(sys.argv[3],16)
df = pd.read_csv(f, skiprows=1)
df = df[pd.to_numeric(df["# Samples"], errors="coerce").notna()].copy()
for c in df.columns[2:]:
    df[c] = pd.to_numeric(df[c], errors="coerce")
df["addr"]=df["Address"].apply(lambda a:int(a,16)); df["addr"]-=df["addr"].min()
df["op"]=df["Source"].str.strip().str.replace(r"^@!?U?P\w+\s+", "", regex=True).str.split().str[0].str.split(".").str[0]
st=[c for c in df.columns if c.startswith("stall_") and "Not Issued" not in c]
tot=df["Warp Stall Sampling (All Samples)"].sum()
for name, m in (("consumer", (df.addr>=lo)&(df.addr<hi)), ("other", ~((df.addr>=lo)&(df.addr<hi)))):
    d=df[m]; n=d["Warp Stall Sampling (All Samples)"].sum()
    print(f"{name}: {n} samples ({100*n/tot:.1f}%), {int(d['Instructions Executed'].sum())} warp-instructions")
    s=d[st].sum().sort_values(ascending=False)
    print("  ", ", ".join(f"{k[6:]} {100*v/n:.1f}" for k,v in s.items() if v>0.01*n))
    g=d.groupby("op")[["Warp Stall Sampling (All Samples)","Instructions Executed"]].sum().sort_values("Warp Stall Sampling (All Samples)",ascending=False).head(12)
    g["pct"]=100*g.iloc[:,0]/n
    print(g.to_string())
