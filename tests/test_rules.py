"""Static rules: the cheating corpus is rejected by the rule it names, honest code is accepted.

Corpora: tests/adversarial/static (each file's first line `# expect: I1xx`), tests/adversarial/honest,
and the shipped candidates/*/*.py. Then one snippet that trips and one that passes per rule.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from harness.rules import ERROR, RULES, SOURCE, WARNING, check_text, is_accepted
from harness.rules.sources import clean_cpp

REPO = Path(__file__).resolve().parent.parent
CHEATS = sorted((REPO / "tests" / "adversarial" / "static").glob("*.py"))
HONEST = sorted((REPO / "tests" / "adversarial" / "honest").glob("*.py"))
SHIPPED = sorted((REPO / "candidates").glob("*/*.py"))
INTEGRITY_ERRORS = [f"I{n}" for n in range(101, 112) if n != 108]     # I108 is a warning: verification decides
SOURCE_RULES = sorted(r for r, spec in RULES.items() if spec.stage == SOURCE)


def _expected(path: Path) -> str:
    match = re.match(r"# expect: (I\d+)", path.read_text().splitlines()[0])
    assert match, f"{path.name} lacks a first-line `# expect: I1xx` comment"
    return match.group(1)


def _errors(findings) -> list:
    return [f for f in findings if f.severity == ERROR]


# ----- corpora ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", CHEATS, ids=lambda p: p.stem)
def test_cheat_is_caught_by_its_rule(path: Path):
    """Rejected by its rule when that rule is an error; flagged by it when a warning (I108: verification decides)."""
    expected = _expected(path)
    findings = check_text(str(path), path.read_text(), "scalar_gated_delta")
    if RULES[expected].severity == ERROR:
        fired = sorted({f.rule for f in _errors(findings)})
        assert expected in fired, f"{path.name}: expected {expected}, got errors {fired}"
    else:
        fired = sorted({f.rule for f in findings})
        assert expected in fired, f"{path.name}: expected a {expected} warning, got {fired}"


@pytest.mark.parametrize("path", HONEST, ids=lambda p: p.stem)
def test_honest_candidate_is_accepted(path: Path):
    reference = "channel_gated_delta" if "channel" in path.read_text() else "scalar_gated_delta"
    findings = check_text(str(path), path.read_text(), reference)
    assert not _errors(findings), "\n".join(map(str, _errors(findings)))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_shipped_candidate_is_accepted(path: Path):
    findings = check_text(str(path), path.read_text(), path.parent.name)
    assert not _errors(findings), "\n".join(map(str, _errors(findings)))


def test_corpora_cover_every_integrity_rule():
    assert len(CHEATS) >= 24 and len(HONEST) >= 10
    covered = {_expected(p) for p in CHEATS}
    assert set(INTEGRITY_ERRORS) <= covered, f"no cheat for {sorted(set(INTEGRITY_ERRORS) - covered)}"
    assert all(RULES[rule_id].severity == ERROR for rule_id in INTEGRITY_ERRORS)
    assert any("cuda_sources" not in p.read_text() for p in CHEATS), "no CPU-only cheat"
    assert any("cuda_sources" not in p.read_text() for p in HONEST), "no CPU-only honest candidate"


def test_every_rule_has_rationale_and_documentation():
    table = (REPO / "README.md").read_text()
    for rule_id, spec in RULES.items():
        assert spec.rationale, f"{rule_id} has no docstring rationale"
        assert spec.severity in (ERROR, WARNING)
        assert re.search(rf"^\|\s*{rule_id}\s*\|", table, re.MULTILINE), f"{rule_id} missing from the README rules table"


# ----- per-rule snippets -----------------------------------------------------------------------

KERNEL = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    //EXTRA
    return y;
}
"""


