import json, glob, re, statistics, sys
def rows(ks):
    for k in ks:
        try:
            for line in open(f"res_L{k}/4_SumReduction/records.jsonl"):
                r = json.loads(line)
                if r["candidate"] != "cpu_loops": continue
                t = r["timing"]; claim = t["median_us"]
                first = t.get("judge_first_cpu_us", t.get("judge_cpu_us"))
                print(f"L{k}: {r['status']:9s} claim {claim:6.1f} cpu_beyond first {first:7.1f} final {t.get('judge_cpu_us'):7.1f} allowed {1.25*claim*2+20:6.1f} overhead/call {t['judge_overhead_us']:.0f}")
        except FileNotFoundError:
            pass
    un = []
    for k in ks:
        for f in glob.glob(f"bl_L{k}/*"):
            for line in open(f):
                m = re.search(r"n=64 unseal=True wall_unseal=([\d.]+) cpu_unseal=([\d.]+)", line)
                if m: un.append(float(m.group(2)))
    if un:
        un.sort()
        print(f"unseal CPU per 64-slot burst: n={len(un)} median {statistics.median(un):.1f} ms, p90 {un[int(0.9*len(un))]:.1f}, max {un[-1]:.1f}, min {un[0]:.1f}")
print("old (torch MT, whole stream):"); rows(range(11, 19))
print("new (numpy Philox, chunked):"); rows(range(21, 31))
print("final (numpy Philox chunked, quickest burst judged):"); rows(range(31, 41))
