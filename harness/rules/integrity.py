"""Integrity rules (IDs I1xx): catch candidates that get credit without computing the answer.

Input: a parsed `CandidateSource`. Output: `Finding`s. Python is read through its AST; the C++/CUDA
texts handed to load_inline are read with comments and string literals blanked (`clean_cpp`), so
a comment that mentions a forbidden word trips nothing. One error ID per class of cheat, and a
few warning IDs (I112-I116) for things that are legitimate often enough that a person should look.

Reachability: PyTorch math is only rejected in `ModelNew.forward` and what it calls in the same
file (helper functions, methods, classes it instantiates); `__init__` and module-level code may
use PyTorch freely. A value counts as a tensor ("tainted") if it is a forward argument or derived
from one; `.shape`, `.size()`, `.numel()` and friends give plain ints, so shape arithmetic is fine.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from harness.rules import WARNING, CandidateSource, Finding, SourceString, finding, rule
from harness.rules.sources import (CleanSource, _assignments, clean_cpp, python_line_of, source_arguments,
                                   unresolved_parts)

# ----- vocabularies -----------------------------------------------------------------------------

# torch.<name> that only allocate, reshape, query or move data: allowed in forward.
TORCH_ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "tensor", "as_tensor", "from_numpy", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten",
    "unflatten", "narrow", "split", "chunk", "cat", "concat", "concatenate", "stack", "movedim", "moveaxis",
    "swapaxes", "swapdims", "select", "as_strided", "broadcast_to", "unbind", "t",
    "is_tensor", "is_floating_point", "is_complex", "numel", "get_default_dtype", "device", "dtype", "Size",
    "finfo", "iinfo", "Tensor", "no_grad", "inference_mode", "enable_grad", "is_grad_enabled", "set_grad_enabled",
    "is_inference_mode_enabled", "Generator", "layout", "memory_format", "strided", "contiguous_format",
    "channels_last", "preserve_format", "result_type", "promote_types", "can_cast", "typename",
    # dtypes (float16 & co. are I108's business, so not doubled here)
    "float32", "float", "float64", "double", "int32", "int", "int64", "long", "int16", "short", "int8", "uint8",
    "bool", "float16", "half", "bfloat16", "complex64", "complex128",
}
# sub-namespaces of torch that are not math; other rules own the risky members of some of them.
TORCH_NON_COMPUTE_PREFIXES = (
    "torch.cuda.", "torch.backends.", "torch.version", "torch.utils.cpp_extension", "torch.__version__",
    "torch.jit.is_scripting", "torch.compiler.is_compiling", "torch.testing.", "torch.types.", "torch.nn.Module",
    "torch.nn.Parameter", "torch.nn.parameter.", "torch.nn.init.", "torch.library", "torch._C._get_tracing_state",
    "torch.overrides", "torch.utils._python_dispatch", "torch.autograd.Function", "torch.autograd.function.",
    "torch.multiprocessing", "torch.distributed", "torch.Stream", "torch.Event", "torch.amp", "torch.autocast",
    "torch.set_float32_matmul_precision", "torch.get_float32_matmul_precision",
)
# method names that compute on a tensor (Python and C++). Denylisted because the receiver's type is unknown.
COMPUTE_METHODS = {
    "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "addmm_", "addbmm", "addbmm_",
    "baddbmm", "baddbmm_", "addmv", "addmv_", "addr", "addr_", "einsum", "tensordot", "kron", "matrix_power",
    "chain_matmul", "linear", "conv1d", "conv2d", "conv3d",
    "sum", "nansum", "cumsum", "cumsum_", "cumprod", "cumprod_", "prod", "mean", "nanmean", "std", "var", "norm",
    "logsumexp", "logcumsumexp", "cummax", "cummin", "amax", "amin", "max", "min", "argmax", "argmin",
    "mul", "mul_", "multiply", "multiply_", "add", "add_", "sub", "sub_", "subtract", "subtract_", "div", "div_",
    "divide", "divide_", "true_divide", "floor_divide", "addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp",
    "lerp_", "pow", "pow_", "square", "square_", "sqrt", "sqrt_", "rsqrt", "rsqrt_", "reciprocal", "reciprocal_",
    "neg", "neg_", "negative", "abs", "abs_", "exp", "exp_", "exp2", "expm1", "log", "log_", "log1p", "log2",
    "log10", "sigmoid", "sigmoid_", "tanh", "tanh_", "relu", "relu_", "softmax", "log_softmax", "softplus",
    "gelu", "silu", "sin", "cos", "clamp", "clamp_", "clip", "clip_", "fmod", "remainder", "sign", "where",
    "masked_fill", "masked_fill_", "scatter_add", "scatter_add_", "scatter_reduce", "index_add", "index_add_",
    "tril", "triu", "tril_", "triu_", "diff", "trace", "diag_embed", "apply_", "map_", "map2_", "lt", "gt", "le",
    "ge", "eq", "ne", "maximum", "minimum", "fma", "xlogy", "hypot", "flip", "roll",
}
DUNDER_ARITHMETIC = re.compile(r"^__(r|i)?(add|sub|mul|matmul|truediv|floordiv|mod|pow|neg|pos|abs|and|or|xor|"
                               r"lshift|rshift|invert|lt|le|gt|ge|eq|ne)__$")
# calls that turn a tensor into a plain Python value, or query it
SCALAR_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "stride", "item", "data_ptr", "element_size",
                  "is_contiguous", "get_device", "storage_offset", "tolist", "__len__", "is_floating_point",
                  "untyped_storage", "nbytes", "itemsize"}
SCALAR_ATTRS = {"shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "layout", "requires_grad", "is_leaf",
                "itemsize", "nbytes", "names", "grad_fn"}
SCALAR_BUILTINS = {"len", "int", "float", "bool", "str", "isinstance", "issubclass", "type", "range", "id",
                   "hash", "repr", "print", "callable", "format"}
REDUCING_BUILTINS = {"sum", "min", "max", "abs", "pow", "divmod", "round"}
# other libraries that can do the math if handed a tensor
FOREIGN_MATH_MODULES = ("numpy", "scipy", "math", "operator", "functools", "cmath", "statistics", "itertools")
FOREIGN_BACKENDS = ("triton", "numba", "cupy", "jax", "jaxlib", "tensorflow", "pycuda", "cuda", "cutlass",
                    "tilelang", "taichi", "tvm", "mlx", "cuda_python", "nvmath", "cuequivariance", "flash_attn",
                    "fla", "xformers", "apex", "transformer_engine", "thunder", "warp")
NN_ALLOWED = {"Module", "Parameter", "ParameterList", "ParameterDict", "ModuleList", "ModuleDict", "Buffer",
              "Identity", "Sequential"}

PY_CONCURRENCY = ("threading", "_thread", "multiprocessing", "concurrent", "asyncio", "signal", "sched",
                  "torch.multiprocessing", "torch.distributed", "joblib", "ray", "dask", "trio", "gevent",
                  "eventlet", "_posixsubprocess")
PY_CONCURRENCY_CALLS = ("os.fork", "os.forkpty", "os.register_at_fork", "os.sched_setaffinity", "os.nice",
                        "os.setpriority", "torch.set_num_threads", "torch.set_num_interop_threads")
PY_STREAMS = ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
              "torch.cuda.Event", "torch.cuda.graph", "torch.cuda.CUDAGraph", "torch.cuda.graphs",
              "torch.cuda.make_graphed_callables", "torch.cuda.StreamContext", "torch.cuda.streams",
              "torch.Stream", "torch.Event", "torch.cuda.set_sync_debug_mode", "torch.cuda._sleep",
              "torch.cuda.use_mem_pool", "torch.cuda.MemPool")
PY_STREAM_METHODS = {"wait_stream", "record_stream", "wait_event", "record_event", "capture_begin",
                     "capture_end", "replay"}
PY_OBFUSCATION_MODULES = ("importlib", "runpy", "imp", "base64", "zlib", "codecs", "marshal", "pickle", "bz2",
                          "lzma", "gzip", "binascii", "dill", "cloudpickle", "types", "zipimport", "pkgutil",
                          "zipfile", "tarfile", "_pickle", "copyreg", "code", "codeop", "ast", "dis", "shelve")
PY_OBFUSCATION_BUILTINS = {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "breakpoint"}
PY_TAMPER_MODULES = ("gc", "inspect", "ctypes", "_ctypes", "builtins", "__builtin__", "atexit", "cffi",
                     "sysconfig", "site", "faulthandler", "tracemalloc", "unittest.mock", "mock")
PY_TAMPER_QUALNAMES = ("sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile", "sys.meta_path",
                       "sys.path_hooks", "sys.path", "sys.addaudithook", "sys.excepthook", "sys.displayhook",
                       "sys.exit", "sys.setrecursionlimit", "sys.setswitchinterval",
                       "os._exit", "os.abort", "torch._C", "torch.library", "torch._dynamo", "torch._inductor",
                       "torch.ops.aten", "torch.ops.prims", "torch._ops", "torch._refs", "torch._prims",
                       "torch.nn.modules.module.register_module", "torch.manual_seed", "torch.cuda.manual_seed",
                       "torch.use_deterministic_algorithms", "torch.set_default_dtype", "torch.set_default_device",
                       "torch.set_printoptions", "torch.cuda.memory", "torch.cuda.set_per_process_memory_fraction",
                       "torch.random", "torch.set_rng_state", "torch.cuda.set_rng_state",
                       "torch.utils.benchmark", "torch.profiler", "torch.autograd.profiler", "torch.Generator",
                       "torch.seed", "torch.initial_seed", "torch.get_rng_state", "torch.cuda.get_rng_state",
                       "torch.cuda.manual_seed_all", "torch.cuda.seed", "torch.cuda.random", "numpy.random.seed",
                       "numpy.random.default_rng", "numpy.random.RandomState", "random.seed", "random.Random")
TAMPER_ATTRS = {"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "gi_frame", "cr_frame",
                "ag_frame", "__globals__", "__code__", "__closure__", "__subclasses__", "__bases__", "__mro__",
                "__dict__", "__builtins__", "__class__", "__defaults__", "__kwdefaults__"}
TAMPER_METHODS = {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                  "register_backward_hook", "register_full_backward_pre_hook", "register_module_forward_hook",
                  "register_module_forward_pre_hook", "register_state_dict_pre_hook",
                  "register_load_state_dict_post_hook", "__set_name__"}
PY_IO_MODULES = ("pathlib", "io", "shutil", "tempfile", "glob", "socket", "urllib", "urllib3", "requests",
                 "http", "httpx", "aiohttp", "ftplib", "smtplib", "telnetlib", "xmlrpc", "websocket",
                 "websockets", "subprocess", "pty", "paramiko", "mmap", "fcntl", "resource", "sqlite3",
                 "fileinput", "filecmp", "csv", "json", "yaml", "h5py", "ssl", "select", "selectors",
                 "socketserver", "webbrowser", "dbm", "platform", "pandas", "safetensors", "huggingface_hub")
PY_IO_CALLS = ("os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn", "os.kill", "os.killpg",
               "os.remove", "os.unlink", "os.rename", "os.renames", "os.replace", "os.makedirs", "os.mkdir",
               "os.rmdir", "os.removedirs", "os.listdir", "os.scandir", "os.walk", "os.open", "os.fdopen",
               "os.write", "os.read", "os.chdir", "os.fchdir", "os.symlink", "os.link", "os.chmod", "os.chown",
               "os.truncate", "os.ftruncate", "os.utime", "os.putenv", "os.unsetenv", "os.setsid", "os.dup",
               "os.dup2", "os.pipe", "os.mkfifo", "os.mknod", "os.sendfile", "os.startfile", "os.memfd_create",
               "os.setuid", "os.setgid", "os.umask", "os.sync", "torch.load", "torch.save",
               "torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_library", "torch.ops.load_library",
               "torch.classes.load_library", "torch.hub", "torch.utils.model_zoo", "torch.from_file",
               "torch.UntypedStorage.from_file", "torch.TypedStorage.from_file", "torch.Storage.from_file",
               "numpy.load", "numpy.save", "numpy.savez", "numpy.fromfile", "numpy.loadtxt", "numpy.savetxt",
               "numpy.genfromtxt", "numpy.memmap", "numpy.lib.format")
PY_IO_BUILTINS = {"open", "input", "exit", "quit"}
ENV_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
PY_PRECISION_QUALNAMES = ("torch.float16", "torch.half", "torch.bfloat16", "torch.float8", "torch.complex32",
                          "torch.chalf", "torch.set_float32_matmul_precision", "torch.autocast",
                          "torch.cuda.amp", "torch.amp", "torch.cpu.amp", "torch.quantization", "torch.ao",
                          "torch.quint8", "torch.qint8")
PY_PRECISION_FLAGS = {"allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
                      "allow_fp16_accumulation", "fp32_precision"}
PY_PRECISION_METHODS = {"half", "bfloat16", "float8_e4m3fn", "float8_e5m2"}
LAZY_QUALNAMES = ("torch.utils._python_dispatch", "torch.overrides", "torch._subclasses", "torch.Tensor._make_subclass",
                  "torch.Tensor._make_wrapper_subclass", "torch._C._disabled_torch_function_impl",
                  "torch._C.DisableTorchFunction", "torch._C._DisableTorchDispatch", "torch.masked",
                  "torch.nested", "torch.sparse")
LAZY_NAMES = {"_make_subclass", "_make_wrapper_subclass", "__torch_function__", "__torch_dispatch__", "as_subclass",
              "TorchDispatchMode", "TorchFunctionMode", "FakeTensor", "FakeTensorMode"}
IMPERSONATING_DUNDERS = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__float__",
                         "__sub__", "__rsub__", "__abs__", "__array__", "__getattr__", "__getattribute__",
                         "__instancecheck__", "__subclasscheck__",
                         "__torch_function__", "__torch_dispatch__", "__array_function__", "__array_ufunc__",
                         "__cuda_array_interface__", "__dlpack__", "__isub__",
                         "__mul__", "__truediv__", "__add__", "__radd__", "__rmul__", "__neg__"}
CACHE_DECORATORS = {"lru_cache", "cache", "cached_property", "memoize", "memoized", "cached", "memoise"}
MUTATORS = {"append", "extend", "insert", "update", "setdefault", "add", "pop", "popitem", "clear", "remove",
            "discard", "__setitem__", "__delitem__", "__setattr__", "__delattr__", "appendleft", "copy_", "fill_", "zero_", "set_", "resize_",
            "register_buffer", "register_parameter", "add_module", "register_module", "put_", "index_copy_",
            "index_put_", "masked_scatter_", "scatter_"}

# ----- C++/CUDA vocabularies ------------------------------------------------------------------

CPP_ALLOWED_ATEN = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "from_blob", "tensor", "dtype", "device", "requires_grad", "layout", "memory_format", "pinned_memory",
    "scalarTypeToTypeMeta", "typeMetaToScalarType", "elementSize", "globalContext", "get_default_dtype",
    "toString", "isFloatingType", "isComplexType", "isIntegralType", "device_of", "reshape", "permute", "transpose",
    "squeeze", "unsqueeze", "flatten", "narrow", "cat", "stack", "split", "chunk", "select", "as_strided",
    "kFloat", "kFloat32", "kCUDA", "kCPU", "check_dim_size", "checkDim", "checkSize", "checkAllSameGPU",
    "checkAllContiguous", "checkContiguous", "checkScalarType", "checkDeviceType", "checkSameGPU", "make_tensor",
    "getCurrentCUDAStream", "maybe_wrap_dim", "get_num_threads", "in_parallel_region", "is_tensor",
    "empty_cuda", "empty_cpu", "detail", "optional", "nullopt", "make_optional", "intrusive_ptr", "make_intrusive",
    "parallel_for", "parallel_reduce", "get_thread_num", "acc_type", "opmath_type", "numeric_limits",
    "irange", "string", "indexing", "autograd", "Tensor", "toScalarType", "empty_strided_cuda", "clone",
}
CPP_COMPUTE_NAMESPACE = re.compile(
    r"\b(?:at|torch|c10)\s*::\s*(?:native|_ops|redispatch|linalg|fft|special|nn|cpublas|blas|jit|"
    r"cuda\s*::\s*blas|cuda\s*::\s*cub|cuda\s*::\s*getCurrentCUDABlasHandle|cuda\s*::\s*getCurrentCUDABlasLtHandle|"
    r"cuda\s*::\s*getCurrentCUDASolverDnHandle|cuda\s*::\s*getCurrentCUDASparseHandle|vec|functorch|func)\b")
CPP_ATEN_CALL = re.compile(r"\b(?:at|torch)\s*::\s*([a-z_]\w*)\b(?!\s*::)")
CPP_ATEN_DEVICE_CALL = re.compile(r"\b(?:at|torch|c10)\s*::\s*(?:cuda|cpu|meta|compositeexplicitautograd|"
                                  r"compositeimplicitautograd)\s*::\s*([a-z_]\w*)\b(?!\s*::)")
CPP_ATEN_DEVICE_ALLOWED = {"getCurrentCUDAStream", "getDefaultCUDAStream", "getCurrentDeviceProperties",
                           "getDeviceProperties", "current_device", "device_count", "warp_size", "set_device",
                           "is_available", "getStreamFromPool", "getStreamFromExternal", "setCurrentCUDAStream",
                           "stream_synchronize", "device_synchronize", "empty", "empty_strided", "detail",
                           "getCurrentCUDABlasHandle", "getCurrentCUDABlasLtHandle"}
CPP_USING_ATEN = re.compile(r"\busing\s+(?:namespace\s+(?:at|torch|c10|at\s*::\s*native|torch\s*::\s*nn)\s*;|"
                            r"(?:at|torch)\s*::\s*([a-z_]\w*)\s*;)")
CPP_TENSOR_METHOD = re.compile(r"(?:\.|->)\s*(" + "|".join(sorted(COMPUTE_METHODS, key=len, reverse=True))
                               + r")\s*\(")
CPP_LIBRARIES = re.compile(
    r"\b(cublas\w*|cuBLAS\w*|CUBLAS_\w+|cublasLt\w*|cudnn\w*|CUDNN_\w+|cusparse\w*|CUSPARSE_\w+|cufft\w*|CUFFT_\w+|"
    r"cusolver\w*|CUSOLVER_\w+|cutensor\w*|CUTENSOR_\w+|cblas_\w+|sgemm_?|dgemm_?|mkl_\w+|MKL_\w+|openblas\w*|"
    r"Eigen|dnnl\w*|mkldnn\w*|magma_\w+|nvrtc\w*|cuModuleLoad\w*|cuLaunchKernel)\b")
CPP_TEMPLATE_LIBRARIES = re.compile(r"\b(cutlass|cute|thrust|cub|CUB_\w+|cuda::std::\w*reduce|"
                                    r"cooperative_groups::reduce|cg::reduce|std::reduce|std::accumulate|"
                                    r"std::inner_product|std::transform_reduce|std::partial_sum|std::inclusive_scan)\b")
CPP_CONCURRENCY = re.compile(r"\b(std\s*::\s*(?:thread|jthread|async|launch|future|promise|packaged_task)|"
                             r"pthread_\w+|fork\s*\(|vfork\s*\(|clone\s*\(|boost\s*::\s*thread|tbb\s*::\s*\w+)")
CPP_CONCURRENCY_INCLUDES = re.compile(r"#\s*include\s*<\s*(thread|future|pthread\.h|tbb/[\w./]+|execution)\s*>")
CPP_PARALLEL_WARN = re.compile(r"(#\s*pragma\s+omp\b|\bomp_\w+\s*\(|\bat\s*::\s*parallel_for\b|"
                               r"\bat\s*::\s*parallel_reduce\b|std\s*::\s*execution\s*::\s*par\w*|#\s*include\s*<omp\.h>)")
CPP_STREAMS = re.compile(
    r"\b(cudaStreamCreate\w*|cuStreamCreate\w*|getStreamFromPool|getStreamFromExternal|setCurrentCUDAStream|"
    r"CUDAStreamGuard|CUDAMultiStreamGuard|OptionalCUDAStreamGuard|cudaLaunchHostFunc|cuLaunchHostFunc|"
    r"cudaStreamAddCallback|cuStreamAddCallback|cudaGraph\w*|cuGraph\w*|cudaStreamBeginCapture\w*|"
    r"cudaStreamEndCapture|cudaEventCreate\w*|cudaEventRecord\w*|cudaStreamWaitEvent|cuStreamWaitEvent|"
    r"cudaEventSynchronize|cudaEventElapsedTime|cudaStreamPerThread|cudaStreamNonBlocking|cudaStreamLegacy|"
    r"cudaStreamAttachMemAsync|cudaSetDevice|cudaDeviceReset|cudaDeviceSetLimit|cudaProfilerStart|"
    r"cudaProfilerStop|cudaDeviceSetCacheConfig|cudaSetDeviceFlags|cudaStreamSetAttribute|cudaCtxResetPersistingL2Cache|"
    r"cudaDeviceSetSharedMemConfig|cudaLaunchCooperativeKernelMultiDevice|cudaIpc\w*)\b|"
    r"\(\s*cudaStream_t\s*\)\s*(?:0x)?0*[1-9]|cast\s*<\s*cudaStream_t\s*>\s*\(\s*(?:0x)?0*[1-9]")
CPP_DEVICE_SYNC = re.compile(r"\b(cudaDeviceSynchronize|cudaThreadSynchronize|cuCtxSynchronize)\b")
CPP_OBFUSCATION = re.compile(r"\b(dlopen|dlsym|dlmopen|LoadLibrary\w*|GetProcAddress|RTLD_\w+|"
                             r"py\s*::\s*exec|py\s*::\s*eval\w*|pybind11\s*::\s*exec|pybind11\s*::\s*eval\w*|"
                             r"PyRun_\w+|PyImport_\w+|Py_CompileString\w*|PyEval_\w+|PyObject_Call\w*|"
                             r"(?:py|pybind11)\s*::\s*module_?\s*::\s*import|(?:py|pybind11)\s*::\s*globals|"
                             r"c10\s*::\s*Dispatcher|TORCH_LIBRARY_IMPL|TORCH_LIBRARY_FRAGMENT|"
                             r"__attribute__\s*\(\s*\(\s*constructor)")
CPP_TORCH_LIBRARY_ATEN = re.compile(r"\bTORCH_LIBRARY\w*\s*\(\s*(aten|prims|_)\b")
CPP_PRECISION = re.compile(
    r"\b(half|half2|__half|__half2|__nv_half\w*|__nv_bfloat16\w*|nv_bfloat16\w*|__nv_fp8\w*|__nv_fp4\w*|"
    r"__float2half\w*|__half2float\w*|__float2bfloat16\w*|__bfloat162float\w*|__floats2half2\w*|"
    r"__floats2bfloat162\w*|__h(?:add|sub|mul|fma|div|neg|abs|max|min|exp|exp2|log|log2|sqrt|rsqrt|rcp|eq|ne|lt|gt|le|"
    r"ge|equ|neu|isnan|isinf|cmadd|sin|cos|tanh|ceil|floor|trunc|rint)\w*|kHalf|kFloat16|kBFloat16|"
    r"kFloat8\w*|Half|BFloat16|Float8_\w+|float8_\w+|bfloat16|float16|fp16|bf16|FP16|BF16|__nv_fp8_e4m3|"
    r"CUBLAS_COMPUTE_32F_FAST\w*|_Float16|__fp16|__bf16|__nv_fp8_\w+)\b")
CPP_PRECISION_INCLUDES = re.compile(r"#\s*include\s*[<\"]\s*(cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|cuda_fp4\.h|"
                                    r"cuda_fp16\.hpp|cuda_bf16\.hpp|c10/util/Half\.h|c10/util/BFloat16\.h)")
ASM_PRECISION = re.compile(r"\.(f16|bf16|e4m3|e5m2|f16x2|bf16x2|e2m1)\b")
# TF32 tensor-core math: one TF32 product fails an fp32 tolerance, three of them (split precision) meet it
CPP_TF32 = re.compile(r"\b(\w*tf32\w*|\w*TF32\w*)\b")
ASM_TF32 = re.compile(r"\.tf32\b")
# a tensor-core MMA on bf16/f16 operands into an fp32 accumulator: the building block of split precision
ASM_SPLIT_MMA = re.compile(r"\b(?:mma|wgmma\.mma_async)\.[\w.]*?\.f32\.(bf16|f16)\.(?:bf16|f16)(?:\.f32)?\b")
CPP_IO = re.compile(
    r"\b(fopen\w*|freopen|fdopen|std\s*::\s*(?:i|o)?fstream|ifstream|ofstream|fstream|std\s*::\s*filesystem|"
    r"system\s*\(|popen\s*\(|execv\w*\s*\(|execl\w*\s*\(|posix_spawn\w*|getenv\s*\(|setenv\s*\(|"
    r"putenv\s*\(|unsetenv\s*\(|socket\s*\(|connect\s*\(|mmap\s*\(|unlink\s*\(|sched_setaffinity)")
CPP_IO_OPEN = re.compile(r"(?<![\w.>:])(?:::\s*)?open\s*\(")
CPP_IO_INCLUDES = re.compile(r"#\s*include\s*<\s*(fstream|filesystem|unistd\.h|sys/\w+\.h|"
                             r"fcntl\.h|dlfcn\.h|netinet/\w+\.h|arpa/\w+\.h|experimental/filesystem|spawn\.h)\s*>")
CPP_STATIC_TENSOR = re.compile(
    r"\bstatic\s+(?:thread_local\s+)?(?:const\s+)?(?:(?:at|torch|c10|std)\s*::\s*\w+\s*<[^;(){}]*Tensor[^;(){}]*>|"
    r"(?:at|torch)\s*::\s*Tensor|Tensor|(?:c10|std)\s*::\s*optional\s*<[^;]*Tensor[^;]*>)\s+\w+")
CPP_GLOBAL_TENSOR = re.compile(r"^[ \t]*(?:inline\s+|thread_local\s+|extern\s+)*(?:(?:at|torch)\s*::\s*Tensor|"
                               r"(?:std|c10)\s*::\s*\w+\s*<[^;(){}]*Tensor[^;(){}]*>)\s+\w+\s*(?:=[^;(]*)?;",
                               re.MULTILINE)
CPP_STATIC_STATE = re.compile(r"\bstatic\s+(?!const\b|constexpr\b|inline\b|__device__\b|__global__\b|"
                              r"__host__\b|__forceinline__\b|void\b|struct\b|class\b|_Float16\b|assert\b)"
                              r"(?:thread_local\s+)?[\w:<>,*& ]+?[\s*&]+\w+\s*(?:=|;|\[|\{)")
CPP_DEVICE_GLOBAL = re.compile(r"^[ \t]*(?:static\s+)?__device__\s+(?!(?:__forceinline__|inline|__noinline__|"
                               r"static|void|auto|constexpr)\b)[\w:<>, ]+?[\s*]+\w+\s*(?:\[[^\]]*\]\s*)*"
                               r"(?:=[^;(]*)?;", re.MULTILINE)
CPP_TOKEN_PASTING = re.compile(r"##")
CPP_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\w+\(([^)]*)\)(.*(?:\\\n.*)*)", re.MULTILINE)
CPP_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*(.*)$", re.MULTILINE)
CPP_TENSOR_DECL = re.compile(r"(?:(?:at|torch)\s*::\s*Tensor|\bTensor)\s*(?:const\s*)?&?\s*(\w+)")
CPP_AUTO_TENSOR = re.compile(r"\bauto\s*&?\s*(\w+)\s*=\s*(?:(?:at|torch)\s*::\s*\w+\s*\(|(\w+)\s*\.\s*"
                             r"(?:view|reshape|contiguous|transpose|permute|unsqueeze|squeeze|expand|select|narrow|"
                             r"to|clone|flatten|slice|index)\s*\()")
PRECISION_FLAGS = re.compile(r"(-use_fast_math|--use_fast_math|-ffast-math|-ffp-contract=fast|--ftz=true|"
                             r"--prec-div=false|--prec-sqrt=false|-Ofast|-fno-finite-math|-funsafe-math)")
LIBRARY_LDFLAGS = re.compile(r"-l\s*(cublas\w*|cudnn\w*|cusparse\w*|cufft\w*|cusolver\w*|cutensor\w*|mkl\w*|"
                             r"openblas\w*|blas|lapack|dnnl|nvrtc|cuda\b)")
FOREIGN_LDFLAGS = re.compile(r"(-Wl,|--wrap|-L|\.so\b|\.a$|\.o$|-rpath|-include\b|-imacros|-I|-isystem|"
                             r"--pre-include|-Xlinker|-B\b|-specs|-fplugin|@/|-x\b)")


# ----- Python analysis, built once per candidate ----------------------------------------------

def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _starts(qualname: str | None, prefixes: Iterable[str]) -> bool:
    if not qualname:
        return False
    return any(qualname == p or qualname.startswith(p + ".") or (p.endswith((".", "_")) and qualname.startswith(p))
               for p in prefixes)


def _module_matches(module: str, names: Iterable[str]) -> bool:
    return any(module == n or module.startswith(n + ".") for n in names)


@dataclass
class Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    owner: ast.ClassDef | None
    tainted_params: set[str] = field(default_factory=set)
    tainted: set[str] = field(default_factory=set)


class Analysis:
    """What the Python rules share: import aliases, the call graph from forward, tensor taint."""

    def __init__(self, tree: ast.Module, reference_module: str = ""):
        self.tree = tree
        self.reference_module = reference_module
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.imports: list[tuple[str, str, int]] = []        # (module or module.object, bound name, line)
        self.aliases: dict[str, str] = {}
        self._collect_imports()
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.nested_defs = {n.name: n for outer in ast.walk(tree) if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef))
                            for n in ast.walk(outer) if n is not outer and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.module_names = self._module_level_names()
        self.self_classes: dict[str, str] = {}               # self.X = Cls(...)
        self.self_functions: dict[str, str] = {}             # self.X = helper
        self._collect_aliases_by_assignment()
        self.builders = self._ext_builders()
        self.ext_handles = self._ext_handles()
        self.reachable: dict[ast.AST, Function] = {}
        self._walk_call_graph()

    # --- names ---------------------------------------------------------------------------------
    def _collect_imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    self.imports.append((alias.name, bound, node.lineno))
                    self.aliases[bound] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    full = f"{module}.{alias.name}" if module and not module.endswith(".") else module + alias.name
                    self.imports.append((full, alias.asname or alias.name, node.lineno))
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = full

    def _module_level_names(self) -> set[str]:
        names = set()
        for node in self.tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        return names

    def _collect_aliases_by_assignment(self) -> None:
        """`mm = torch.matmul` at module level and `self.mm = torch.matmul` anywhere act as imports."""
        for _ in range(2):
            for node in ast.walk(self.tree):
                if not isinstance(node, ast.Assign):
                    continue
                value_name = self.qualname(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name) and node in self.tree.body and value_name \
                            and value_name.split(".")[0] in {m.split(".")[0] for m, _, _ in self.imports}:
                        self.aliases.setdefault(target.id, value_name)
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        key = f"self.{target.attr}"
                        if value_name and value_name.split(".")[0] in {m.split(".")[0] for m, _, _ in self.imports}:
                            self.aliases.setdefault(key, value_name)
                        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                            if node.value.func.id in self.classes:
                                self.self_classes[target.attr] = node.value.func.id
                        if isinstance(node.value, ast.Name) and node.value.id in self.functions:
                            self.self_functions[target.attr] = node.value.id

    def qualname(self, node: ast.AST) -> str | None:
        """Fully qualified dotted name of a Name/Attribute chain, through import aliases."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.aliases.get(f"self.{node.attr}")
            inner = self.qualname(node.value)
            return f"{inner}.{node.attr}" if inner else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            inner = self.qualname(node.args[0])
            return f"{inner}.{node.args[1].value}" if inner else None
        return None

    def outermost_chains(self, root: ast.AST) -> Iterator[tuple[ast.AST, str]]:
        """Each maximal Name/Attribute chain under root that resolves to an imported name."""
        for node in ast.walk(root):
            if isinstance(node, (ast.Name, ast.Attribute)):
                parent = self.parents.get(node)
                if isinstance(parent, ast.Attribute) and parent.value is node:
                    continue
                name = self.qualname(node)
                if name:
                    yield node, name

    # --- the extension module ------------------------------------------------------------------
    def _ext_builders(self) -> set[str]:
        """Names of functions (or methods) that build or return the compiled extension."""
        builders: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(c, ast.Call) and _call_tail(c) == "load_inline" for c in ast.walk(node)):
                builders.add(node.name)
        return builders

    def is_ext_build(self, value: ast.AST | None) -> bool:
        if isinstance(value, ast.Constant) and value.value is None:
            return True
        if isinstance(value, ast.Await):
            value = value.value
        return isinstance(value, ast.Call) and (_call_tail(value) == "load_inline" or _call_tail(value) in self.builders)

    def _ext_handles(self) -> set[str]:
        handles: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and self.is_ext_build(node.value) \
                    and not (isinstance(node.value, ast.Constant)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    name = _dotted(target)
                    if name:
                        handles.add(name)
        return handles

    def is_ext_expr(self, node: ast.AST) -> bool:
        name = _dotted(node)
        if name and (name in self.ext_handles or name.split(".")[0] in self.ext_handles):
            return True
        if isinstance(node, ast.Attribute) and self.is_ext_expr(node.value):
            return True
        return isinstance(node, ast.Call) and self.is_ext_build(node)

    # --- call graph and taint ------------------------------------------------------------------
    def model_new(self) -> ast.ClassDef | None:
        return self.classes.get("ModelNew")

    def class_methods(self, cls: ast.ClassDef, seen: set[str] | None = None) -> dict[str, ast.FunctionDef]:
        """Methods of a class, including those of its bases defined in this file."""
        seen = seen or set()
        seen.add(cls.name)
        methods: dict[str, ast.FunctionDef] = {}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes and base.id not in seen:
                methods.update(self.class_methods(self.classes[base.id], seen))
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods[node.name] = node
        return methods

    def _owner_of(self, func: ast.AST) -> ast.ClassDef | None:
        parent = self.parents.get(func)
        return parent if isinstance(parent, ast.ClassDef) else None

    def _add(self, func: ast.AST, tainted: set[str], work: list) -> None:
        entry = self.reachable.get(func)
        if entry is None:
            entry = Function(func, self._owner_of(func))
            self.reachable[func] = entry
            entry.tainted_params = set(tainted)
            work.append(entry)
        elif not tainted <= entry.tainted_params:
            entry.tainted_params |= tainted
            work.append(entry)

    def _walk_call_graph(self) -> None:
        model = self.model_new()
        if model is None:
            return
        work: list[Function] = []
        methods = self.class_methods(model)
        for name in ("forward", "__call__"):
            if name in methods:
                self._add(methods[name], set(_param_names(methods[name])[1:]), work)
        # any other module in the file may end up called by forward (ModuleList, hooks, containers)
        for cls in self.classes.values():
            if cls is not model:
                for name, method in self.class_methods(cls).items():
                    if name in ("forward", "__call__"):
                        self._add(method, set(_param_names(method)[1:]), work)
        rounds = 0
        while work and rounds < 500:
            rounds += 1
            entry = work.pop()
            entry.tainted = self._taint(entry.node, entry.tainted_params)
            for node in ast.walk(entry.node):
                if isinstance(node, ast.Call):
                    for callee, skip in self._callees(node, entry.owner):
                        if skip < 0:
                            self._add(callee, set(_param_names(callee)[1:]), work)
                            continue
                        params = _param_names(callee)[skip:]
                        tainted = set()
                        for param, arg in zip(params, node.args):
                            if isinstance(arg, ast.Starred) or self.expr_tainted(arg, entry.tainted):
                                tainted.add(param)
                        for keyword in node.keywords:
                            if self.expr_tainted(keyword.value, entry.tainted):
                                tainted.update(params if keyword.arg is None else [keyword.arg])
                        if any(isinstance(a, ast.Starred) and self.expr_tainted(a.value, entry.tainted) for a in node.args):
                            tainted.update(params)
                        self._add(callee, tainted, work)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    parent = self.parents.get(node)
                    if isinstance(parent, ast.Call) and parent.func is node:
                        continue
                    if node.id in self.functions:       # passed around as a callback: assume tensors
                        callee = self.functions[node.id]
                        self._add(callee, set(_param_names(callee)), work)
                    elif node.id in self.classes and not (isinstance(parent, ast.Attribute)):
                        for method in self.class_methods(self.classes[node.id]).values():
                            self._add(method, set(_param_names(method)[1:]), work)

    def _callees(self, call: ast.Call, owner: ast.ClassDef | None) -> list[tuple[ast.AST, int]]:
        """Functions in this file a call may run, with how many leading parameters the call does not fill."""
        func = call.func
        out: list[tuple[ast.AST, int]] = []
        if isinstance(func, ast.Name) and func.id in self.nested_defs:
            out.append((self.nested_defs[func.id], 0))
        elif isinstance(func, ast.Name):
            if func.id in self.functions:
                out.append((self.functions[func.id], 0))
            elif func.id in self.classes:
                methods = self.class_methods(self.classes[func.id])
                if "__init__" in methods:
                    out.append((methods["__init__"], 1))
                for name in ("forward", "__call__"):
                    if name in methods:
                        out.append((methods[name], -1))      # called later, with tensors
        elif isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id == "self" and owner is not None:
                methods = self.class_methods(owner)
                if func.attr in methods:
                    out.append((methods[func.attr], 1))
                elif func.attr in self.self_classes:
                    cls_methods = self.class_methods(self.classes[self.self_classes[func.attr]])
                    out += [(cls_methods[n], 1) for n in ("forward", "__call__") if n in cls_methods]
                elif func.attr in self.self_functions:
                    out.append((self.functions[self.self_functions[func.attr]], 0))
            elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) \
                    and receiver.value.id == "self" and receiver.attr in self.self_classes:
                cls_methods = self.class_methods(self.classes[self.self_classes[receiver.attr]])
                if func.attr in cls_methods:
                    out.append((cls_methods[func.attr], 1))
            elif isinstance(receiver, ast.Name) and receiver.id in self.classes:
                cls_methods = self.class_methods(self.classes[receiver.id])
                if func.attr in cls_methods:
                    method = cls_methods[func.attr]
                    static = any(_dotted(d) == "staticmethod" for d in method.decorator_list)
                    out.append((method, 0 if static and func.attr != "forward" else 1))
                elif func.attr == "apply" and "forward" in cls_methods:   # autograd.Function
                    out.append((cls_methods["forward"], 1))
            elif isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super" \
                    and owner is not None:
                methods = self.class_methods(owner)
                if func.attr in methods:
                    out.append((methods[func.attr], 1))
        return out

    def _taint(self, func: ast.AST, params: set[str]) -> set[str]:
        tainted = set(params)
        for _ in range(10):
            before = len(tainted)
            for node in ast.walk(func):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        self._assign(target, node.value, tainted)
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    self._assign(node.target, node.value, tainted)
                elif isinstance(node, ast.AugAssign) and self.expr_tainted(node.value, tainted):
                    self._assign(node.target, node.value, tainted)
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    self._assign(node.target, node.iter, tainted)
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    self._assign(node.optional_vars, node.context_expr, tainted)
                elif isinstance(node, ast.Call) and any(self.expr_tainted(a, tainted) for a in node.args):
                    for arg in node.args:      # map(lambda a, b: a * b, q, k)
                        if isinstance(arg, ast.Lambda):
                            tainted.update(_param_names(arg))
            if len(tainted) == before:
                break
        return tainted

    def _assign(self, target: ast.AST, value: ast.AST, tainted: set[str]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                self._assign(t, v, tainted)
            return
        if self.expr_tainted(value, tainted):
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    tainted.add(node.id)

    def expr_tainted(self, node: ast.AST, tainted: set[str]) -> bool:
        """Whether an expression plausibly holds a tensor derived from forward's inputs."""
        if isinstance(node, ast.Name):
            return node.id in tainted
        if isinstance(node, ast.Attribute):
            if node.attr in SCALAR_ATTRS or (isinstance(node.value, ast.Name) and node.value.id == "self"):
                return False
            if self.qualname(node):
                return False
            return self.expr_tainted(node.value, tainted)
        if isinstance(node, ast.Subscript):
            return self.expr_tainted(node.value, tainted)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in SCALAR_BUILTINS:
                return False
            if isinstance(func, ast.Attribute) and func.attr in SCALAR_METHODS:
                return False
            name = self.qualname(func)
            if name and name.startswith("torch.") and not _starts(name, TORCH_NON_COMPUTE_PREFIXES) \
                    and name.split(".")[-1] not in {"device", "Size", "finfo", "iinfo", "is_tensor", "numel",
                                                    "is_floating_point", "get_default_dtype", "dtype"}:
                return True
            if isinstance(func, ast.Attribute) and self.expr_tainted(func.value, tainted):
                return True
            args = list(node.args) + [k.value for k in node.keywords]
            return any(self.expr_tainted(a, tainted) for a in args)
        if isinstance(node, ast.BinOp):
            return self.expr_tainted(node.left, tainted) or self.expr_tainted(node.right, tainted)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and self.expr_tainted(node.operand, tainted)
        if isinstance(node, ast.BoolOp):
            return any(self.expr_tainted(v, tainted) for v in node.values)
        if isinstance(node, ast.IfExp):
            return self.expr_tainted(node.body, tainted) or self.expr_tainted(node.orelse, tainted)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.expr_tainted(e, tainted) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.expr_tainted(v, tainted) for v in node.values if v is not None)
        if isinstance(node, (ast.Starred, ast.NamedExpr, ast.Await)):
            return self.expr_tainted(node.value, tainted)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.expr_tainted(node.elt, tainted)
        if isinstance(node, ast.DictComp):
            return self.expr_tainted(node.value, tainted)
        return False

    def in_reachable(self) -> Iterator[tuple[Function, ast.AST]]:
        """Every node in forward and what it calls (each function once)."""
        for entry in self.reachable.values():
            for node in ast.walk(entry.node):
                yield entry, node