def candidate(forward: str = "return ext.run(x)", cuda_extra: str = "", cuda_head: str = "", prelude: str = "",
              postlude: str = "", init: str = "", methods: str = "", load_extra: str = "") -> str:
    """A small honest candidate with hooks to add one cheat at a time."""
    cuda = cuda_head + KERNEL.replace("//EXTRA", cuda_extra)
    body = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    return (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
        + textwrap.dedent(prelude) + "\n"
        + f"CUDA = r'''{cuda}'''\n"
        + "ext = load_inline(name='t', cpp_sources='torch::Tensor run(torch::Tensor x);', cuda_sources=CUDA,"
        + f" functions=['run']{load_extra})\n"
        + textwrap.dedent(postlude) + "\n"
        + "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + (textwrap.indent(textwrap.dedent(init).strip(), " " * 8) + "\n" if init else "")
        + (textwrap.indent(textwrap.dedent(methods).strip(), " " * 4) + "\n" if methods else "")
        + f"    def forward(self, x):\n{body}\n"
    )


CPU_KERNEL = """
#include <torch/extension.h>
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const float* px = x.data_ptr<float>();
    float* py = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) py[i] = 2.0f * px[i];
    //EXTRA
    return y;
}
"""


def cpu_candidate(cpp_extra: str = "", cpp_head: str = "", load_extra: str = "") -> str:
    cpp = cpp_head + CPU_KERNEL.replace("//EXTRA", cpp_extra)
    return ("import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
            f"SRC = r'''{cpp}'''\next = load_inline(name='c', cpp_sources=SRC, functions=['run']{load_extra})\n"
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.run(x)\n")


# helpers whose results are ints or tensors by what they return, not by what they are given
HELPER_POSTLUDE = """
def steps(t):
    return t.shape[1]
def bounds(t, chunk):
    total = t.shape[1]
    out = []
    start = 0
    while start < total:
        end = start + chunk
        if end > total:
            end = total
        out.append((start, end))
        start = end
    return out
def same(t):
    return t
def boxed(t):
    box = []
    box.append(t)
    return box
def gen(t):
    yield t
"""


# (rule, name, tripping text, passing text)
BF16_MMA = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0}, {%1}, {%2}, {%0};"

