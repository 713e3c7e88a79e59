"""Graph-replay medians at large for the files named (paths), each twice, interleaved."""
import importlib.util
import sys

import torch

src = open(".gpu/compare53.py").read()  # its input generator and graph-replay timer, not its comparison
exec(src[: src.index('P = "candidates/scalar_gated_delta"')])


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModelNew()


models = {}
for path in sys.argv[1:]:
    try:
        models[path] = load(path, path.split("/")[-1][:-3])
    except Exception as exc:
        print(f"{path}: load failed {exc!r}"[:500], flush=True)
args = inputs((8, 4096, 16, 128), "normal", 7)
times = {p: [] for p in models}
for _ in range(2):
    for p, m in models.items():
        times[p].append(replay_us(m, args))
for p, t in times.items():
    print(f"{p}: graph replay median at large {t[0]:.1f} / {t[1]:.1f} us", flush=True)
