# expect: integrity
# Hides its CPU time from /proc: inside a timed request (found from the sandbox's frames) every call but the last starts, through ctypes (so the library's symbols show no process call), a clone(CLONE_VM) process that fills the output in shared memory and returns at once; the last call waits for them with waitid(WNOWAIT), so by the reply they are zombies, which the judge's CPU accounting skips and nobody reaps (no cutime). Claims are tiny, answers right, no thread or live process at any request boundary. The judge must count or forbid those processes (zombies' CPU, RLIMIT_NPROC, a cgroup).
import ctypes
import os
import sys

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

namespace {
struct Job {
    const float *q, *k, *v, *g, *b;
    float *y, *state;
    int64_t B, T, H, D;
};

// Runs in the CLONE_VM child: our memory, but not our thread-local state, so it calls nothing (no malloc).
int fill(void* raw) {
    const Job& j = *static_cast<Job*>(raw);
    for (int64_t b = 0; b < j.B; ++b)
        for (int64_t h = 0; h < j.H; ++h) {
            for (int64_t i = 0; i < j.D * j.D; ++i) j.state[i] = 0.0f;
            for (int64_t t = 0; t < j.T; ++t) {
                const int64_t row = (b * j.T + t) * j.H + h;
                const float *qt = j.q + row * j.D, *kt = j.k + row * j.D, *vt = j.v + row * j.D;
                float* yt = j.y + row * j.D;
                for (int64_t c = 0; c < j.D; ++c) yt[c] = 0.0f;
                for (int64_t i = 0; i < j.D; ++i) {
                    float* s = j.state + i * j.D;
                    const float kb = j.b[row] * kt[i];
                    for (int64_t c = 0; c < j.D; ++c) {
                        s[c] = j.g[row] * s[c] + kb * vt[c];
                        yt[c] += qt[i] * s[c];
                    }
                }
            }
        }
    return 0;
}
}  // namespace

// The child's entry point, as a number: the process itself is started from Python, so no process call
// appears among this library's symbols.
int64_t fill_address() { return reinterpret_cast<int64_t>(&fill); }

int64_t new_job(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y,
                at::Tensor state) {
    check(q, k, v, gate, beta);
    TORCH_CHECK(y.is_contiguous() && y.sizes() == q.sizes() && state.numel() >= q.size(3) * q.size(3), "bad buffers");
    return reinterpret_cast<int64_t>(new Job{q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                                             gate.data_ptr<float>(), beta.data_ptr<float>(), y.data_ptr<float>(),
                                             state.data_ptr<float>(), q.size(0), q.size(1), q.size(2), q.size(3)});
}

void fill_here(int64_t job) { fill(reinterpret_cast<Job*>(job)); }

void free_job(int64_t job) { delete reinterpret_cast<Job*>(job); }
"""
ext = load_inline(name="judge_cpu_clone_vm_zombies", cpp_sources=CPP,
                  functions=["run", "fill_address", "new_job", "fill_here", "free_job"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

CLONE_VM, SIGCHLD = 0x100, 17
_libc = ctypes.CDLL(None, use_errno=True)
_libc.clone.restype = ctypes.c_int
_libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
_FILL = ext.fill_address()
_running = []    # (pid, job, stack, what the child reads and writes)
_zombies = []


def start(inputs):
    """A process sharing this address space fills a fresh output; the output is returned at once."""
    y = torch.empty_like(inputs[0])
    state = torch.empty(inputs[0].shape[-1] ** 2)
    job = ext.new_job(*inputs, y, state)
    stack = ctypes.create_string_buffer(1 << 16)
    top = (ctypes.addressof(stack) + len(stack)) & ~15
    pid = _libc.clone(_FILL, top, CLONE_VM | SIGCHLD, job)
    if pid <= 0:
        ext.fill_here(job)
        ext.free_job(job)
        return y
    _running.append((pid, job, stack, (inputs, y, state)))
    return y


def settle():
    """Wait until every started child has exited, without reaping it: it stays a zombie."""
    for pid, job, _, _ in _running:
        while True:
            try:
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break
        _zombies.append(pid)
        ext.free_job(job)
    _running.clear()


def reap():
    """Reap the zombies (their CPU time is then charged to this process): only inside requests nobody times."""
    settle()
    for pid in _zombies:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    _zombies.clear()


def sandbox_context():
    """(operation, this call's slot, the operation's slots) read from the sandbox's frames, or None."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name.startswith("op_") and {"self", "args"} <= frame.f_locals.keys():
            owner, args = frame.f_locals["self"], frame.f_locals["args"]
            slots = args.get("slots", []) if isinstance(args, dict) else []
            return frame.f_code.co_name, getattr(owner, "current_slot", None), list(slots)
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        inputs = [x.contiguous() for x in (q, k, v, gate, beta)]
        if q.device.type != "cpu":
            return ext.run(*inputs)
        context = sandbox_context()
        if context is None:   # no frames to read: defer every call, settle at the next one
            settle()
            return start(inputs)
        operation, slot, slots = context
        if operation in ("op_time", "op_burst") and slots and slot is not None:
            if slot != slots[-1]:
                return start(inputs)
            y = ext.run(*inputs)
            settle()   # the reply goes out after this call: every helper is a zombie by then
            return y
        reap()
        return ext.run(*inputs)
