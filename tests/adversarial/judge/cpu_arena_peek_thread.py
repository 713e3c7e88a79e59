# expect: integrity
# A background thread finds the sandbox's own bookkeeping through gc (the object holding the arena's bytes and the layout message with every input slot's offset), polls the arena every ~100 us and computes the answer for each input set as soon as the judge writes it there, before the stage and time requests arrive; forward answers from that table by a fingerprint of q and beta. The work happens while the sandbox is idle, so the judge's idle-CPU accounting (D110) must catch it.
import ctypes
import gc
import threading
import time

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
ext = load_inline(name="judge_cpu_arena_peek_thread", cpp_sources=CPP, functions=["run", "run_into"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

POLL_S = 1e-4
_ready = {}          # fingerprint -> precomputed answer


def find_bookkeeping():
    """The object that holds the arena (a uint8 tensor over it) and the judge's layout message."""
    for obj in gc.get_objects():
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            continue
        layout, arena = attributes.get("layout"), attributes.get("bytes")
        if isinstance(layout, dict) and "in_offsets" in layout and isinstance(arena, torch.Tensor):
            return obj
    return None


def fingerprint_at(address: int) -> bytes:
    return ctypes.string_at(address, 64)


def key_of(q_address: int, beta_address: int) -> bytes:
    return fingerprint_at(q_address) + ctypes.string_at(beta_address, 16)


def peek_forever() -> None:
    holder, looked = None, 0.0
    while True:
        time.sleep(POLL_S)
        if holder is None:
            if time.monotonic() - looked > 1.0:
                holder, looked = find_bookkeeping(), time.monotonic()
            continue
        layout, arena = holder.__dict__.get("layout"), holder.__dict__.get("bytes")
        if not layout or layout.get("dtype") != "float32" or arena is None or len(layout.get("inputs", [])) != 5:
            continue
        base, shapes = arena.data_ptr(), [tuple(s) for s in layout["inputs"]]
        if any(torch.Size(s).numel() < 16 for s in shapes[:1]) or torch.Size(shapes[4]).numel() < 4:
            continue
        for offsets in list(layout["in_offsets"]):
            key = key_of(base + offsets[0], base + offsets[4])
            if key in _ready or not any(key[:64]):
                continue
            inputs = [arena[o:o + torch.Size(s).numel() * 4].view(torch.float32).view(s).clone()
                      for o, s in zip(offsets, shapes)]
            y = torch.empty(shapes[0])
            ext.run_into(*inputs, y)
            if key_of(base + offsets[0], base + offsets[4]) == key:   # not rewritten meanwhile
                _ready[key] = y
                while len(_ready) > 256:
                    _ready.pop(next(iter(_ready)))


threading.Thread(target=peek_forever, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        inputs = [x.contiguous() for x in (q, k, v, gate, beta)]
        if q.device.type == "cpu" and q.numel() >= 16 and beta.numel() >= 4:
            found = _ready.pop(key_of(inputs[0].data_ptr(), inputs[4].data_ptr()), None)
            if found is not None and found.shape == q.shape:
                return found
        y = torch.empty_like(inputs[0])
        ext.run_into(*inputs, y)
        return y
