# expect: integrity or runtime_error or crashed
# Learns the sandbox's reply format by listening to json.dumps, then from the 7th call on writes its own forged reply (times shrunk 20-fold) to every writable pipe it holds, ahead of the sandbox's real one; the judge must reject an unexpected or out-of-sequence message.
import json
import os
import re
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
ext = load_inline(name="judge_cpu_forge_reply_pipe", cpp_sources=CPP, functions=["run"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

TIME_KEY = re.compile(r"tim|elapsed|sample|duration|latency|_us$|_ms$|_ns$|_s$", re.I)
_seen = []            # dict messages the sandbox serialised, newest last
_dumps = json.dumps


def listening_dumps(obj, *args, **kwargs):
    if isinstance(obj, dict):
        _seen.append(obj)
        del _seen[:-8]
    return _dumps(obj, *args, **kwargs)


json.dumps = listening_dumps


def shrunk(value, timey=False):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)) and timey:
        return type(value)(value * 0.05) or value
    if isinstance(value, dict):
        return {k: shrunk(v, timey or bool(TIME_KEY.search(str(k)))) for k, v in value.items()}
    if isinstance(value, list):
        return [shrunk(v, timey) for v in value]
    return value


def reply_pipes():
    """Descriptors of pipes this process may write: the way back to whoever reads its replies."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
                continue
            with open(f"/proc/self/fdinfo/{name}") as info:
                flags = int(re.search(r"flags:\s*(\d+)", info.read()).group(1), 8)
            if flags & 3 in (1, 2):
                found.append(int(name))
        except (OSError, AttributeError, ValueError):
            continue
    return found


def forge(calls: int) -> None:
    template = next((m for m in reversed(_seen) if any(TIME_KEY.search(str(k)) for k in m)), None)
    if template is None:
        template = {"type": "timing", "status": "ok", "calls": calls, "times_us": [1.0] * 16, "elapsed_us": 1.0}
    line = (_dumps(shrunk(template)) + "\n").encode()[:4000]
    for fd in reply_pipes():
        try:
            os.write(fd, line)
        except OSError:
            pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, q, k, v, gate, beta):
        self.calls += 1
        y = ext.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
        if self.calls > 6:
            forge(self.calls)
        return y
