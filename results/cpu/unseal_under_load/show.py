import json,sys
for line in open(sys.argv[1]):
    r=json.loads(line)
    if r["candidate"]!="cpu_loops": continue
    t=r["timing"]
    keys=["median_us","judge_us","judge_cpu_us","judge_first_cpu_us","judge_first_reason","judge_overhead_us","judge_lone_us","judge_lone_allowed_us","judge_slowdown","judge_twin_us","judge_burst_again_us","judge_twin_burst_us","judge_twin_overhead_us","judge_parallelism","load_1min","judge_elapsed_s"]
    print(r["status"], r["reason"][:300])
    print({k:t.get(k) for k in keys if k in t})
