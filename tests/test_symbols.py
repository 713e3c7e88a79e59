"""Built-library rule I119: symbol classification, who-calls-what, the build stage's use of it, real builds.

Fast tests read symbol lists measured on the honest builds (tests/fixtures/symbols_honest.py) and
synthetic objdump text; the slow ones compile two tiny CPU extensions through the build stage.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

from harness import build as build_stage
from harness.discovery import discover
from harness.env import collect_env
from harness.rules import ERROR, RULES, BUILD, Finding, check_library
from harness.rules import symbols
from harness.rules.symbols import ALLOWED, DENIED, OUTSIDE, classify, mangled_path, references_in
from tests.fixtures.symbols_honest import GUARD_ONLY, HONEST_BUILDS


# ----- classification --------------------------------------------------------------------------

def test_i119_is_a_registered_build_stage_error():
    spec = RULES["I119"]
    assert spec.stage == BUILD and spec.severity == ERROR and "vocabulary" in spec.rationale


@pytest.mark.parametrize("build", sorted(HONEST_BUILDS), ids=str)
def test_every_symbol_of_an_honest_build_is_allowed_or_left_to_attribution(build: str):
    verdicts = {name: classify(name) for name in HONEST_BUILDS[build]}
    assert not [n for n, v in verdicts.items() if v == DENIED], "an honest build would be rejected outright"
    assert {n for n, v in verdicts.items() if v == OUTSIDE} <= GUARD_ONLY, \
        "outside symbols of honest builds are the CUDA guard's, called only through its vtable"


@pytest.mark.parametrize("name", [
    "fork", "vfork", "execve", "execvp", "system", "popen", "posix_spawn", "dlopen", "dlsym", "pthread_create",
    "fopen", "fopen64", "open", "open64", "openat", "read", "write", "unlink", "socket", "connect", "mmap",
    "ptrace", "kill", "raise", "exit", "getenv", "setenv", "putenv", "cudaStreamCreate", "cudaStreamCreateWithPriority",
    "cudaStreamCreateWithFlags", "cudaGraphLaunch", "cudaGraphInstantiate", "cudaStreamBeginCapture",
    "cudaLaunchHostFunc", "cudaIpcGetMemHandle", "cudaGetDriverEntryPoint", "cuGetProcAddress_v2", "cuLaunchKernel",
    "cuModuleLoadData", "cudaSetDevice", "cudaDeviceReset", "omp_set_num_threads", "PyRun_SimpleString",
    "PyImport_ImportModule", "PyImport_AddModule", "Py_CompileString", "PyEval_EvalCode", "PySys_SetObject",
    "_PyImport_FindExtensionObject",
])
def test_denied_symbols(name: str):
    assert classify(name) == DENIED


@pytest.mark.parametrize("name", [
    # what pybind11 itself needs from the Python C API, including calls and the GIL
    "PyObject_CallFunctionObjArgs", "PyEval_GetBuiltins", "PyEval_SaveThread", "PyEval_AcquireThread",
    "PyGILState_Ensure", "PyCapsule_New", "_Py_Dealloc", "PyErr_Fetch",
    # kernels: registration, launch, attributes, memory, queries
    "__cudaRegisterFatBinary", "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaPushCallConfiguration",
    "__cudaPopCallConfiguration", "__cudaLaunchKernel", "__cudaGetKernel", "cudaLaunchKernel", "cudaLaunchKernelExC",
    "cudaGetLastError", "cudaGetErrorString", "cudaFuncSetAttribute", "cudaMemcpyAsync", "cudaMemsetAsync",
    "cudaMallocAsync", "cudaFreeAsync", "cudaMemcpyToSymbol", "cudaGetDevice", "cudaDeviceGetAttribute",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaStreamSynchronize", "cudaDeviceSynchronize",
    "cuTensorMapEncodeTiled",
    # C and C++ runtime, libm, OpenMP
    "memcpy", "malloc", "free", "__cxa_throw", "_Unwind_Resume", "__gxx_personality_v0", "pthread_mutex_lock",
    "__memcpy_chk", "__isoc23_strtol", "sqrtf", "expf", "__exp_finite", "fmaf", "omp_get_thread_num",
    "omp_get_num_threads", "GOMP_parallel", "_Znwm", "_ZdlPvm", "_ZTIPKc", "_ZTISt9exception",
    "_ZNSt8__detail15_List_node_base7_M_hookEPS0_", "_ZSt20__throw_length_errorPKc",
    "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE7compareEPKc",
    "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_jb", "_ZN2at4_ops10empty_like4callERKNS_6TensorE",
    "_ZN5torch16PyWarningHandlerC1Ev", "_ZN6caffe28TypeMeta26error_unsupported_typemetaES0_",
    "_ZN8pybind116detail11get_internalsEv", "_Z16THPVariable_WrapN2at10TensorBaseE",
    "_ZN3c104cuda9SetDeviceEab",
])
def test_allowed_symbols(name: str):
    assert classify(name) == ALLOWED


@pytest.mark.parametrize("name", [
    "cudaEventRecord", "cudaEventCreateWithFlags", "cudaStreamWaitEvent", "getpid",
    "_ZN3c104cuda17getStreamFromPoolEba", "_ZN3c104cuda20setCurrentCUDAStreamENS0_10CUDAStreamE",
    "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
    "_ZNSt10filesystem6removeERKNS_7__cxx114pathE", "_ZNSt12__basic_fileIcE4openEPKcSt13_Ios_Openmodei",
    "_ZN2at6native6matmulERKNS_6TensorES3_", "_ZN5torch3jit4loadERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_Z9my_helperv",
])
def test_outside_symbols_are_judged_by_who_calls_them(name: str):
    assert classify(name) == OUTSIDE


@pytest.mark.parametrize("name,path", [
    ("_ZN3c104cuda9SetDeviceEab", ("c10", "cuda", "SetDevice")),
    ("_ZNK3c1010TensorImpl15decref_pyobjectEv", ("c10", "TensorImpl", "decref_pyobject")),
    ("_ZN3c1011SymNodeImpl3strB5cxx11Ev", ("c10", "SymNodeImpl", "str")),
    ("_ZN3c108ListImplB5cxx114sizeEv", ("c10", "ListImpl", "size")),
    ("_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
     ("std", "thread", "_M_start_thread")),
    ("_ZNSt7__cxx1115basic_stringbufIcSt11char_traitsIcESaIcEE7_M_syncEPcmm", ("std", "basic_stringbuf")),
    ("_ZSt20__throw_length_errorPKc", ("std", "__throw_length_error")),
    ("_ZTVN10__cxxabiv117__class_type_infoE", ("__cxxabiv1", "__class_type_info")),
    ("_ZTISt9exception", ("std", "exception")),
    ("_ZTIb", ("<builtin>",)),
    ("_ZdlPvm", ("<operator new/delete>",)),
    ("_ZZN3c106detail4castIfEEvvE5table", ("c10", "detail", "cast")),
    ("_ZN12_GLOBAL__N_16helperEv.cold", ("_GLOBAL__N_1", "helper")),
    ("_Z16THPVariable_WrapN2at10TensorBaseE", ("THPVariable_Wrap",)),
    ("memcpy", ("memcpy",)),
])
def test_mangled_path(name: str, path: tuple):
    assert mangled_path(name) == path


# ----- reading libraries -----------------------------------------------------------------------

def _torch_library() -> Path:
    import torch
    found = sorted(Path(torch.__file__).parent.glob("_C*.so"))
    if not found:
        pytest.skip("no torch/_C*.so to read")
    return found[0]


def test_elf_reader_agrees_with_nm():
    if not shutil.which("nm"):
        pytest.skip("no nm")
    library = _torch_library()
    by_nm = symbols._nm_undefined(library)
    by_reader = symbols.elf_undefined_symbols(library)
    assert by_nm and sorted(set(by_nm)) == sorted(set(by_reader))


def test_unreadable_library_is_skipped_with_a_note(tmp_path, monkeypatch, caplog):
    fake = tmp_path / "broken.so"
    fake.write_bytes(b"not an ELF file")
    monkeypatch.setattr(symbols.shutil, "which", lambda tool: None)
    with caplog.at_level(logging.WARNING, logger="harness.rules.symbols"):
        assert check_library(fake) == []
    assert "I119 skipped" in caplog.text and "broken.so" in caplog.text


def test_without_objdump_only_denied_symbols_are_judged(tmp_path, monkeypatch, caplog):
    library = tmp_path / "ext.so"
    names = ["memcpy", "cudaEventRecord", "dlopen"]
    monkeypatch.setattr(symbols, "read_build", lambda path: symbols.Reading(names, None, "ext.so"))
    monkeypatch.setattr(symbols, "candidate_references", lambda path, judged, code: None)
    with caplog.at_level(logging.WARNING, logger="harness.rules.symbols"):
        findings = check_library(library)
    assert [f.rule for f in findings] == ["I119"] and "`dlopen`" in findings[0].message
    assert "cudaEventRecord" not in findings[0].message and "cudaEventRecord" in caplog.text


def test_who_calls_decides_read_from_the_library_but_not_from_the_objects(tmp_path, monkeypatch):
    """A library may hold its toolchain's C++ runtime (the GPU machines' g++ links libstdc++'s locale and
    random_device code in, which calls `open` and `ioctl`): read from the library alone, a denied name
    nobody of the candidate's calls is the runtime's. The candidate's objects hold only its own code."""
    library = tmp_path / "ext.so"
    monkeypatch.setattr(symbols, "candidate_references", lambda path, judged, code: {})
    monkeypatch.setattr(symbols, "read_build", lambda path: symbols.Reading(["open", "memcpy"], None, "ext.so"))
    assert check_library(library) == []
    monkeypatch.setattr(symbols, "read_build", lambda path: symbols.Reading(["open"], {"run"}, "main.o"))
    assert "`open`" in check_library(library)[0].message


