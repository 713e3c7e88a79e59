"""Vocabularies of the integrity rules: the names and patterns they look for, as data.

Python names are matched against the AST (qualified through import aliases); the C++/CUDA regexes
run on source texts with comments and string literals blanked, the flag regexes on build flags.
"""
import re

# ----- Python vocabularies ----------------------------------------------------------------------

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
# A C library call is to a free function, unqualified or global (`clone(`, `::clone(`); a member call
# (`x.clone()`, `t->clone()`) or a name in a namespace or class (`at::clone(`) is another function of that name.
CPP_FREE_CALL = r"(?<![\w.>:])(?:::\s*)?"
CPP_CONCURRENCY = re.compile(r"\b(?:std\s*::\s*(?:thread|jthread|async|launch|future|promise|packaged_task)|"
                             r"pthread_\w+|boost\s*::\s*thread|tbb\s*::\s*\w+|(?:SYS|__NR)_(?:v?fork|clone3?)\b)|"
                             + CPP_FREE_CALL + r"(?:v?fork|clone3?)\s*\(")
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
CPP_IO_OPEN = re.compile(CPP_FREE_CALL + r"open\s*\(")
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

# ----- built-library symbols (I119) -------------------------------------------------------------
# What a kernel extension may call, by the undefined dynamic symbols of the library the build made.
# Measured on the honest builds (tests/adversarial/honest, tests/fixtures/cpu_scalar.py, shipped
# candidates): C names by exact name or pattern, C++ names by the namespace path of their mangling.

# C runtime an extension needs: memory, strings, formatted output to the streams it already has,
# errors, exceptions and unwinding, thread-local storage, locks (not thread creation), static init.
SYMBOLS_LIBC = {
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign",
    "memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "strlen", "strnlen", "strcmp", "strncmp",
    "strchr", "strrchr", "strstr", "strdup", "strndup", "strcpy", "strncpy", "strcat", "strncat", "stpcpy",
    "strtol", "strtoul", "strtoll", "strtoull", "strtod", "strtof", "atoi", "atol", "atof", "strerror",
    "printf", "fprintf", "vprintf", "vfprintf", "sprintf", "snprintf", "vsprintf", "vsnprintf", "puts",
    "putchar", "fputc", "fputs", "putc", "fwrite", "fflush", "stdout", "stderr", "perror",
    "abort", "__assert_fail", "__stack_chk_fail", "__errno_location", "__tls_get_addr",
    "__libc_single_threaded", "__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable",
    "__cxa_finalize", "__gxx_personality_v0", "__dynamic_cast", "__once_proxy", "atexit",
    # defined by the linker and crt files: undefined in the candidate's object files, resolved in the library
    "_GLOBAL_OFFSET_TABLE_", "_DYNAMIC", "__dso_handle", "__TMC_END__", "_PROCEDURE_LINKAGE_TABLE_",
    "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock", "pthread_mutex_init",
    "pthread_mutex_destroy", "pthread_once", "pthread_key_create", "pthread_key_delete", "pthread_getspecific",
    "pthread_setspecific", "__pthread_key_create", "pthread_self", "pthread_cond_wait", "pthread_cond_signal",
    "pthread_cond_broadcast", "pthread_cond_destroy", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
    "pthread_rwlock_unlock", "sched_yield", "qsort", "bsearch",
}
SYMBOLS_PATTERNS = re.compile(
    r"^(?:__cxa_\w+|_Unwind_\w+|__isoc\d+_\w+|__(?:mem(?:cpy|move|set)|st[rp]n?c(?:py|at)|v?s?n?printf|v?fprintf)_chk|"
    # libm, with float/long double forms and the old glibc _finite entry points
    r"(?:__)?(?:sqrt|cbrt|hypot|exp|exp2|exp10|expm1|log|log2|log10|log1p|logb|ilogb|pow|fabs|fmod|fmin|fmax|fma|"
    r"fdim|ceil|floor|round|lround|llround|trunc|rint|lrint|llrint|nearbyint|sin|cos|tan|sincos|asin|acos|atan|"
    r"atan2|sinh|cosh|tanh|asinh|acosh|atanh|erf|erfc|tgamma|lgamma|ldexp|frexp|modf|copysign|nextafter|"
    r"remainder|remquo|scalbn|scalbln)[fl]?(?:_finite)?|"
    # OpenMP (I116: allowed, with a warning) but not changing the process's thread count
    r"omp_(?!set_num_threads|set_dynamic|set_max_active_levels)\w+|GOMP_\w+|"
    # the Python C API pybind11 and torch's bindings use (the code-running parts are denied below)
    r"_?Py\w+|_Py_\w+|THP\w+|"
    # CUDA runtime: registration and launch of the candidate's kernels, errors, attributes, memory, queries
    r"__cuda(?:RegisterFatBinary|RegisterFatBinaryEnd|UnregisterFatBinary|RegisterFunction|RegisterVar|"
    r"RegisterManagedVar|RegisterLinkedBinary\w*|InitModule|PushCallConfiguration|PopCallConfiguration|"
    r"LaunchKernel\w*|GetKernel)|"
    r"cuda(?:LaunchKernel|LaunchKernelExC|LaunchKernel_ptsz|LaunchCooperativeKernel|GetLastError|PeekAtLastError|"
    r"GetErrorString|GetErrorName|FuncSetAttribute|FuncGetAttributes|FuncSetCacheConfig|FuncGetName|"
    r"Memcpy|MemcpyAsync|Memcpy2D|Memcpy2DAsync|Memset|MemsetAsync|Memset2DAsync|MemcpyToSymbol|"
    r"MemcpyToSymbolAsync|MemcpyFromSymbol|MemcpyFromSymbolAsync|GetSymbolAddress|GetSymbolSize|Malloc|Free|"
    r"MallocAsync|FreeAsync|GetDevice|GetDeviceCount|DeviceGetAttribute|GetDeviceProperties\w*|"
    r"DeviceSynchronize|StreamSynchronize|StreamQuery|StreamIsCapturing|StreamGetCaptureInfo\w*|"
    r"DriverGetVersion|RuntimeGetVersion|PointerGetAttributes|Occupancy\w+)|"
    r"cu(?:TensorMapEncode\w+|GetErrorString|GetErrorName))$")
