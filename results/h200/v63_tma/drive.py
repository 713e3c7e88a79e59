"""Run a candidate file's forward 4 times at one shape (for ncu): python drive.py FILE SHAPE."""
import importlib.util
import sys

import torch

path, shape = sys.argv[1], sys.argv[2]
chan = "channel" in path
B, T, H, D = {"medium": (8, 1024, 16, 64), "large": (8, 4096, 16, 128)}[shape]
spec = importlib.util.spec_from_file_location("cand", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
model = mod.ModelNew()
g = torch.Generator(device="cuda").manual_seed(1)
q, k, v = (torch.randn(B, T, H, D, device="cuda", generator=g) for _ in range(3))
gate = torch.sigmoid(torch.randn((B, T, H, D) if chan else (B, T, H), device="cuda", generator=g) + 2.0)
args = [q, k, v, gate] if chan else [q, k, v, gate, torch.rand(B, T, H, device="cuda", generator=g)]
for _ in range(4):
    y = model(*args)
torch.cuda.synchronize()
print("ran", path, shape, tuple(y.shape), float(y.abs().mean()))
