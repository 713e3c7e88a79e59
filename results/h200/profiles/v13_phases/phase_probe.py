"""Per-phase cycles of v13's gd_tc_kernel (thread 0 of each CTA, clock64 at each CTA barrier), at medium and large.
Phases per chunk: P0 top barrier -> vote (prefetch issue, [DEFER: previous chunk's y], split q/k, gate scan);
P1 vote -> A-tiles barrier (A = causal QK^T, G, Vt); P2 that barrier -> thread 0's end of the chunk body
(MMAs: O = S Q + Vt A, state update, partials to ob; non-DEFER: the barrier before y and thread 0's part of y);
P3 thread 0's end of body -> next top barrier (waiting for the other warps and the cp.async of the next chunk)."""
import re, sys, time, types
from pathlib import Path
import torch

src = Path(sys.argv[1]).read_text()
dry = "--dry" in sys.argv

def sub(old, new, count=1):
    global src
    assert src.count(old) == count, (old, src.count(old))
    src = src.replace(old, new)

sub("template <int DP, bool CHAN>\n__global__ void __launch_bounds__(Cfg<DP, CHAN>::NT, 1)\ngd_tc_kernel(",
    "__device__ unsigned long long g_phase[8];\ntemplate <int DP, bool CHAN>\n__global__ void __launch_bounds__(Cfg<DP, CHAN>::NT, 1)\ngd_tc_kernel(")
MARK = "    if (tid == 0) {{ unsigned now = clock(); {extra}ph_sm[{slot}] += now - ph_sm[8]; ph_sm[8] = now; }}\n"
sub("  int psafe = 0;  // DEFER: safe flag of the previous chunk, whose output is written at the start of this one\n",
    "  int psafe = 0;  // DEFER: safe flag of the previous chunk, whose output is written at the start of this one\n"
    "  __shared__ unsigned ph_sm[10];  // phase cycle sums P0..P3, then the last mark and the start\n"
    "  if (tid == 0) { for (int i = 0; i < 8; ++i) ph_sm[i] = 0; ph_sm[9] = clock(); ph_sm[8] = ph_sm[9]; }\n")
sub("    __syncthreads();  // this chunk's inputs landed; the previous chunk's ob partials (and G) complete\n",
    "    __syncthreads();  // this chunk's inputs landed; the previous chunk's ob partials (and G) complete\n"
    "    if (tid == 0) { unsigned now = clock(); if (ch > 0) ph_sm[3] += now - ph_sm[8]; ph_sm[8] = now; }\n")
sub("    const int safe = __syncthreads_or(pred);\n",
    "    const int safe = __syncthreads_or(pred);\n" + MARK.format(extra="", slot=0))
sub("      __syncthreads();  // A tiles, split q/k (and channel G, Vt) visible\n",
    "      __syncthreads();  // A tiles, split q/k (and channel G, Vt) visible\n" + MARK.format(extra="", slot=1))
sub("      store_y<DP, CHAN>(y, ob, gsm, gsc, b, h, T, H, D, t0, n, safe, tid, fast);\n    }\n  }\n",
    "      store_y<DP, CHAN>(y, ob, gsm, gsc, b, h, T, H, D, t0, n, safe, tid, fast);\n    }\n"
    + MARK.format(extra="", slot=2) + "  }\n"
    "  if (tid == 0) { for (int i = 0; i < 4; ++i) atomicAdd(&g_phase[i], (unsigned long long)ph_sm[i]);\n"
    "    atomicAdd(&g_phase[4], 1ull); atomicAdd(&g_phase[5], (unsigned long long)(unsigned)(clock() - ph_sm[9]));\n"
    "    atomicAdd(&g_phase[6], (unsigned long long)nchunks); }\n")
sub('cuda_sources=[CUDA_SRC + DISPATCH_SRC],',
    'cuda_sources=[CUDA_SRC + DISPATCH_SRC + PHASE_SRC],')
sub('CPP_SRC = "void sgd_v13_forward(', 'PHASE_SRC = r"""\n'
    'torch::Tensor phase_read() { unsigned long long h[8]; cudaMemcpyFromSymbol(h, g_phase, sizeof(h));\n'
    '  auto t = torch::empty({8}, torch::kInt64); for (int i = 0; i < 8; ++i) t.data_ptr<int64_t>()[i] = (int64_t)h[i]; return t; }\n'
    'void phase_reset() { unsigned long long z[8] = {0}; cudaMemcpyToSymbol(g_phase, z, sizeof(z)); }\n"""\n'
    'CPP_SRC = "torch::Tensor phase_read(); void phase_reset(); void sgd_v13_forward(')
sub('functions=["sgd_v13_forward"],', 'functions=["sgd_v13_forward", "phase_read", "phase_reset"],')
sub('name="sgd_v13_seed_tc",', 'name="sgd_v13_phase_probe",')
if dry:
    Path("/tmp/phase_probe_src.py").write_text(src)
    m = re.search(r'CUDA_SRC = r"""(.*?)"""', src, re.S)
    d = re.search(r'DISPATCH_SRC = r"""(.*?)"""', src, re.S)
    p = re.search(r'PHASE_SRC = r"""(.*?)"""', src, re.S)
    Path("/tmp/phase_probe.cu").write_text("#include <torch/extension.h>\n" + m.group(1) + d.group(1) + p.group(1))
    print("edits applied; /tmp/phase_probe.cu written")
    sys.exit(0)

module = types.ModuleType("phase_probe")
exec(compile(src, "phase_probe", "exec"), module.__dict__)
model, ext = module.ModelNew(), module._ext
clock_khz = None
for name, (B, T, H, D) in {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}.items():
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
    gate = torch.sigmoid(torch.randn(B, T, H, device="cuda", generator=g) + 2.0)
    beta = torch.rand(B, T, H, device="cuda", generator=g)
    for _ in range(3):
        model(q, k, v, gate, beta)
    torch.cuda.synchronize()
    ext.phase_reset()
    runs = 10
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        model(q, k, v, gate, beta)
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / runs
    c = ext.phase_read().tolist()
    blocks, chunks = c[4], c[6]
    per_chunk = [x / chunks for x in c[:4]]
    total = sum(per_chunk)
    kernel_cycles = c[5] / blocks
    print(f"{name}: {ms * 1e3:.1f} us per call (events, back to back); CTAs {blocks // runs} per call; "
          f"chunks per CTA {chunks // blocks}; kernel cycles per CTA {kernel_cycles:.0f} "
          f"-> {kernel_cycles / (ms * 1e-3) / 1e6:.0f} MHz implied")
    for label, x in zip(("P0 prefetch/split/scan", "P1 A tiles/G/Vt", "P2 MMAs+state(+y)", "P3 wait at top"), per_chunk):
        print(f"  {label:26s} {x:8.0f} cycles per chunk  {100 * x / total:5.1f}%")
    print(f"  {'sum':26s} {total:8.0f}")