def test_object_files_are_read_for_what_the_candidate_calls(tmp_path):
    """read_build prefers main.o & co. beside the library: their undefined names, less what they define."""
    if not shutil.which("cc"):
        pytest.skip("no C compiler")
    import subprocess
    (tmp_path / "a.c").write_text("int getppid(void);\nint helper(void) { return getppid(); }\n")
    (tmp_path / "b.c").write_text("int helper(void);\nint run(void) { return helper(); }\n")
    for name in ("a", "b"):
        subprocess.run(["cc", "-c", "-fPIC", f"{name}.c", "-o", f"{name}.o"], cwd=tmp_path, check=True)
    reading = symbols.read_build(tmp_path / "ext.so")
    assert reading.names == ["getppid"] and {"helper", "run"} <= reading.code and reading.source == "a.o, b.o"
    table = symbols.elf_symbols(tmp_path / "a.o", dynamic=False)
    assert {s.name for s in table if not s.defined} == {"getppid"}


# ----- who refers to what (synthetic objdump output) ---------------------------------------------

DISASSEMBLY = textwrap.dedent("""\
    Disassembly of section .plt:

    0000000000001000 <cudaEventRecord@plt>:
        1000:\tjmp    *0x3000(%rip)        # 4000 <cudaEventRecord@libcudart.so.13>

    Disassembly of section .text:

    0000000000002000 <_ZNK3c104cuda4impl13CUDAGuardImpl6recordEPPvRKNS_6StreamEaNS_9EventFlagE>:
        2000:\tcall   1000 <cudaEventRecord@plt>
        2005:\tcall   1010 <cudaEventQuery@plt>
        200a:\tret

    0000000000002100 <_ZN2at4cuda9CUDAEvent6recordERKN3c104cuda10CUDAStreamE>:
        2100:\tcall   1020 <cudaEventSynchronize@plt>
        2105:\tret

    0000000000002200 <_Z11gated_deltaN2at6TensorE>:
        2200:\tcall   2100 <_ZN2at4cuda9CUDAEvent6recordERKN3c104cuda10CUDAStreamE>
        2205:\tmov    0x1df4(%rip),%rax        # 4000 <whatever>
        220c:\tcall   2300 <_Z11gated_deltaN2at6TensorE.cold>
        2211:\tret

    0000000000002300 <_Z11gated_deltaN2at6TensorE.cold>:
        2300:\tcall   1030 <getpid@plt>

    0000000000002400 <_txnal_cow_string_D1>:
        2400:\tcall   1040 <open@plt>
""")
RELOCATIONS = textwrap.dedent("""\
    DYNAMIC RELOCATION RECORDS
    OFFSET           TYPE              VALUE
    0000000000004000 R_X86_64_JUMP_SLOT  cudaEventRecord@libcudart.so.13
    0000000000005000 R_X86_64_64       cudaStreamWaitEvent@libcudart.so.13+0x0
    0000000000006000 R_X86_64_GLOB_DAT  cudaEventDestroy@libcudart.so.13
""")


