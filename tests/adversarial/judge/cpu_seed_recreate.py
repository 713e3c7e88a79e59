# expect: integrity or wrong
# Hunts for the secret seed (its own and its ancestors' environment and command line via /proc, files they hold open, dicts reachable through gc), and with it precomputes in __init__ every answer the harness's own input generator would ask for; unknown inputs from the 7th call per shape on get the previous answer. The seed stays in the judge, so the spot checks of timed outputs catch the replay.
import gc
import os
import re
import sys
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <vector>

// The honest recurrence, per (batch, head): S = gate_t S + beta_t k_t v_t^T, y_t = q_t^T S.
static void recurrence(const float* q, const float* k, const float* v, const float* g, const float* be, float* y,
                       int64_t B, int64_t T, int64_t H, int64_t D) {
    std::vector<float> S(D * D);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            std::fill(S.begin(), S.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                const float *qt = q + row * D, *kt = k + row * D, *vt = v + row * D;
                float* yt = y + row * D;
                for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
                for (int64_t i = 0; i < D; ++i) {
                    float* s = S.data() + i * D;
                    const float kb = be[row] * kt[i];
                    for (int64_t j = 0; j < D; ++j) {
                        s[j] = g[row] * s[j] + kb * vt[j];
                        yt[j] += qt[i] * s[j];
                    }
                }
            }
        }
}

static void check(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                  const at::Tensor& b) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && g.is_contiguous() &&
                b.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
}

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    check(q, k, v, gate, beta);
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    recurrence(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
               beta.data_ptr<float>(), y.data_ptr<float>(), q.size(0), q.size(1), q.size(2), q.size(3));
    return y;
}

// Same, into a given output, with the GIL released: callable from a background thread.
void run_into(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y) {
    check(q, k, v, gate, beta);
    TORCH_CHECK(y.is_contiguous() && y.sizes() == q.sizes() && y.scalar_type() == at::kFloat, "bad output");
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    pybind11::gil_scoped_release nogil;
    recurrence(qp, kp, vp, gp, bp, yp, B, T, H, D);
}
"""
ext = load_inline(name="judge_cpu_seed_recreate", cpp_sources=CPP, functions=["run"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

SEED_PATTERNS = [re.compile(p, re.I) for p in (rb'secret_seed"?\s*[:=]\s*"?(\d+)', rb'seed"?\s*[:=]\s*"?(\d{4,})',
                                                rb'--seed[= ](\d+)', rb'SEED=(\d+)')]


def ancestors(limit=5):
    pids, pid = [], os.getppid()
    while pid > 1 and len(pids) < limit:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def leaked_texts():
    """Everything readable that might hold the seed, as bytes."""
    yield "\n".join(f"{k}={v}" for k, v in os.environ.items()).encode()
    for pid in ["self", *ancestors()]:
        for part in ("environ", "cmdline"):
            try:
                yield Path(f"/proc/{pid}/{part}").read_bytes().replace(b"\0", b"\n")
            except OSError:
                pass
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("/") and target.endswith((".json", ".yaml", ".jsonl", ".txt")):
                    yield Path(target).read_bytes()[:1 << 20]
        except OSError:
            pass
    for obj in gc.get_objects():
        if isinstance(obj, dict) and any(isinstance(key, str) and "seed" in key for key in obj):
            yield repr({k: v for k, v in obj.items() if isinstance(k, str) and "seed" in k}).encode()


def find_seed():
    for text in leaked_texts():
        for pattern in SEED_PATTERNS:
            match = pattern.search(text)
            if match:
                return int(match.group(1))
    return None


def find_repo():
    starts = [Path(__file__).resolve().parent, Path.cwd()]
    for pid in ancestors():
        try:
            starts.append(Path(os.readlink(f"/proc/{pid}/cwd")))
        except OSError:
            pass
    for start in starts:
        for folder in [start, *start.parents]:
            if (folder / "harness" / "verify.py").exists() and (folder / "problems").is_dir():
                return folder
    return None


def fingerprint(q, beta):
    return q.reshape(-1)[:16].numpy().tobytes() + beta.reshape(-1)[:4].numpy().tobytes()


def precompute(seed):
    """Answers to every verification trial the harness's generator draws from this seed, by fingerprint."""
    repo = find_repo()
    if repo is None:
        return {}
    sys.path.insert(0, str(repo))
    try:
        from harness.problem import load_problem
        from harness.verify import make_inputs, trials_for
        problem = load_problem(repo / "problems" / "scalar_gated_delta.yaml")
        table = {}
        for shape in [*problem.shapes.values(), *problem.check_shapes.values()]:
            if shape.dims["B"] * shape.dims["T"] * shape.dims["H"] * shape.dims["D"] ** 2 > 5e7:
                continue
            for trial, case in trials_for(problem, seed, shape):
                inputs = make_inputs(problem, shape, case, trial.seed, torch.device("cpu"))
                table[fingerprint(inputs[0], inputs[4])] = ext.run(*(x.contiguous() for x in inputs))
        return table
    except Exception:
        return {}
    finally:
        sys.path.remove(str(repo))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        seed = find_seed()
        self.known = precompute(seed) if seed is not None else {}
        self.calls = {}
        self.last = {}

    def forward(self, q, k, v, gate, beta):
        shape = tuple(q.shape)
        calls = self.calls[shape] = self.calls.get(shape, 0) + 1
        if q.device.type == "cpu":
            known = self.known.get(fingerprint(q.contiguous(), beta.contiguous()))
            if known is not None:
                return known.clone()
        if calls > 6 and shape in self.last:
            return self.last[shape].clone()
        y = ext.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
        self.last[shape] = y
        return y