CASES = [
    ("I101", "torch_call", candidate("return torch.matmul(x, x)"), candidate("y = torch.empty_like(x)\nreturn ext.run(x)")),
    ("I101", "tensor_operator", candidate("return ext.run(x) * 2"),
     candidate("n = x.shape[0] * x.shape[1] + x.numel() // 4\nreturn ext.run(x.view(n // n * x.shape[0], -1))")),
    ("I101", "tensor_method", candidate("return ext.run(x).sum(0)"), candidate("return ext.run(x.contiguous()).view(x.shape)")),
    ("I101", "followed_helper", candidate("return helper(ext.run(x))", postlude="def helper(t):\n    return t.exp()\n"),
     candidate("return ext.run(x)", postlude="def helper(t):\n    return t.exp()\n")),
    ("I101", "matmul_operator", candidate("return x @ x"), candidate("return ext.run(x)")),
    ("I101", "comparison", candidate("return ext.run(x) > 0"), candidate("assert x.dtype == torch.float32\nreturn ext.run(x)")),
    # a helper's result is what it returns: ints from `.shape` stay ints, a tensor passed through stays a tensor
    ("I101", "helper_returns_tensor", candidate("y = same(x)\nreturn ext.run(x) * (y > 0)", postlude=HELPER_POSTLUDE),
     candidate("n = steps(x)\nfor s, e in bounds(x, 16):\n    if e > n or s < 0:\n        break\nreturn ext.run(x)",
               postlude=HELPER_POSTLUDE)),
    ("I101", "helper_returns_container", candidate("return ext.run(boxed(x)[0] + 1)", postlude=HELPER_POSTLUDE),
     candidate("return ext.run(x.view(steps(x) * 1, -1))", postlude=HELPER_POSTLUDE)),
    ("I101", "helper_yields_tensor", candidate("for t in gen(x):\n    x = t - 1\nreturn ext.run(x)", postlude=HELPER_POSTLUDE),
     candidate("for i, t in enumerate(gen(x)):\n    assert i < 2\nreturn ext.run(x)", postlude=HELPER_POSTLUDE)),
    ("I102", "aten_op", candidate(cuda_extra="y = at::softmax(x, 0);"), candidate(cuda_extra="y = at::empty_like(x);")),
    ("I102", "tensor_method", candidate(cuda_extra="y = x.matmul(x);"), candidate(cuda_extra="y = y.contiguous();")),
    ("I102", "cublas", candidate(cuda_extra="cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1);"),
     candidate(cuda_extra="// cublasSgemm would be cheating")),
    ("I102", "cpu_operator", cpu_candidate("y = x * 2;"), cpu_candidate("int64_t half_n = x.numel() * 2;")),
    ("I103", "try_except", candidate("try:\n    return ext.run(x)\nexcept RuntimeError:\n    return x"),
     candidate("try_count = 1\nreturn ext.run(x)")),
    ("I103", "reference_import", candidate(prelude="from scalar_gated_delta import Model\n"), candidate(prelude="import math\n")),
    ("I103", "nn_layer", candidate(init="self.lin = nn.Linear(4, 4)"), candidate(init="self.ext = ext")),
    ("I104", "patch_torch", candidate(postlude="torch.allclose = lambda *a, **k: True\n"), candidate(postlude="ALLCLOSE = 1\n")),
    ("I104", "frame", candidate("import sys\nreturn sys._getframe(1).f_locals['ref']"), candidate()),
    ("I105", "threading", candidate(prelude="import threading\n"), candidate(prelude="import math\n")),
    ("I105", "std_thread", cpu_candidate("std::thread t([]{}); t.join();"), cpu_candidate("// std::thread would be rejected")),
    ("I106", "side_stream", candidate("s = torch.cuda.Stream()\nreturn ext.run(x)"),
     candidate("s = torch.cuda.current_stream()\nreturn ext.run(x)")),
    ("I106", "stream_create", candidate(cuda_extra="cudaStream_t s; cudaStreamCreate(&s);"),
     candidate(cuda_extra="cudaStream_t s = at::cuda::getCurrentCUDAStream();")),
    ("I107", "exec", candidate(postlude="exec('x = 1')\n"), candidate(postlude="executed = 1\n")),
    ("I107", "local_include", candidate(cuda_head='#include "mine.cuh"\n'), candidate(cuda_head="#include <cuda_runtime.h>\n")),
    ("I107", "computed_getattr", candidate("name = 'run'\nreturn getattr(ext, name)(x)"), candidate("return getattr(ext, 'run')(x)")),
    ("I108", "half_type", candidate(cuda_extra="__half h = __float2half(1.0f);"),
     candidate(cuda_extra="int half = n / 2; (void)half;")),
    ("I108", "python_half", candidate("return ext.run(x.half())"), candidate("return ext.run(x.float())")),
    ("I108", "python_tf32_flag", candidate(prelude="torch.backends.cuda.matmul.allow_tf32 = True\n"), candidate()),
    ("I118", "tf32_ptx", candidate(cuda_extra='asm volatile("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(f));'),
     candidate(cuda_extra='asm volatile("cvt.rn.f32.f64 %0, %1;" : "=f"(f) : "d"(d));')),
    ("I108", "bf16_cvt_ptx", candidate(cuda_extra='asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u) : "f"(f), "f"(f));'),
     candidate(cuda_extra=f'asm volatile("{BF16_MMA}" : "+f"(c) : "r"(a), "r"(b));')),
    ("I108", "f16_accumulator_mma",
     candidate(cuda_extra='asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0}, {%1}, {%2}, {%0};" : "+r"(c) : "r"(a), "r"(b));'),
     candidate(cuda_extra=f'asm volatile("{BF16_MMA}" : "+f"(c) : "r"(a), "r"(b));')),
    ("I118", "bf16_mma_fp32_accumulator", candidate(cuda_extra=f'asm volatile("{BF16_MMA}" : "+f"(c) : "r"(a), "r"(b));'),
     candidate(cuda_extra='asm volatile("fma.rn.f32 %0, %1, %2, %0;" : "+f"(c) : "f"(f), "f"(f));')),
    ("I118", "wmma_tf32", candidate(cuda_extra="float r = wmma::__float_to_tf32(f);"), candidate(cuda_extra="float r = f;")),
    ("I109", "open", candidate("open('/tmp/x').read()\nreturn ext.run(x)"), candidate("opened = 1\nreturn ext.run(x)")),
    ("I109", "env_write", candidate(prelude="import os\nos.environ['A'] = '1'\n"),
     candidate(prelude="import os\nA = os.environ.get('A')\n")),
    ("I110", "subclass", candidate(postlude="class T(torch.Tensor):\n    pass\n"), candidate(postlude="class T:\n    pass\n")),
    ("I111", "self_state", candidate("self.last = ext.run(x)\nreturn self.last"),
     candidate("last = ext.run(x)\nreturn last", init="self.last = None")),
    ("I111", "static_tensor", candidate(cuda_extra="static torch::Tensor keep; keep = y;"),
     candidate(cuda_extra="static const int kBlock = 256; (void)kBlock;")),
    ("I111", "lru_cache", candidate(prelude="import functools\n", postlude="@functools.lru_cache\ndef f(a):\n    return a\n"),
     candidate(prelude="import functools\n", postlude="@functools.lru_cache\ndef f():\n    return ext\n")),
    ("I112", "cub", candidate(cuda_extra="cub::DeviceReduce::Sum(0, n, 0, 0, n);"), candidate()),
    ("I113", "fast_math", candidate(load_extra=", extra_cuda_cflags=['--use_fast_math']"),
     candidate(load_extra=", extra_cuda_cflags=['-O3']")),
    ("I114", "device_sync", candidate(cuda_extra="cudaDeviceSynchronize();"), candidate(cuda_extra="C10_CUDA_KERNEL_LAUNCH_CHECK();")),
    ("I115", "device_global", candidate(cuda_head="__device__ float g_scratch[1024];\n"),
     candidate(cuda_head="__constant__ float g_table[16];\n")),
    ("I116", "openmp", cpu_candidate("#pragma omp parallel for\nfor (int i = 0; i < 4; ++i) {}"), cpu_candidate()),
    ("I117", "generator_method", candidate(postlude="class Helper:\n    def steps(self):\n        yield 1\n"),
     candidate(postlude="def steps(n):\n    yield from range(n)\n")),
]