# C++ namespaces (the first components of a mangled name) of the runtimes an extension is built on.
SYMBOLS_NAMESPACES = {"std", "__gnu_cxx", "__cxxabiv1", "c10", "at", "torch", "caffe2", "pybind11",
                      "<builtin>", "<operator new/delete>"}
# ... less what in them changes streams, threads, dispatch or runs other code: allowed only where the
# runtime's own inline code refers to it (c10's CUDA guard implements stream and event methods that
# an honest kernel never calls), an error where the candidate's code reaches it.
SYMBOLS_NAMESPACE_EXCEPTIONS = (
    ("std", "thread"), ("std", "jthread"), ("std", "filesystem"), ("std", "experimental"),
    ("std", "basic_filebuf"), ("std", "basic_ifstream"), ("std", "basic_ofstream"), ("std", "basic_fstream"),
    ("std", "__basic_file"),
    ("c10", "cuda", "getStreamFromPool"), ("c10", "cuda", "getStreamFromExternal"),
    ("c10", "cuda", "setCurrentCUDAStream"), ("c10", "Dispatcher"), ("c10", "impl", "OperatorEntry"),
    ("at", "cuda", "CUDAGraph"), ("at", "cuda", "getStreamFromPool"), ("at", "cuda", "blas"),
    ("at", "native"), ("at", "set_num_threads"), ("at", "set_num_interop_threads"), ("torch", "jit"),
    ("torch", "cuda", "CUDAGraph"),
)
# Never an extension's business, whoever refers to it: processes, dynamic loading, threads, files,
# sockets, signals, the environment, other streams/graphs/devices, the driver API's launch and entry
# points, IPC, and the Python C API's code-running and interpreter-changing calls. (cudaEvent* and
# cudaStreamWaitEvent are not here: c10's CUDA guard refers to them; what is in neither list is an
# error only where the candidate's own code reaches it.)
SYMBOLS_DENIED = re.compile(
    r"^(?:fork|vfork|clone|clone3|_Fork|execv\w*|execl\w*|fexecve|system|popen|pclose|posix_spawn\w*|"
    r"dlopen|dlmopen|dlsym|dlvsym|dladdr\w*|dlclose|dlerror|dlinfo|pthread_create|pthread_detach|"
    r"pthread_kill|pthread_cancel|pthread_setaffinity_np|sched_setaffinity|"
    r"fopen\w*|freopen\w*|fdopen|open|open64|openat\w*|__open\w*|creat\w*|mkstemp\w*|tmpfile\w*|"
    r"read|__read_chk|pread\w*|write|pwrite\w*|unlink\w*|remove|rename\w*|mkdir\w*|rmdir|chdir|chmod|"
    r"opendir|readdir\w*|truncate|ftruncate|dup|dup2|dup3|pipe|pipe2|mmap|mmap64|munmap|mprotect|"
    r"memfd_create|shm_open|socket|socketpair|connect|bind|listen|accept\w*|send\w*|recv\w*|getaddrinfo|"
    r"gethostbyname\w*|ptrace|kill|killpg|raise|signal|sigaction|setitimer|alarm|exit|_exit|_Exit|quick_exit|"
    r"getenv|secure_getenv|setenv|putenv|unsetenv|clearenv|ioctl|syscall|prctl|setrlimit|"
    r"cudaStreamCreate\w*|cudaStreamDestroy|cudaStreamAddCallback|cudaStreamBeginCapture\w*|"
    r"cudaStreamEndCapture|cudaStreamSetAttribute|cudaStreamAttachMemAsync|cudaGraph\w*|cudaLaunchHostFunc|"
    r"cudaIpc\w*|cudaGetDriverEntryPoint\w*|cuGetProcAddress\w*|cuLaunch\w*|cuModule\w*|cuLibrary\w*|"
    r"cuStream\w*|cuGraph\w*|cuCtx\w*|cuEvent\w*|cudaSetDevice|cudaSetDeviceFlags|cudaDeviceReset|"
    r"cudaDeviceSetLimit|cudaDeviceSetCacheConfig|cudaDeviceSetSharedMemConfig|cudaCtxResetPersistingL2Cache|"
    r"cudaProfilerStart|cudaProfilerStop|cudaLaunchCooperativeKernelMultiDevice|cudaThreadExit|"
    r"omp_set_num_threads|omp_set_dynamic|omp_set_max_active_levels|"
    r"_?Py(?:Run_\w+|Import_\w+|_CompileString\w*|Eval_EvalCode\w*|Eval_EvalFrame\w*|Eval_SetTrace|"
    r"Eval_SetProfile\w*|_Initialize\w*|_Finalize\w*|_Exit|_Main|_BytesMain|_RunMain|_NewInterpreter\w*|"
    r"_EndInterpreter|Sys_\w+|OS_(?:setsig|AfterFork\w*|BeforeFork)|Marshal_\w+|Code_New\w*|Function_New\w*|"
    r"ThreadState_SetAsyncExc|Err_SetInterrupt\w*|_AtExit|File_FromFd))$")
