# expect: integrity
# A man in the middle of its own sandbox: at import it finds the reply pipe in /proc/self/fd, dup2()s a pipe of its own over that descriptor and relays every reply through a thread that rewrites the claimed samples (a twentieth) while keeping each message valid for the protocol. The judge must hold claims against its own measurements (burst CPU time and clock).
import json
import os
import re
import threading

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
ext = load_inline(name="judge_cpu_reply_pipe_mitm", cpp_sources=CPP, functions=["run"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

SCALE = 0.05


def writable_pipes():
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


def rewrite(line: bytes) -> bytes:
    try:
        message = json.loads(line)
        data = message.get("data")
        if isinstance(data, dict) and isinstance(data.get("samples_us"), list):
            data["samples_us"] = [value * SCALE for value in data["samples_us"]]
        return json.dumps(message).encode()
    except (ValueError, AttributeError, TypeError):
        return line


def write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def relay(source: int, target: int) -> None:
    pending = b""
    while True:
        chunk = os.read(source, 1 << 20)
        if not chunk:
            write_all(target, pending)
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            write_all(target, rewrite(line) + b"\n")


def intercept() -> None:
    for fd in writable_pipes():
        original = os.dup(fd)
        read_end, write_end = os.pipe()
        os.dup2(write_end, fd)
        os.close(write_end)
        threading.Thread(target=relay, args=(read_end, original), daemon=True).start()


intercept()


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return ext.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