UNDEFINED = ["cudaEventRecord", "cudaEventQuery", "cudaEventSynchronize", "cudaStreamWaitEvent", "cudaEventDestroy",
             "getpid", "open"]


def test_references_follow_the_candidates_direct_calls_only():
    found = references_in(DISASSEMBLY, RELOCATIONS, UNDEFINED)
    # the guard's record() is reached only through its vtable: none of its symbols count ...
    assert "cudaEventQuery" not in found
    # ... but a GOT slot loaded by the candidate's own function does, as does a wrapper it calls directly
    assert found["cudaEventRecord"] == {"_Z11gated_deltaN2at6TensorE"}
    assert found["cudaEventSynchronize"] == {"_ZN2at4cuda9CUDAEvent6recordERKN3c104cuda10CUDAStreamE"}
    assert found["getpid"] == {"_Z11gated_deltaN2at6TensorE.cold"}
    assert found["cudaStreamWaitEvent"] == {"<data>"}       # a pointer to it stored in data
    assert "cudaEventDestroy" not in found                  # a GOT slot nobody loads
    assert found["open"] == {"_txnal_cow_string_D1"}        # not knowing the objects, a C name is the candidate's


def test_with_the_objects_known_statically_linked_runtime_code_is_not_the_candidates():
    code = {"_Z11gated_deltaN2at6TensorE", "_ZN2at4cuda9CUDAEvent6recordERKN3c104cuda10CUDAStreamE",
            "_ZNK3c104cuda4impl13CUDAGuardImpl6recordEPPvRKNS_6StreamEaNS_9EventFlagE"}
    owners = {0x5000: "_ZTVN3c104cuda4impl13CUDAGuardImplE"}      # the pointer sits in a runtime class's vtable
    found = references_in(DISASSEMBLY, RELOCATIONS, UNDEFINED, code, owners.get)
    assert "open" not in found and "cudaStreamWaitEvent" not in found
    assert found["cudaEventRecord"] == {"_Z11gated_deltaN2at6TensorE"} and "cudaEventSynchronize" in found
    owners = {0x5000: "_ZL6tablev"}                               # ... or in the candidate's own table
    found = references_in(DISASSEMBLY, RELOCATIONS, UNDEFINED, code | {"_ZL6tablev"}, owners.get)
    assert found["cudaStreamWaitEvent"] == {"_ZL6tablev"}


