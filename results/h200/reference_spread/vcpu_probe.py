"""Is the eager reference's host-bound time a property of the vCPU it runs on? Per vCPU: wall, CPU time, steal."""
import ctypes, gc, json, os, resource, sys, time, importlib.util
import torch

libc = ctypes.CDLL(None)
def cpu_now(): return libc.sched_getcpu()
def steal():
    with open("/proc/stat") as f:
        return int(f.readline().split()[8]) / os.sysconf("SC_CLK_TCK")
def load(path):
    spec = importlib.util.spec_from_file_location("ref", path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m

root, out_path = sys.argv[1], sys.argv[2]
model = load(f"{root}/problems/scalar_gated_delta.py").Model().cuda().eval()
g = torch.Generator(device="cuda").manual_seed(1)
def draw(B, T, H, D):
    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
    return [q, k, v, torch.sigmoid(torch.randn(B, T, H, device="cuda", generator=g) + 2), torch.rand(B, T, H, device="cuda", generator=g)]
seed, medium = draw(2, 128, 4, 24), draw(8, 1024, 16, 64)

def calls(args, n):
    rows = []
    for _ in range(n):
        torch.cuda.synchronize()
        r0 = resource.getrusage(resource.RUSAGE_SELF); s0 = steal()
        t0 = time.perf_counter(); c0 = time.thread_time()
        with torch.no_grad():
            model(*args)
        c1 = time.thread_time(); t1 = time.perf_counter()
        torch.cuda.synchronize(); t2 = time.perf_counter()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        rows.append([round((t2 - t0) * 1e3, 2), round((t1 - t0) * 1e3, 2), round((c1 - c0) * 1e3, 2),
                     round((steal() - s0) * 1e3, 1), r1.ru_nivcsw - r0.ru_nivcsw, cpu_now()])
    return rows

def med(rows, i=0):
    v = sorted(r[i] for r in rows); return v[len(v) // 2]

calls(seed, 5); calls(medium, 2)
results = {"cores": {}, "free": {}}
every = sorted(os.sched_getaffinity(0))
for rep in range(2):
    for core in every:
        os.sched_setaffinity(0, {core})
        rows = calls(seed, 12)
        results["cores"].setdefault(core, []).append(rows)
        print(f"pass {rep} core {core:2d}: seed wall {med(rows):6.2f} ms launch {med(rows,1):6.2f} cpu {med(rows,2):6.2f} steal {sum(r[3] for r in rows):5.1f} ms invol {sum(r[4] for r in rows)}", flush=True)
    os.sched_setaffinity(0, set(every))
for label, args, n in (("seed", seed, 40), ("medium", medium, 20)):
    rows = calls(args, n)
    results["free"][label] = rows
    print(f"free {label}: wall {med(rows):.2f} cpu {med(rows,2):.2f} cores {sorted(set(r[5] for r in rows))} steal {sum(r[3] for r in rows):.1f} ms", flush=True)
    for r in rows: print("   ", r)
gc.disable()
rows = calls(medium, 20); results["free"]["medium_nogc"] = rows
print(f"free medium gc off: wall {med(rows):.2f} cpu {med(rows,2):.2f}", flush=True)
json.dump(results, open(out_path, "w"))