@pytest.mark.parametrize("rule_id,name,tripping,passing", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_rule_trips_and_passes(rule_id: str, name: str, tripping: str, passing: str):
    tripped = check_text("trip.py", tripping, "scalar_gated_delta")
    assert rule_id in {f.rule for f in tripped}, f"{rule_id} did not fire on:\n{tripping}"
    assert all(f.severity == RULES[rule_id].severity for f in tripped if f.rule == rule_id)
    clean = check_text("pass.py", passing, "scalar_gated_delta")
    assert rule_id not in {f.rule for f in clean}, [str(f) for f in clean]
    assert is_accepted(clean), [str(f) for f in clean]


def test_every_rule_has_a_case():
    """Source rules here; the build-stage rule (I119) in tests/test_symbols.py."""
    assert {c[0] for c in CASES} >= {r for r in SOURCE_RULES if r.startswith("I")}
    assert {r for r in RULES if RULES[r].stage != SOURCE} == {"I119"}


@pytest.mark.parametrize("code", ["auto copy = x.clone();", "torch::Tensor* t = &x; auto copy = t->clone();",
                                  "at::Tensor z = x.clone().contiguous();", "auto copy = at::clone(x);"])
def test_tensor_clone_is_not_a_host_process(code: str):
    """A tensor's clone() is a copy; only the C library's clone() starts a thread or process."""
    findings = check_text("t.py", cpu_candidate(code), "scalar_gated_delta")
    assert "I105" not in {f.rule for f in findings} and is_accepted(findings), [str(f) for f in findings]


@pytest.mark.parametrize("code", ["clone(fn, stack, CLONE_VM, 0);", "int pid = ::clone(fn, stack, CLONE_VM, 0);",
                                  "if (n) return clone(fn, stack, 0, 0);", "long r = syscall(SYS_clone, 0, 0, 0, 0);",
                                  "long r = syscall(__NR_clone3, 0, 0);", "pid_t p = ::fork();"])
def test_libc_clone_and_fork_are_host_processes(code: str):
    findings = check_text("t.py", cpu_candidate(code), "scalar_gated_delta")
    assert "I105" in {f.rule for f in _errors(findings)}, [str(f) for f in findings]


def test_half_table_in_an_fp32_kernel_is_a_warning_not_a_rejection():
    """A float32 kernel holding a small `__half` table of 1.0s: I108 still sees the type, and only warns."""
    path = REPO / "tests" / "adversarial" / "honest" / "honest_half_table.py"
    findings = check_text(str(path), path.read_text(), "scalar_gated_delta")
    assert {f.rule for f in findings if f.severity == WARNING} >= {"I108"}
    assert RULES["I108"].severity == WARNING and is_accepted(findings), [str(f) for f in _errors(findings)]


def test_ints_from_a_helper_given_a_tensor_are_ints():
    """The red-team's I101 false positive: a helper handed `q` returns chunk bounds (ints); comparing them
    in forward, and `while start < total` / `if end > total` in the helper, is not tensor math."""
    path = REPO / "tests" / "adversarial" / "honest" / "honest_int_compare_helper.py"
    assert path in HONEST and "cuda_sources" not in path.read_text()
    findings = check_text(str(path), path.read_text(), "scalar_gated_delta")
    assert "I101" not in {f.rule for f in findings} and is_accepted(findings), [str(f) for f in findings]



def test_contract_rules_still_fire():
    assert {f.rule for f in check_text("bad.py", "def (:", "")} == {"S001"}
    assert {"S002", "S003"} <= {f.rule for f in check_text("empty.py", "import torch\n", "")}
    no_kernel = candidate().replace("__global__", "__device__")
    assert "S004" in {f.rule for f in check_text("nokernel.py", no_kernel, "")}


def test_source_finding_points_at_the_offending_line():
    text = candidate(cuda_extra="y = at::softmax(x, 0);")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "at::softmax" in row)
    lines = {f.line for f in check_text("t.py", text, "") if f.rule == "I102"}
    assert lines == {line}