# ----- the build stage -------------------------------------------------------------------------

def _ok_build(tmp_path: Path) -> build_stage.BuildResult:
    (tmp_path / "ext" / "x").mkdir(parents=True)
    (tmp_path / "ext" / "x" / "x.so").write_bytes(b"")
    return build_stage.BuildResult("c", "ok", "", 1.0, False, tmp_path, tmp_path / "build.log")


def test_an_error_finding_rejects_the_build(tmp_path, monkeypatch):
    monkeypatch.setattr(build_stage, "check_library",
                        lambda path: [Finding("I119", ERROR, 0, "x.so calls outside a kernel's vocabulary: `fork`")])
    result = build_stage.screen_libraries(_ok_build(tmp_path))
    assert result.status == "rejected" and result.check == "I119"
    assert result.reason.startswith("I119: ") and "`fork`" in result.reason
    assert "I119 error" in (tmp_path / "build.log").read_text()


def test_a_clean_library_or_a_failed_build_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(build_stage, "check_library", lambda path: [])
    ok = _ok_build(tmp_path)
    assert build_stage.screen_libraries(ok) == ok
    failed = build_stage.BuildResult("c", "compile_error", "boom", 1.0, False, tmp_path, tmp_path / "build.log")
    monkeypatch.setattr(build_stage, "check_library", lambda path: pytest.fail("a failed build has no library"))
    assert build_stage.screen_libraries(failed) == failed


# ----- real builds -----------------------------------------------------------------------------

HEADER = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
"""
HONEST = HEADER + r"""
at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    const float* src = q.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    for (int64_t i = 0; i < q.numel(); ++i) dst[i] = src[i] * 1.0f;
    return y;
}
"""
# `&fork` and a call through the pointer: no `fork(` for the source rules to read, but the symbol is there
CHEAT = HEADER + r"""
#include <unistd.h>
static pid_t (*const spawn)() = &fork;
at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    if (q.numel() < 0) { spawn(); (void)getppid(); }
    return y;
}
"""


def _candidate(tmp_path: Path, name: str, source: str):
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
        f"CPP = r'''{source}'''\n"
        f"module = load_inline(name='{name}', cpp_sources=CPP, functions=['run'], no_implicit_headers=True,\n"
        "                     with_pytorch_error_handling=False)\n"
        "class ModelNew(nn.Module):\n    def forward(self, q, k, v, gate, beta):\n"
        "        return module.run(q, k, v, gate, beta)\n")
    return discover([path])[0]


@pytest.fixture
def open_folder():
    """A folder a build's sandbox user can reach (pytest's own tmp folders are closed to other users)."""
    folder = Path(tempfile.mkdtemp(prefix="i119-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_a_library_that_can_fork_is_rejected_and_an_honest_one_is_not(open_folder):
    tmp_path = open_folder
    env = collect_env("cpu")
    honest = build_stage.build_one(_candidate(tmp_path, "i119_honest", HONEST), False, env, "9.0", tmp_path, 600)
    assert honest.status == "ok", f"{honest.reason}\n{honest.log_path.read_text()[-2000:]}"
    cheat = build_stage.build_one(_candidate(tmp_path, "i119_fork", CHEAT), False, env, "9.0", tmp_path, 600)
    assert cheat.status == "rejected" and cheat.check == "I119", f"{cheat.status}: {cheat.reason}"
    assert "`fork`" in cheat.reason
    if shutil.which("objdump"):
        assert "`getppid`" in cheat.reason and "run(" in cheat.reason   # named with the function calling it
    again = build_stage.build_one(_candidate(tmp_path, "i119_fork", CHEAT), False, env, "9.0", tmp_path, 600)
    assert again.cached and again.status == "rejected", "a cached library is judged again"
