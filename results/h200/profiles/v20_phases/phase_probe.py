"""Which role bounds v20's warp-specialised kernel (gd_ws_kernel) at medium: clock() marks by consumer thread 0 and
producer thread 256 of each CTA. Per chunk: busy = from the CTA barrier that starts the chunk to the thread's
arrival at the next one; wait = from that arrival to the barrier's release. The prologue (chunk 0's loads and
preparation) is outside the loop and not counted.
    python3 phase_probe.py candidates/scalar_gated_delta/v20_ws.py candidates/channel_gated_delta/v20_ws.py"""
import sys
import types
from pathlib import Path

import torch


def probe(path: Path):
    src = path.read_text()
    chan = "channel" in path.parent.name
    tag = "cgd" if chan else "sgd"

    def sub(old, new):
        nonlocal src
        assert src.count(old) == 1, (old, src.count(old))
        src = src.replace(old, new)

    sub("template <bool CHAN>\n__global__ void __launch_bounds__(512, 1)\ngd_ws_kernel(",
        "__device__ unsigned long long g_phase[8];\ntemplate <bool CHAN>\n__global__ void __launch_bounds__(512, 1)\n"
        "gd_ws_kernel(")
    sub("  __syncthreads();\n\n  for (int ch = 0; ch < nchunks; ++ch) {\n",
        "  __shared__ unsigned ph_sm[8];  // consumer busy, wait, producer busy, wait; last marks\n"
        "  if (tid == 0) { for (int i = 0; i < 4; ++i) ph_sm[i] = 0; }\n"
        "  __syncthreads();\n"
        "  if (tid == 0 || tid == 256) ph_sm[4 + (tid >> 8)] = clock();\n\n"
        "  for (int ch = 0; ch < nchunks; ++ch) {\n")
    sub("    __syncthreads();  // chunk c's partials written; chunk c+1 prepared\n",
        "    if (tid == 0 || tid == 256) { unsigned now = clock(); const int r = tid >> 8;\n"
        "      ph_sm[2 * r] += now - ph_sm[4 + r]; ph_sm[4 + r] = now; }\n"
        "    __syncthreads();  // chunk c's partials written; chunk c+1 prepared\n"
        "    if (tid == 0 || tid == 256) { unsigned now = clock(); const int r = tid >> 8;\n"
        "      ph_sm[2 * r + 1] += now - ph_sm[4 + r]; ph_sm[4 + r] = now; }\n")
    sub("  if (producer) {\n    const int lt0 = (nchunks - 1) * C;\n",
        "  __syncthreads();\n"
        "  if (tid == 0) { for (int i = 0; i < 4; ++i) atomicAdd(&g_phase[i], (unsigned long long)ph_sm[i]);\n"
        "    atomicAdd(&g_phase[4], 1ull); atomicAdd(&g_phase[6], (unsigned long long)nchunks); }\n"
        "  if (producer) {\n    const int lt0 = (nchunks - 1) * C;\n")
    sub("cuda_sources=[CUDA_SRC + DISPATCH_SRC],", "cuda_sources=[CUDA_SRC + DISPATCH_SRC + PHASE_SRC],")
    sub(f'CPP_SRC = "void {tag}_v20_forward(',
        'PHASE_SRC = r"""\n'
        'torch::Tensor phase_read() { unsigned long long h[8]; cudaMemcpyFromSymbol(h, g_phase, sizeof(h));\n'
        '  auto t = torch::empty({8}, torch::kInt64); for (int i = 0; i < 8; ++i) t.data_ptr<int64_t>()[i] = (int64_t)h[i];'
        ' return t; }\n'
        'void phase_reset() { unsigned long long z[8] = {0}; cudaMemcpyToSymbol(g_phase, z, sizeof(z)); }\n"""\n'
        f'CPP_SRC = "torch::Tensor phase_read(); void phase_reset(); void {tag}_v20_forward(')
    sub(f'functions=["{tag}_v20_forward"],', f'functions=["{tag}_v20_forward", "phase_read", "phase_reset"],')
    sub(f'name="{tag}_v20_ws",', f'name="{tag}_v20_phase_probe",')
    module = types.ModuleType(f"probe_{tag}")
    exec(compile(src, f"probe_{tag}", "exec"), module.__dict__)
    model, ext = module.ModelNew(), module._ext
    B, T, H, D = 8, 1024, 16, 64
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
    gate = torch.sigmoid(torch.randn((B, T, H, D) if chan else (B, T, H), device="cuda", generator=g) + 2.0)
    args = [q, k, v, gate] if chan else [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
    for _ in range(3):
        model(*args)
    torch.cuda.synchronize()
    ext.phase_reset()
    runs = 10
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        model(*args)
    end.record()
    torch.cuda.synchronize()
    us = start.elapsed_time(end) / runs * 1e3
    c = ext.phase_read().tolist()
    chunks = c[6]
    cb, cw, pb, pw = (x / chunks for x in c[:4])
    print(f"{path.parent.name} medium: {us:.1f} us per call (events, back to back), {c[4] // runs} CTAs, "
          f"{chunks // c[4]} chunks each")
    print(f"  consumers (thread 0):   busy {cb:7.0f}  wait {cw:6.0f}  cycles per chunk")
    print(f"  producers (thread 256): busy {pb:7.0f}  wait {pw:6.0f}  cycles per chunk")
    print(f"  chunk {cb + cw:7.0f} cycles; the longer role is the {'consumers' if cb > pb else 'producers'}")


for name in sys.argv[1:]:
    probe(Path(name))