def _call_tail(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _param_names(func: ast.AST) -> list[str]:
    args = func.args
    names = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def analysis_of(source: CandidateSource) -> Analysis:
    cached = getattr(source.tree, "_harness_integrity", None)
    if cached is None:
        cached = Analysis(source.tree, source.reference_module)
        source.tree._harness_integrity = cached
    return cached


def _unique(findings: Iterable[Finding]) -> Iterator[Finding]:
    seen = set()
    for item in findings:
        key = (item.rule, item.line, item.message)
        if key not in seen:
            seen.add(key)
            yield item


# ----- C++/CUDA helpers -----------------------------------------------------------------------

def _cleaned(source: CandidateSource) -> list[tuple[SourceString, CleanSource]]:
    cached = getattr(source.tree, "_harness_cleaned", None)
    if cached is None:
        cached = [(s, clean_cpp(s.text)) for s in source.sources]
        source.tree._harness_cleaned = cached
    return cached


def _scan(source: CandidateSource, rule_id: str, pattern: re.Pattern, what: str, view: str = "code",
          group: int = 0) -> Iterator[Finding]:
    for src, clean in _cleaned(source):
        text = getattr(clean, view)
        for match in pattern.finditer(text):
            token = " ".join(match.group(group).split())
            yield finding(rule_id, python_line_of(source.tree, src, match.start()), f"{what}: `{token}`")


def _keyword_strings(source: CandidateSource, keywords: set[str]) -> Iterator[tuple[ast.Call, str]]:
    """Flags passed to load_inline under the given keywords, as strings."""
    from harness.rules.sources import resolve_strings
    names = _assignments(source.tree)
    for call in source.load_inline_calls:
        for keyword in call.keywords:
            if keyword.arg in keywords:
                for text in resolve_strings(keyword.value, names):
                    yield call, text


def _host_bodies(code: str) -> Iterator[tuple[int, str, str]]:
    """(offset, parameter text, body text) of each C++ function taking a Tensor parameter."""
    for match in re.finditer(r"\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[\w:<>]+\s*)?\{", code):
        close = match.start()
        depth, i = 0, close
        while i >= 0:
            if code[i] == ")":
                depth += 1
            elif code[i] == "(":
                depth -= 1
                if depth == 0:
                    break
            i -= 1
        if i < 0:
            continue
        name = re.search(r"(\w+)\s*$", code[:i])
        if not name or name.group(1) in {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"}:
            continue
        params = code[i + 1:close]
        if "Tensor" not in params:
            continue
        start = match.end()
        depth, j = 1, start
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        yield start, params, code[start:j - 1]


def _brace_depth(code: str, offset: int) -> int:
    return code.count("{", 0, offset) - code.count("}", 0, offset)


# ===== the rules ===============================================================================

@rule("I101")
def pytorch_computes_answer(source: CandidateSource):
    """ModelNew.forward (and what it calls) may allocate, reshape and launch, but not compute in PyTorch."""
    analysis = analysis_of(source)
    out = []
    for entry, node in analysis.in_reachable():
        if isinstance(node, (ast.Name, ast.Attribute)):
            parent = analysis.parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.value is node:
                continue
            name = analysis.qualname(node)
            message = _torch_compute(name) or _foreign_call(name, analysis, node, entry)
            if message:
                out.append(finding("I101", node.lineno, message))
        if isinstance(node, ast.Attribute) and (node.attr in COMPUTE_METHODS or DUNDER_ARITHMETIC.match(node.attr)) \
                and not isinstance(analysis.parents.get(node), ast.Call) and not analysis.qualname(node) \
                and analysis.expr_tainted(node.value, entry.tainted):
            out.append(finding("I101", node.lineno, f"`.{node.attr}` of a tensor taken inside forward"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and (node.args[1].value in COMPUTE_METHODS
                                                             or DUNDER_ARITHMETIC.match(node.args[1].value)) \
                and not analysis.is_ext_expr(node.args[0]):
            out.append(finding("I101", node.lineno, f"`getattr(..., {node.args[1].value!r})` computes inside forward"))
        if isinstance(node, ast.Call):
            func = node.func
            args = list(node.args) + [k.value for k in node.keywords]
            if isinstance(func, ast.Attribute) and not analysis.qualname(func) and not analysis.is_ext_expr(func.value):
                if func.attr in COMPUTE_METHODS or DUNDER_ARITHMETIC.match(func.attr):
                    out.append(finding("I101", node.lineno, f"`.{func.attr}(...)` computes in PyTorch inside forward"))
            elif isinstance(func, ast.Name) and func.id in REDUCING_BUILTINS and func.id not in analysis.functions \
                    and any(analysis.expr_tainted(a, entry.tainted) for a in args):
                out.append(finding("I101", node.lineno, f"builtin `{func.id}` applied to tensors inside forward"))
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult) or analysis.expr_tainted(node.left, entry.tainted) \
                    or analysis.expr_tainted(node.right, entry.tainted):
                out.append(finding("I101", node.lineno, f"tensor arithmetic `{ast.unparse(node)[:60]}` inside forward"))
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.op, ast.MatMult) or analysis.expr_tainted(node.value, entry.tainted) \
                    or analysis.expr_tainted(node.target, entry.tainted):
                out.append(finding("I101", node.lineno, f"tensor arithmetic `{ast.unparse(node)[:60]}` inside forward"))
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            if analysis.expr_tainted(node.operand, entry.tainted):
                out.append(finding("I101", node.lineno, f"tensor arithmetic `{ast.unparse(node)[:60]}` inside forward"))
        elif isinstance(node, ast.Compare):
            operands = [node.left] + list(node.comparators)
            if any(not isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops) \
                    and any(analysis.expr_tainted(o, entry.tainted) for o in operands):
                out.append(finding("I101", node.lineno, f"tensor comparison `{ast.unparse(node)[:60]}` inside forward"))
    yield from _unique(out)


def _torch_compute(name: str | None) -> str | None:
    if not name or not (name == "torch" or name.startswith("torch.")):
        return None
    if _starts(name, TORCH_NON_COMPUTE_PREFIXES) or name.startswith("torch.ops.") and not _starts(
            name, ("torch.ops.aten", "torch.ops.prims", "torch.ops.quantized", "torch.ops.higher_order")):
        return None
    parts = name.split(".")
    if name == "torch" or len(parts) < 2:
        return None
    if len(parts) == 2 and parts[1] in TORCH_ALLOWED:
        return None
    if parts[1] == "nn" and len(parts) >= 3 and parts[2] != "functional":
        return None        # layers are I103's business
    if parts[1] == "Tensor" and len(parts) == 3 and (parts[2] in SCALAR_METHODS or parts[2] in SCALAR_ATTRS
                                                     or parts[2] in {"view", "reshape", "contiguous", "permute"}):
        return None
    if len(parts) == 2 and parts[1][:1].isupper() and parts[1] != "Tensor":
        return None        # classes: torch.Generator, torch.Size ...
    return f"`{name}` computes in PyTorch inside forward"


def _foreign_call(name: str | None, analysis: Analysis, node: ast.AST, entry: Function) -> str | None:
    """numpy/math/operator/functools applied to tensors inside forward."""
    if not name or not _module_matches(name.split(".")[0], FOREIGN_MATH_MODULES):
        return None
    parent = analysis.parents.get(node)
    if not (isinstance(parent, ast.Call) and parent.func is node):
        return None
    args = list(parent.args) + [k.value for k in parent.keywords]
    if any(analysis.expr_tainted(a, entry.tainted) for a in args) or name.split(".")[-1] in COMPUTE_METHODS \
            and name.split(".")[0] in ("numpy", "scipy"):
        return f"`{name}` applied to tensors inside forward"
    return None


@rule("I102")
def library_math_in_sources(source: CandidateSource):
    """The kernel must be the candidate's own: ATen ops and vendor math libraries in its sources compute for it."""
    out = list(_scan(source, "I102", CPP_COMPUTE_NAMESPACE, "ATen/torch compute namespace"))
    for src, clean in _cleaned(source):
        for match in CPP_USING_ATEN.finditer(clean.code):
            if match.group(1) is None or match.group(1) not in CPP_ALLOWED_ATEN:
                out.append(finding("I102", python_line_of(source.tree, src, match.start()),
                                   f"`{' '.join(match.group(0).split())}` hides which ATen ops are called"))
        for match in CPP_ATEN_DEVICE_CALL.finditer(clean.code):
            if match.group(1) not in CPP_ATEN_DEVICE_ALLOWED:
                out.append(finding("I102", python_line_of(source.tree, src, match.start()),
                                   f"ATen op `{' '.join(match.group(0).split())}` computes in the library"))
        for match in CPP_ATEN_CALL.finditer(clean.code):
            if match.group(1) not in CPP_ALLOWED_ATEN and not re.match(r"k[A-Z]", match.group(1)):
                out.append(finding("I102", python_line_of(source.tree, src, match.start()),
                                   f"ATen op `{' '.join(match.group(0).split())}` computes in the library"))
        for offset, params, body in _host_bodies(clean.code):
            names = {m.group(1) for m in CPP_TENSOR_DECL.finditer(params)}
            names |= {m.group(1) for m in CPP_TENSOR_DECL.finditer(body)}
            names |= {m.group(1) for m in CPP_AUTO_TENSOR.finditer(body)}
            names -= {"const", "options", "self"}
            if not names:
                continue
            alternatives = "|".join(sorted(map(re.escape, names)))
            operator = re.compile(
                rf"(?<![\w.>:&*])\b({alternatives})\b\s*(?:[-+*/%]=?|&)(?![-+>=*/&])\s*(?=[\w(.\-])|"
                rf"[\w)\]]\s*[-+*/%]=?\s*\b({alternatives})\b(?!\s*(?:\.|->|\[|\())|"
                rf"(?:^|[=(,;?:]|return)\s*-\s*\b({alternatives})\b(?!\s*(?:\.|->|\[|\())",
                re.MULTILINE)
            for match in operator.finditer(body):
                context = body[max(0, match.start() - 40):match.start()]
                if re.search(r"(float|double|int|auto|scalar_t|half|T|void|char|const|long|unsigned|size_t|"
                             r"\w+_t)\s*$", context + match.group(0).split("*")[0]) and "*" in match.group(0):
                    continue
                out.append(finding("I102", python_line_of(source.tree, src, offset + match.start()),
                                   f"tensor arithmetic in C++ host code: `{' '.join(match.group(0).split())}`"))
    out += _scan(source, "I102", CPP_TENSOR_METHOD, "tensor method computes in ATen")
    out += _scan(source, "I102", CPP_LIBRARIES, "vendor math library")
    out += _scan(source, "I102", re.compile(r"#\s*include\s*[<\"]\s*((?:cublas|cudnn|cusparse|cufft|cusolver|cutensor|"
                                            r"mkl|cblas|Eigen|ATen/native|ATen/ops|ATen/cuda/CUDABlas|torch/nn|"
                                            r"ATen/Functions|ATen/NativeFunctions|ATen/cpu/vec)[\w./]*)"),
                 "vendor math library header", view="no_comments", group=1)
    for call, text in _keyword_strings(source, {"extra_ldflags", "extra_cflags", "extra_cuda_cflags"}):
        match = LIBRARY_LDFLAGS.search(text)
        if match and match.group(1) not in {"cuda"}:
            out.append(finding("I102", call.lineno, f"links a math library: `{text}`"))
    yield from _unique(out)


@rule("I103")
def falls_back_to_reference(source: CandidateSource):
    """No fallbacks: no try/except around the kernel, no reuse of the reference Model, no nn layers or other backends."""
    analysis = analysis_of(source)
    out = []
    reachable_nodes = {id(node) for _, node in analysis.in_reachable()}
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))) and node.handlers:
            inside = id(node) in reachable_nodes
            guards_build = any(isinstance(c, ast.Call) and (analysis.is_ext_build(c) or analysis.is_ext_expr(c.func))
                               for stmt in node.body for c in ast.walk(stmt))
            if inside or guards_build:
                out.append(finding("I103", node.lineno, "try/except around the kernel: a failure must fail, not fall back"))
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                base_name = _dotted(base) or ""
                qual = analysis.qualname(base) or ""
                if base_name.split(".")[-1] == "Model" or (source.reference_module and source.reference_module in qual):
                    out.append(finding("I103", node.lineno, f"class {node.name} subclasses the reference `{base_name}`"))
            if node.name == "ModelNew":
                for stmt in node.body:
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(
                            isinstance(t, ast.Name) and t.id in ("forward", "__call__")
                            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])):
                        out.append(finding("I103", stmt.lineno, "ModelNew.forward is assigned, not defined"))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                name = analysis.qualname(item.context_expr.func if isinstance(item.context_expr, ast.Call)
                                         else item.context_expr) or ""
                if name.endswith("suppress") and name.startswith("contextlib"):
                    out.append(finding("I103", node.lineno, "contextlib.suppress swallows kernel failures"))
    for module, bound, line in analysis.imports:
        parts = module.lstrip(".").split(".")
        if (source.reference_module and source.reference_module in parts) or parts[0] in ("problems", "reference") \
                or module.startswith(".") or parts[0] == "harness":
            out.append(finding("I103", line, f"imports `{module}`: the reference and the harness are off limits"))
        if _module_matches(module, FOREIGN_BACKENDS):
            out.append(finding("I103", line, f"imports `{module}`: kernels must come from load_inline sources"))
        if _starts(module, ("torch.compile", "torch._dynamo", "torch._inductor", "torch.jit", "torch.fx",
                            "torch.export", "torch.func", "torch.vmap", "torch.hub")):
            out.append(finding("I103", line, f"imports `{module}`: another compiler or model source"))
    for node, name in analysis.outermost_chains(source.tree):
        parts = name.split(".")
        if len(parts) >= 3 and parts[:2] == ["torch", "nn"] and parts[2][:1].isupper() and parts[2] not in NN_ALLOWED:
            out.append(finding("I103", node.lineno, f"`{name}` is a PyTorch layer that computes for the candidate"))
        elif len(parts) >= 4 and parts[:3] == ["torch", "nn", "modules"] and parts[-1][:1].isupper():
            out.append(finding("I103", node.lineno, f"`{name}` is a PyTorch layer that computes for the candidate"))
        elif _starts(name, ("torch.compile", "torch.jit.script", "torch.jit.trace", "torch.jit.load", "torch._dynamo",
                            "torch._inductor", "torch.export", "torch.fx", "torch.func", "torch.vmap", "torch.hub",
                            "torch.cuda.jiterator", "torch.utils.cpp_extension.load_inline_jit")):
            out.append(finding("I103", node.lineno, f"`{name}` compiles or fetches code other than the candidate's own"))
        elif source.reference_module and name.split(".")[0] == source.reference_module:
            out.append(finding("I103", node.lineno, f"uses the reference module `{name}`"))
    yield from _unique(out)