def test_comments_and_strings_in_sources_are_ignored():
    text = candidate(cuda_extra='/* at::matmul, cudaStreamCreate, __half */ // std::thread\n'
                                '    TORCH_CHECK(n > 0, "no half, no tf32, no fopen(), no at::matmul(x)");')
    assert is_accepted(check_text("t.py", text, "")), check_text("t.py", text, "")


def test_clean_cpp_keeps_offsets():
    text = 'int a; // at::matmul\nconst char* s = "cublas"; /* x\ny */ int b;'
    clean = clean_cpp(text)
    assert len(clean.code) == len(text) and clean.code.count("\n") == text.count("\n")
    assert "matmul" not in clean.code and "cublas" not in clean.code and "int b;" in clean.code
    assert "cublas" in clean.no_comments and "matmul" not in clean.no_comments


def test_unresolvable_source_is_rejected():
    text = candidate().replace("cuda_sources=CUDA", "cuda_sources=CUDA + fetch()")
    assert "I107" in {f.rule for f in _errors(check_text("t.py", text, ""))}
    text = candidate(prelude="BLOCK = 256\n").replace("cuda_sources=CUDA", "cuda_sources=CUDA + f'// {BLOCK}'")
    assert "I107" not in {f.rule for f in check_text("t.py", text, "")}