@rule("I104")
def tampers_with_runtime(source: CandidateSource):
    """The candidate must not patch torch, the timer, the harness or the interpreter it shares with them."""
    analysis = analysis_of(source)
    out = []
    imported = {bound for _, bound, _ in analysis.imports}
    for node in ast.walk(source.tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute):
                    root = part
                    while isinstance(root, (ast.Attribute, ast.Subscript)):
                        root = root.value
                    qual = analysis.qualname(part) or ""
                    if qual.startswith("os.environ") or (isinstance(root, ast.Name) and root.id == "self"):
                        continue
                    if isinstance(root, ast.Name) and (root.id in imported or (
                            root.id in analysis.classes and analysis._enclosing_class(node) is None)
                            or root.id in ("__builtins__",)):
                        if any(flag in part.attr for flag in PY_PRECISION_FLAGS):
                            break          # I108 reports precision switches
                        out.append(finding("I104", node.lineno, f"assigns `{ast.unparse(part)}`: patches shared state"))
                    elif part.attr in ("__class__", "__dict__", "__code__", "forward", "__call__", "__eq__"):
                        out.append(finding("I104", node.lineno, f"assigns `{ast.unparse(part)}`"))
                    break
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args:
            target = node.args[0]
            root_name = _dotted(target) or ""
            if analysis.qualname(target) or root_name.split(".")[0] in analysis.classes or (
                    isinstance(target, ast.Call) and _call_tail(target) == "type"):
                out.append(finding("I104", node.lineno, f"`{node.func.id}` on `{ast.unparse(target)}` patches shared state"))
        if isinstance(node, ast.Attribute) and node.attr in TAMPER_ATTRS and node.attr != "__class__":
            out.append(finding("I104", node.lineno, f"`.{node.attr}` reaches into interpreter internals"))
        if isinstance(node, ast.Attribute) and node.attr == "__class__" and isinstance(
                analysis.parents.get(node), ast.Attribute) and analysis.parents[node].attr not in ("__name__", "__qualname__"):
            out.append(finding("I104", node.lineno, "`.__class__` walked into: reaches into interpreter internals"))
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__", "__spec__"):
            out.append(finding("I104", node.lineno, f"`{node.id}` reaches into interpreter internals"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TAMPER_METHODS:
            out.append(finding("I104", node.lineno, f"`.{node.func.attr}` hooks into module calls"))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("__del__", "__init_subclass__",
                                                                                          "__set_name__"):
            out.append(finding("I104", node.lineno, f"`{node.name}` runs code at times the harness does not control"))
    for module, bound, line in analysis.imports:
        if _module_matches(module, PY_TAMPER_MODULES) or _starts(module, PY_TAMPER_QUALNAMES) or module in (
                "sys.modules", "sys._getframe"):
            out.append(finding("I104", line, f"imports `{module}`"))
    for node, name in analysis.outermost_chains(source.tree):
        if _starts(name, PY_TAMPER_QUALNAMES) or _module_matches(name, PY_TAMPER_MODULES):
            out.append(finding("I104", node.lineno, f"`{name}` touches interpreter or torch internals"))
    out += _scan(source, "I104", CPP_TORCH_LIBRARY_ATEN, "re-registers a built-in operator")
    yield from _unique(out)


def _enclosing_class(self: Analysis, node: ast.AST) -> ast.ClassDef | None:
    while node is not None:
        node = self.parents.get(node)
        if isinstance(node, ast.ClassDef):
            return node
    return None


Analysis._enclosing_class = _enclosing_class


@rule("I105")
def runs_concurrently(source: CandidateSource):
    """No threads, processes or async work: the timer must see all the work the candidate does."""
    analysis = analysis_of(source)
    out = []
    for module, bound, line in analysis.imports:
        if _module_matches(module, PY_CONCURRENCY):
            out.append(finding("I105", line, f"imports `{module}`"))
    for node, name in analysis.outermost_chains(source.tree):
        if _starts(name, PY_CONCURRENCY_CALLS) or _module_matches(name, PY_CONCURRENCY):
            out.append(finding("I105", node.lineno, f"`{name}` runs work outside the timed call"))
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
            out.append(finding("I105", node.lineno, "async code runs work outside the timed call"))
    out += _scan(source, "I105", CPP_CONCURRENCY, "host threads or processes")
    out += _scan(source, "I105", CPP_CONCURRENCY_INCLUDES, "host threading header", view="no_comments")
    yield from _unique(out)


@rule("I106")
def uses_side_streams(source: CandidateSource):
    """Work must run on the current stream, so the harness's events time all of it; no graphs or callbacks."""
    analysis = analysis_of(source)
    out = []
    for node, name in analysis.outermost_chains(source.tree):
        if _starts(name, PY_STREAMS):
            out.append(finding("I106", node.lineno, f"`{name}` moves work off the timed stream"))
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PY_STREAM_METHODS:
            out.append(finding("I106", node.lineno, f"`.{node.func.attr}(...)` synchronises with another stream"))
    out += _scan(source, "I106", CPP_STREAMS, "stream, event, graph or device-state API")
    yield from _unique(out)


@rule("I107")
def obfuscates_code(source: CandidateSource):
    """Everything that runs must be readable by these rules: no exec, decoding, dynamic lookup or hidden includes."""
    analysis = analysis_of(source)
    out = []
    for module, bound, line in analysis.imports:
        if _module_matches(module, PY_OBFUSCATION_MODULES):
            out.append(finding("I107", line, f"imports `{module}`"))
        if bound == "*":
            out.append(finding("I107", line, f"`from {module} import *` hides which names are used"))
    defined = set(analysis.functions) | set(analysis.classes) | analysis.module_names
    for node in ast.walk(source.tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in PY_OBFUSCATION_BUILTINS and func.id not in defined:
            out.append(finding("I107", node.lineno, f"`{func.id}()` runs or looks up code dynamically"))
        if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "delattr", "hasattr") and func.id not in defined:
            name_arg = node.args[1] if len(node.args) > 1 else None
            if name_arg is None or not (isinstance(name_arg, ast.Constant) and isinstance(name_arg.value, str)):
                out.append(finding("I107", node.lineno, f"`{func.id}` with a computed attribute name"))
            elif node.args and analysis.qualname(node.args[0]) and func.id != "hasattr":
                out.append(finding("I107", node.lineno, f"`{func.id}` on module `{ast.unparse(node.args[0])}`: "
                                                        "use the attribute directly"))
        if isinstance(func, ast.Name) and func.id == "type" and len(node.args) == 3 and "type" not in defined:
            out.append(finding("I107", node.lineno, "`type(name, bases, dict)` builds a class dynamically"))
        if isinstance(func, ast.Attribute) and func.attr in ("fromhex", "frombytes", "decode", "translate") and (
                isinstance(func.value, ast.Constant) or _dotted(func.value) in ("bytes", "bytearray", "str")):
            out.append(finding("I107", node.lineno, f"`.{func.attr}` decodes hidden text"))
    for node, name in analysis.outermost_chains(source.tree):
        if _module_matches(name, PY_OBFUSCATION_MODULES) or name in ("sys.modules",):
            out.append(finding("I107", node.lineno, f"`{name}` loads or decodes code dynamically"))
    names = _assignments(source.tree)
    for call in source.load_inline_calls:
        for kind, expression in source_arguments(call):
            for part in unresolved_parts(expression, names):
                out.append(finding("I107", getattr(part, "lineno", call.lineno),
                                   f"{kind} source part `{ast.unparse(part)[:60]}` cannot be read statically"))
        if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            out.append(finding("I107", call.lineno, "load_inline arguments passed through * or ** cannot be read"))
        for keyword in call.keywords:
            if keyword.arg == "extra_include_paths" and not (
                    isinstance(keyword.value, (ast.List, ast.Tuple)) and not keyword.value.elts):
                out.append(finding("I107", call.lineno, "extra_include_paths pulls in code outside the candidate"))
    for call, text in _keyword_strings(source, {"extra_ldflags", "extra_cflags", "extra_cuda_cflags"}):
        if FOREIGN_LDFLAGS.search(text) and not LIBRARY_LDFLAGS.search(text):
            out.append(finding("I107", call.lineno, f"build flag `{text}` pulls in code outside the candidate"))
    out += _scan(source, "I107", CPP_OBFUSCATION, "loads or runs code dynamically")
    out += _scan(source, "I107", CPP_TOKEN_PASTING, "preprocessor token pasting hides identifiers")
    for src, clean in _cleaned(source):
        for match in CPP_DEFINE.finditer(clean.code):
            params = [p.strip() for p in match.group(1).split(",") if p.strip()]
            body = match.group(2)
            if any(re.search(rf"(?<!#)#\s*{re.escape(p)}\b", body) for p in params if p != "..."):
                out.append(finding("I107", python_line_of(source.tree, src, match.start()),
                                   "preprocessor stringizing hides identifiers"))
        for match in CPP_INCLUDE.finditer(clean.no_comments):
            target = match.group(1).strip()
            local = target.startswith('"') or not target.startswith("<") or "/" == target[1:2] or ".." in target \
                or target.startswith("<~") or ":" in target
            if local:
                out.append(finding("I107", python_line_of(source.tree, src, match.start()),
                                   f"`#include {target}` is not a system, CUDA or torch header"))
    yield from _unique(out)


@rule("I108")
def downgrades_precision(source: CandidateSource):
    """The problems are float32: half, bfloat16, TF32 or fp8 arithmetic trades accuracy the reference does not."""
    analysis = analysis_of(source)
    out = []
    for node, name in analysis.outermost_chains(source.tree):
        if _starts(name, PY_PRECISION_QUALNAMES) or name.startswith("torch.float8") or name.split(".")[-1] in PY_PRECISION_FLAGS:
            out.append(finding("I108", node.lineno, f"`{name}` lowers float32 precision"))
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PY_PRECISION_METHODS \
                and not node.args and not analysis.qualname(node.func):
            out.append(finding("I108", node.lineno, f"`.{node.func.attr}()` lowers float32 precision"))
        if isinstance(node, ast.Attribute) and node.attr in PY_PRECISION_FLAGS:
            out.append(finding("I108", node.lineno, f"`{ast.unparse(node)}` lowers float32 matmul precision"))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in (
                "float16", "half", "bfloat16", "tf32", "medium", "fp16", "bf16") and isinstance(
                analysis.parents.get(node), ast.Call) and _call_tail(analysis.parents[node]) in (
                "to", "set_float32_matmul_precision", "type", "getattr"):
            out.append(finding("I108", node.lineno, f"`{node.value}` lowers float32 precision"))
    for src, clean in _cleaned(source):
        # `int half = n / 2;` is a common reduction idiom: then the bare word is a variable, not the type
        half_is_variable = re.search(r"\b(?:int|unsigned|long|size_t|auto|int64_t|int32_t|const)\s+half\b", clean.code)
        for match in CPP_PRECISION.finditer(clean.code):
            if match.group(0) == "half" and half_is_variable:
                continue
            out.append(finding("I108", python_line_of(source.tree, src, match.start()),
                               f"reduced-precision type or intrinsic: `{match.group(0)}`"))
    out += _scan(source, "I108", CPP_PRECISION_INCLUDES, "reduced-precision header", view="no_comments", group=1)
    for line, ptx in _inline_ptx(source):
        lowered = ASM_PRECISION.search(ASM_SPLIT_MMA.sub("", ptx))   # fp32-accumulating MMAs are I118's
        if lowered:
            out.append(finding("I108", line, f"inline PTX uses a reduced-precision type: `{lowered.group(0)}`"))
    yield from _unique(out)


def _inline_ptx(source: CandidateSource) -> Iterator[tuple[int, str]]:
    """(Python line, text) of every string literal in the sources that is an `asm(...)` statement's PTX."""
    for src, clean in _cleaned(source):
        for offset, literal in clean.literals:
            statement = re.split(r"[;{}]", clean.code[max(0, offset - 300):offset])[-1]
            if re.search(r"\b(asm|__asm__|__asm)\b", statement):
                yield python_line_of(source.tree, src, offset), literal


@rule("I109")
def touches_files_network_or_env(source: CandidateSource):
    """No files, processes, network or environment writes: a candidate is a pure function of its inputs."""
    analysis = analysis_of(source)
    out = []
    for module, bound, line in analysis.imports:
        if _module_matches(module, PY_IO_MODULES):
            out.append(finding("I109", line, f"imports `{module}`"))
    defined = set(analysis.functions) | set(analysis.classes) | analysis.module_names
    for node, name in analysis.outermost_chains(source.tree):
        if _starts(name, PY_IO_CALLS) or any(name.startswith(p) for p in ("os.exec", "os.spawn", "os.posix_spawn")):
            out.append(finding("I109", node.lineno, f"`{name}` reaches files, processes or the environment"))
        elif _module_matches(name, PY_IO_MODULES):
            out.append(finding("I109", node.lineno, f"`{name}` reaches files, processes or the network"))
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in PY_IO_BUILTINS \
                and node.func.id not in defined:
            out.append(finding("I109", node.lineno, f"`{node.func.id}()` reaches files or the console"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ENV_MUTATORS \
                and (analysis.qualname(node.func.value) or "") == "os.environ":
            out.append(finding("I109", node.lineno, f"`os.environ.{node.func.attr}` changes the environment"))
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if isinstance(target, ast.Subscript) and (analysis.qualname(target.value) or "") == "os.environ":
                out.append(finding("I109", node.lineno, "writes `os.environ`: changes the environment"))
            elif isinstance(target, ast.Attribute) and (analysis.qualname(target) or "") == "os.environ":
                out.append(finding("I109", node.lineno, "replaces `os.environ`"))
    for call in source.load_inline_calls:
        for keyword in call.keywords:
            if keyword.arg == "build_directory":
                out.append(finding("I109", call.lineno, "build_directory: the harness owns where extensions are built"))
    out += _scan(source, "I109", CPP_IO, "file, process, network or environment access")
    out += _scan(source, "I109", CPP_IO_OPEN, "file access")
    out += _scan(source, "I109", CPP_IO_INCLUDES, "file or OS header", view="no_comments", group=1)
    yield from _unique(out)


@rule("I110")
def returns_lazy_output(source: CandidateSource):
    """forward must return a plain tensor holding the answer, not an object that fakes one when compared."""
    analysis = analysis_of(source)
    out = []
    for node in ast.walk(source.tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                qual = analysis.qualname(base) or _dotted(base) or ""
                if qual.split(".")[-1] in ("Tensor", "TorchDispatchMode", "TorchFunctionMode") or qual in (
                        "torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"):
                    out.append(finding("I110", node.lineno, f"class {node.name} subclasses `{qual}`"))
            for stmt in node.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in IMPERSONATING_DUNDERS:
                    out.append(finding("I110", stmt.lineno, f"{node.name}.{stmt.name} lets an object pose as a tensor"))
        if isinstance(node, ast.Attribute) and node.attr in LAZY_NAMES:
            out.append(finding("I110", node.lineno, f"`{node.attr}` builds a tensor subclass or dispatch hook"))
        if isinstance(node, ast.Name) and node.id in LAZY_NAMES:
            out.append(finding("I110", node.lineno, f"`{node.id}` builds a tensor subclass or dispatch hook"))
    for module, bound, line in analysis.imports:
        if _starts(module, LAZY_QUALNAMES):
            out.append(finding("I110", line, f"imports `{module}`"))
    for node, name in analysis.outermost_chains(source.tree):
        if _starts(name, LAZY_QUALNAMES):
            out.append(finding("I110", node.lineno, f"`{name}` builds a tensor subclass or dispatch hook"))
    yield from _unique(out)


@rule("I111")
def keeps_state_across_calls(source: CandidateSource):
    """Each call must compute from its inputs: no results cached in self, globals, memoisation or static tensors."""
    analysis = analysis_of(source)
    out = []
    for entry in analysis.reachable.values():
        func = entry.node
        params = _param_names(func)
        constructing = getattr(func, "name", "") in ("__init__", "__new__", "__post_init__")
        self_name = params[0] if entry.owner is not None and params and not constructing else None
        local_names = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        persistent_roots = {self_name} if self_name else set()
        persistent_roots |= (analysis.module_names | set(analysis.classes) | set(analysis.functions)) \
            - local_names - set(params)
        declared_global: set[str] = set()
        for node in ast.walk(func):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                declared_global.update(node.names)
                lazy = all(analysis.is_ext_build(a.value) for a in ast.walk(func) if isinstance(a, ast.Assign)
                           for t in a.targets if isinstance(t, ast.Name) and t.id in node.names)
                if not lazy:
                    out.append(finding("I111", node.lineno, f"`{type(node).__name__.lower()} "
                                                            f"{', '.join(node.names)}` keeps state between calls"))
        persistent_roots |= declared_global
        for node in ast.walk(func):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            value = getattr(node, "value", None)
            for target in targets:
                if isinstance(target, ast.Name) or (isinstance(target, (ast.Tuple, ast.List))):
                    continue
                root = target
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                class_of_self = isinstance(root, ast.Call) and _call_tail(root) in ("type", "super")
                if (class_of_self or isinstance(root, ast.Name) and root.id in persistent_roots) and not (
                        isinstance(node, ast.Assign) and analysis.is_ext_build(value)):
                    out.append(finding("I111", node.lineno, f"`{ast.unparse(target)[:60]}` written in forward "
                                                            "keeps state between calls"))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                root = node.func.value
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in persistent_roots - analysis.ext_handles \
                        or node.func.attr in ("__setattr__", "__setitem__", "__delitem__", "__delattr__"):
                    out.append(finding("I111", node.lineno, f"`{ast.unparse(node.func)}` mutates state kept "
                                                            "between calls"))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in persistent_roots:
                out.append(finding("I111", node.lineno, "setattr in forward keeps state between calls"))
        for default in func.args.defaults + [d for d in func.args.kw_defaults if d is not None]:
            if isinstance(default, (ast.Dict, ast.List, ast.Set, ast.Call)):
                out.append(finding("I111", default.lineno, "mutable default argument keeps state between calls"))
    for node in ast.walk(source.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = (_dotted(target) or "").split(".")[-1]
                real_params = [p for p in _param_names(node) if p not in ("self", "cls")]
                if name in CACHE_DECORATORS and real_params:
                    out.append(finding("I111", node.lineno, f"@{name} on `{node.name}` memoises results between calls"))
    out += _scan(source, "I111", CPP_STATIC_TENSOR, "static tensor keeps results between calls")
    for src, clean in _cleaned(source):
        for match in CPP_GLOBAL_TENSOR.finditer(clean.code):
            if _brace_depth(clean.code, match.start()) == 0:
                out.append(finding("I111", python_line_of(source.tree, src, match.start()),
                                   f"global tensor keeps results between calls: `{' '.join(match.group(0).split())}`"))
    yield from _unique(out)


# ----- warnings -------------------------------------------------------------------------------

@rule("I112", WARNING)
def uses_template_libraries(source: CandidateSource):
    """CUTLASS/CuTe, Thrust, CUB and std algorithms may do the heavy lifting: a person should check what is the candidate's own."""
    yield from _unique(_scan(source, "I112", CPP_TEMPLATE_LIBRARIES, "library algorithm or template"))


@rule("I113", WARNING)
def uses_fast_math(source: CandidateSource):
    """Fast-math flags relax IEEE float32 (flushing, approximate division): accuracy may pass by luck at one seed."""
    out = [finding("I113", call.lineno, f"build flag `{text}` relaxes float32 semantics")
           for call, text in _keyword_strings(source, {"extra_cflags", "extra_cuda_cflags"}) if PRECISION_FLAGS.search(text)]
    yield from _unique(out)


@rule("I114", WARNING)
def synchronises_device(source: CandidateSource):
    """A device-wide synchronize inside the call is slow and can mask work on other streams; the harness syncs itself."""
    yield from _unique(_scan(source, "I114", CPP_DEVICE_SYNC, "device-wide synchronisation"))


@rule("I115", WARNING)
def keeps_device_or_static_state(source: CandidateSource):
    """Static pointers and __device__ globals persist between calls: legitimate for workspaces, a cache otherwise."""
    out = []
    for src, clean in _cleaned(source):
        for match in CPP_STATIC_STATE.finditer(clean.code):
            if CPP_STATIC_TENSOR.match(clean.code, match.start()) or "(" in match.group(0):
                continue
            out.append(finding("I115", python_line_of(source.tree, src, match.start()),
                               f"static variable persists between calls: `{' '.join(match.group(0).split())}`"))
        for match in CPP_DEVICE_GLOBAL.finditer(clean.code):
            out.append(finding("I115", python_line_of(source.tree, src, match.start()),
                               f"__device__ global persists between calls: `{' '.join(match.group(0).split())}`"))
    yield from _unique(out)


@rule("I116", WARNING)
def uses_host_parallelism(source: CandidateSource):
    """OpenMP / at::parallel_for spread a CPU kernel over cores: allowed, but timings then depend on the machine's threads."""
    out = list(_scan(source, "I116", CPP_PARALLEL_WARN, "host parallelism", view="no_comments"))
    out += [finding("I116", call.lineno, f"build flag `{text}` enables OpenMP")
            for call, text in _keyword_strings(source, {"extra_cflags", "extra_ldflags"}) if "openmp" in text]
    yield from _unique(out)


@rule("I117")
def hides_work_in_generators(source: CandidateSource):
    """A generator method or a driven generator resumes code outside forward's checks and keeps state in its frame."""
    for cls in (n for n in ast.walk(source.tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                yield finding("I117", node.lineno, f"`yield` in class {cls.name}: a generator method's body "
                                                   "escapes the forward checks")
    for node in ast.walk(source.tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("send", "asend", "athrow")):
            yield finding("I117", node.lineno, f"`.{node.func.attr}(...)` drives a generator or coroutine between calls")
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await)):
            yield finding("I117", node.lineno, "coroutine in a candidate: its body escapes the forward checks")


@rule("I118", WARNING)
def uses_reduced_precision_tensor_cores(source: CandidateSource):
    """TF32, or bf16/f16 into an fp32 accumulator, on tensor cores: split precision (3xTF32, two-piece bf16)
    can meet an fp32 tolerance, one such product does not; verification against the float64 gold decides."""
    out = list(_scan(source, "I118", CPP_TF32, "TF32 tensor-core math"))
    for line, ptx in _inline_ptx(source):
        if ASM_TF32.search(ptx):
            out.append(finding("I118", line, "inline PTX uses TF32 tensor cores (`.tf32`)"))
        split = ASM_SPLIT_MMA.search(ptx)
        if split:
            out.append(finding("I118", line, f"inline PTX multiplies `.{split.group(1)}` operands on tensor cores "
                                             "into an fp32 accumulator"))
    yield from _unique(out)
