"""Sandbox: the untrusted side. Requests in (a pipe), replies out (a pipe), tensors through the arena.

It imports one candidate (or, for a baseline, the problem's reference) and calls it when the judge asks,
and does nothing else. It holds no secret seed, no gold model, no verifier, no results path and no
statistics: none of them exists in this process, so a candidate that walks the interpreter's frames or
patches functions finds nothing of value. Everything it replies is a claim the judge checks (judge.py).

The judge starts it as `python -I -c ...` (no user site, no PYTHONPATH, no current folder on the path),
as a user of its own where it can (confine.py), with the arena (a memfd) and two pipes as its only
open files beyond the standard ones.
"""
from __future__ import annotations

import importlib.util
import math
import mmap
import os
import signal
import sys
import time
import traceback
from typing import Callable

import torch

from harness import receipt, seal, timing
from harness.protocol import PROTOCOL_VERSION, Reply, Request
from harness.verify import poison_free_memory, storage_span, thread_count
from harness.worker import first_line, is_build_failure

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}


class CallFailed(Exception):
    """The candidate raised; the reply carries the status and its first line."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def import_file(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def seed_weights(args: dict) -> None:
    """Random weights (nn.Linear, ...) drawn alike in the reference, the judge's gold and the candidate, as
    KernelBench seeds each constructor: the judge sends the seed with `load`."""
    if "init_seed" in args:
        torch.manual_seed(int(args["init_seed"]))


def call_path_problem(model: object, cls: type) -> str:
    """Why calling `cls.forward(model, ...)` would not be the plain call a user makes, or ""."""
    if type(model) is not cls:
        return f"the constructed object is a {type(model).__qualname__}, not exactly ModelNew"
    if type(cls) is not type:
        return f"ModelNew has the metaclass {type(cls).__qualname__}"
    if not isinstance(model, torch.nn.Module):
        return "ModelNew is not an nn.Module"
    for name in ("__call__", "_call_impl", "_wrapped_call_impl", "__getattribute__"):
        if getattr(cls, name, None) is not getattr(torch.nn.Module, name, None) and name != "__getattribute__":
            return f"ModelNew overrides {name}: the call is rerouted"
    if cls.__getattribute__ is not object.__getattribute__ and cls.__getattribute__ is not torch.nn.Module.__getattribute__:
        return "ModelNew overrides __getattribute__"
    hooks = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    for module in model.modules():
        for name in hooks:
            if getattr(module, name, None):
                return f"a {name[1:]} hook is registered on {type(module).__qualname__}"
    registry = torch.nn.modules.module
    for name in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks", "_global_module_registration_hooks"):
        if getattr(registry, name, None):
            return f"a global module hook is registered ({name})"
    if not callable(getattr(cls, "forward", None)):
        return "ModelNew has no forward"
    return ""


class Sandbox:
    def __init__(self, arena_fd: int, device: torch.device):
        self.arena_fd = arena_fd
        self.arena: mmap.mmap | None = None
        self.said_hello = False
        self.bytes = torch.empty(0, dtype=torch.uint8)
        self.arena_pinned = ""
        self.device = device
        self.call: Callable | None = None     # what "the candidate" means for call, time and burst
        self.trivial_out: tuple = ()
        self.layout: dict = {}
        self.slots: list[list[torch.Tensor]] = []
        self.staging = torch.empty(0, dtype=torch.uint8)   # every input slot's memory (op_layout)
        self.kept: list = []
        self.spin = timing.SpinState()
        self.graph = None
        self.current_slot = 0
        self.constants: list[tuple[int, object]] = []   # forward's non-tensor arguments (KernelBench files)

    # --- plumbing --------------------------------------------------------------------------------------
    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def view(self, offset: int, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
        count = 1
        for size in shape:
            count *= size
        nbytes = count * torch.empty((), dtype=dtype).element_size()
        return self.bytes[offset:offset + nbytes].view(dtype).view(shape)

    def store(self, out: object, out_slot: int) -> dict:
        """Copy one output into an arena output slot; say what it was (a claim the judge reads bytes for)."""
        layout = self.layout
        plain = ""
        if type(out) is not torch.Tensor:
            plain = f"output is {type(out).__module__}.{type(out).__qualname__}, not a plain torch.Tensor"
            return {"shape": [], "dtype": "", "plain": plain, "copied": False}
        if out.layout != torch.strided:
            return {"shape": list(out.shape), "dtype": str(out.dtype).replace("torch.", ""),
                    "plain": f"output layout is {out.layout}", "copied": False}
        if out.requires_grad or out.grad_fn is not None:
            plain = "output carries an autograd graph"
        low, high = storage_span(out)
        for index, x in enumerate(self.slots[self.current_slot] if self.slots else []):
            x_low, x_high = storage_span(x)
            if low < x_high and x_low < high:
                plain = f"output shares memory with input {index}"
        shape, dtype = list(out.shape), str(out.dtype).replace("torch.", "")
        copied = False
        if shape == layout["output"] and out.dtype == DTYPES[layout["dtype"]] and out.device.type == self.device.type:
            target = self.view(layout["out_offsets"][out_slot], layout["output"], out.dtype)
            target.copy_(out.detach())
            copied = True
        return {"shape": shape, "dtype": dtype if out.device.type == self.device.type else f"{dtype}@{out.device.type}",
                "plain": plain, "copied": copied}

    def invoke(self, slot: int):
        self.current_slot = slot
        inputs = self.slots[slot]
        if self.constants:   # ints or floats of get_inputs(): never in the arena, put back in their places
            inputs = list(inputs)
            for position, value in self.constants:
                inputs.insert(position, value)
        with torch.no_grad():
            return self.call(*inputs)

    # --- operations ------------------------------------------------------------------------------------
    def op_ready(self, args: dict) -> dict:
        return {}

    def op_map(self, args: dict) -> dict:
        """Host work a judge started early asks for while it waits for the GPU: map the arena at the size it
        expects and fault its pages into this mapping, so that page-locking it after hello is quick."""
        if self.said_hello:
            raise CallFailed("runtime_error", "map after hello")
        self.map_arena(int(args["arena_bytes"]))
        return {"populated": timing.populate_pages(self.arena)}

    def map_arena(self, size: int) -> None:
        if self.arena is not None and len(self.arena) == size:
            return
        if self.arena is not None:
            self.bytes = torch.empty(0, dtype=torch.uint8)
            self.arena.close()
        self.arena = mmap.mmap(self.arena_fd, size)
        self.bytes = torch.frombuffer(self.arena, dtype=torch.uint8)

    def op_hello(self, args: dict) -> dict:
        """Map the arena the judge has sized (unless `map` already did, at this size), and only now touch the
        GPU: until the judge says hello, a sandbox started early waits beside another judge's timed calls
        without disturbing them."""
        if self.said_hello:
            raise CallFailed("runtime_error", "hello twice")
        self.said_hello = True
        self.map_arena(int(args["arena_bytes"]))
        os.close(self.arena_fd)
        if self.device.type == "cuda":
            torch.cuda.set_device(0)   # CUDA_VISIBLE_DEVICES pins one GPU
            keep_async_pool_memory()
            if args.get("pin"):   # before the candidate loads: it cannot take the judge's staging speed from it
                self.arena_pinned = timing.pin_for_copies(self.bytes) or "pinned"
        return {"pid": os.getpid(), "uid": os.getuid(), "arena_pinned": self.arena_pinned}

    def op_layout(self, args: dict) -> dict:
        self.slots, self.kept, self.graph = [], [], None
        self.layout = args
        dtype = DTYPES[args["dtype"]]
        # every input slot a view of one buffer laid out as the arena's slots are, so that unsealing the staged
        # slots is one pass (seal.py)
        begin, end = seal.region(args["in_offsets"], args["out_offsets"], len(args["in_offsets"]))
        self.staging = torch.empty(end - begin, dtype=torch.uint8, device=self.device)
        element = torch.empty((), dtype=dtype).element_size()
        self.slots = [[self.staging[offset - begin:offset - begin + math.prod(shape) * element].view(dtype)
                       .view(shape) for offset, shape in zip(offsets, args["inputs"])] for offsets in args["in_offsets"]]
        self.spin = timing.SpinState(float(args["spin_us"]))
        self.constants = [(int(position), value) for position, value in args.get("constants", [])]
        self.trivial_scratch = torch.zeros(1, device=self.device)
        return {}

    def op_load(self, args: dict) -> dict:
        started = time.perf_counter()
        kind = args["kind"]
        if kind == "trivial":   # the harness's own near-empty call: what the judge calibrates against
            def trivial(*inputs):
                out = torch.empty(self.layout["output"], dtype=DTYPES[self.layout["dtype"]], device=self.device)
                self.trivial_scratch.add_(1.0)
                return out
            self.call = trivial
            return {"call_path": "", "load_s": 0.0}
        init = list(args["init_inputs"])
        if kind == "reference":
            module = import_file(args["path"], "reference_for_baseline")
            seed_weights(args)
            reference = module.Model(*init).to(self.device).eval()
            self.call = reference
            if args.get("baseline") == "compile":
                self.call = torch.compile(reference)
            return {"call_path": "", "load_s": time.perf_counter() - started}
        try:
            module = import_file(args["path"], f"candidate_{args['sha256'][:16]}")
            cls = getattr(module, "ModelNew", None)
            if cls is None:
                raise AttributeError("module defines no ModelNew")
            seed_weights(args)
            model = cls(*init)
            model = model.to(self.device) if isinstance(model, torch.nn.Module) else model
            if isinstance(model, torch.nn.Module):
                model.eval()
        except BaseException as exc:   # a candidate may raise anything, SystemExit included
            traceback.print_exc()
            raise CallFailed("compile_error" if is_build_failure(exc) else "load_error", first_line(exc)) from None
        problem = call_path_problem(model, cls)
        forward = cls.forward   # resolved once, from the class: instance attributes cannot reroute it
        self.call = lambda *inputs: forward(model, *inputs)
        return {"call_path": problem, "load_s": time.perf_counter() - started}

    def op_stage(self, args: dict) -> dict:
        """Copy input sets from the arena into this process's own buffers (the GPU's, on CUDA)."""
        dtype = DTYPES[self.layout["dtype"]]
        for slot in args["slots"]:
            for buffer, offset, shape in zip(self.slots[slot], self.layout["in_offsets"][slot], self.layout["inputs"]):
                buffer.copy_(self.view(offset, shape, dtype))
        self.synchronize()
        return {}

    def unseal(self, args: dict) -> None:
        """First thing in a request that calls the candidate: the slots the judge sealed when it staged them
        (seal.py) become readable, with the seed this request brought, in one pass."""
        sealed = args.get("unseal")
        if sealed:
            begin, end = seal.region(self.layout["in_offsets"], self.layout["out_offsets"], int(sealed["slots"]))
            seal.unseal_(self.staging[:end - begin], int(sealed["seed"]), self.device)

    def op_call(self, args: dict) -> dict:
        """Verification: the same staged inputs `len(out_slots)` times, each output copied to its slot."""
        self.unseal(args)
        slot, outputs = args["slot"], []
        pristine = [x.clone() for x in self.slots[slot]]
        before = after = thread_count()
        changed = -1
        for out_slot in args["out_slots"]:
            if args.get("poison"):
                poison_free_memory(self.slots[slot])
            before = thread_count()
            out = self.guarded(slot)
            self.synchronize()
            after = thread_count()
            for index, (x, p) in enumerate(zip(self.slots[slot], pristine)):
                if changed < 0 and not torch.equal(x.view(torch.uint8) if x.is_contiguous() else x,
                                                   p.view(torch.uint8) if p.is_contiguous() else p):
                    changed = index
            outputs.append(self.store(out, out_slot))
            del out
        return {"outputs": outputs, "threads_before": before, "threads_after": after, "inputs_changed": changed}

    def guarded(self, slot: int):
        try:
            return self.invoke(slot)
        except Exception as exc:
            traceback.print_exc()
            raise CallFailed("runtime_error", first_line(exc)) from None

    def op_warm(self, args: dict) -> dict:
        self.unseal(args)
        started, count = time.perf_counter(), 0
        while count < args["iters"] or (time.perf_counter() - started) * 1e3 < args["ms"]:
            self.guarded(args["slot"])
            self.synchronize()
            count += 1
            if time.perf_counter() - started > args["budget_s"]:
                break
        return {}

    def op_time(self, args: dict) -> dict:
        """Each listed slot called once and timed by `method` (CPU: always the monotonic clock); outputs are
        kept for `fetch`."""
        self.unseal(args)
        self.kept = []
        method = args["method"] if self.device.type == "cuda" else "cpu"
        return TIMING_METHODS[method](self, args["slots"], args.get("settings", {})) | {"kept": len(self.kept)}

    def keep(self, out):
        self.kept.append(out)
        return out

    def graph_call(self, slots: list[int]) -> Callable[[int], object]:
        """The graph method: one call captured on static buffers; each timed replay first gets its own fresh
        inputs copied into them (outside the event pair: the copy runs before the spin is queued)."""
        if self.graph is None:
            self.static = [x.clone() for x in self.slots[slots[0]]]
            self.slots.append(self.static)
            static_slot = len(self.slots) - 1
            self.graph, outputs = timing.capture_graph(lambda i: self.invoke(static_slot), 1)
            self.graph_out = outputs[0]

        def replay(i: int):
            self.graph.replay()
            self.kept.append(self.graph_out.clone())   # after the end event: the next call overwrites it

        def prepare(i: int) -> None:
            for static, fresh in zip(self.static, self.slots[slots[i]]):
                static.copy_(fresh)
        replay.prepare = prepare
        return replay

    def op_burst(self, args: dict) -> dict:
        """Calls back to back, one synchronize at the end; the judge's clock times the whole request."""
        self.unseal(args)
        self.kept = []
        if args.get("method") == "graph" and self.graph is not None:   # the graph baseline: replays, as timed
            for slot in args["slots"]:
                for static, fresh in zip(self.static, self.slots[slot]):
                    static.copy_(fresh)
                self.graph.replay()
                self.kept.append(self.graph_out.clone())
        else:
            for slot in args["slots"]:
                self.kept.append(self.guarded(slot))
        self.synchronize()
        if args.get("copy_out"):   # CPU: outputs are in the arena before the reply, so no work can follow it
            for position, out in enumerate(self.kept):
                self.store(out, position)
        receipts = []
        if args.get("receipt"):   # a digest of every output: the reply cannot leave before they exist
            receipts = receipt.digests(self.kept, int(args["receipt"]["seed"]), math.prod(self.layout["output"]),
                                       self.device)
        return {"kept": len(self.kept), "receipts": receipts}

    def op_fetch(self, args: dict) -> dict:
        self.synchronize()
        outputs = []
        for position, out_slot in zip(args["positions"], args["out_slots"]):
            outputs.append(self.store(self.kept[position], out_slot))
        return {"outputs": outputs}

    def op_quit(self, args: dict) -> dict:
        return {}


# --- timing methods: one signature each, (sandbox, slots, settings) -> the samples part of a `time` reply ----

def _claim(samples: list[float], empty: list[float] = (), spin_us: float = 0.0, discarded: int = 0,
           host_bound: bool = False) -> dict:
    return {"samples_us": list(samples), "empty_us": list(empty), "spin_us": spin_us, "discarded": discarded,
            "host_bound": host_bound}


def time_cpu(sandbox: Sandbox, slots: list[int], settings: dict) -> dict:
    """The monotonic clock around each call."""
    samples = []
    for slot in slots:
        start = time.perf_counter_ns()
        out = sandbox.guarded(slot)
        samples.append((time.perf_counter_ns() - start) / 1e3)
        sandbox.kept.append(out)
    return _claim(samples)


def time_host(sandbox: Sandbox, slots: list[int], settings: dict) -> dict:
    """Wall clock around each call, closed by a device-wide synchronize."""
    return _claim(timing.time_host(lambda i: sandbox.keep(sandbox.guarded(slots[i])), len(slots), sandbox.synchronize))


def time_events(sandbox: Sandbox, slots: list[int], settings: dict, graph: bool = False) -> dict:
    """An event pair around each call behind a spin, the L2 flushed before it (timing.time_cuda_events)."""
    call = sandbox.graph_call(slots) if graph else (lambda i: sandbox.keep(sandbox.guarded(slots[i])))
    events = timing.time_cuda_events(call, settings, getattr(call, "prepare", timing.no_prepare),
                                     calls=len(slots), state=sandbox.spin)
    return _claim(events.raw_us, events.empty_us, events.spin_us, events.discarded, events.host_bound)


def time_graph(sandbox: Sandbox, slots: list[int], settings: dict) -> dict:
    """Events around replays of one captured call, each after its fresh inputs are copied in."""
    return time_events(sandbox, slots, settings, graph=True)


TIMING_METHODS = {"cpu": time_cpu, "host": time_host, "events": time_events, "graph": time_graph}


def serve(requests, replies, sandbox: Sandbox) -> None:
    handlers = {name[3:]: getattr(sandbox, name) for name in dir(sandbox) if name.startswith("op_")}
    for line in requests:
        request = Request.decode(line)
        if request.protocol != PROTOCOL_VERSION:
            reply = Reply(request.op, False, f"protocol {request.protocol}, expected {PROTOCOL_VERSION}", "runtime_error")
        else:
            try:
                reply = Reply(request.op, True, data=handlers[request.op](request.args))
            except CallFailed as exc:
                reply = Reply(request.op, False, str(exc), exc.status)
            except Exception as exc:
                traceback.print_exc()
                reply = Reply(request.op, False, first_line(exc), "runtime_error")
        replies.write(reply.encode())
        replies.flush()
        if request.op == "quit":
            return


def keep_async_pool_memory() -> None:
    """cudaMallocAsync's default pool hands its memory back to the driver at every synchronize (release
    threshold 0), so a candidate's scratch is mapped afresh on each call after one: host work that a call
    alone pays and back-to-back calls do not. PyTorch's own async allocator keeps it (threshold UINT64_MAX);
    the sandbox does the same, as a long-running process would."""
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        torch.cuda.init()
        device, pool = ctypes.c_int(), ctypes.c_void_p()
        threshold = ctypes.c_uint64(2**64 - 1)
        if driver.cuDeviceGet(ctypes.byref(device), 0) == 0 and \
                driver.cuDeviceGetDefaultMemPool(ctypes.byref(pool), device) == 0:
            driver.cuMemPoolSetAttribute(pool, 4, ctypes.byref(threshold))   # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    except Exception:   # no driver library or no such call: the pool keeps its default
        pass


def main(argv: list[str]) -> None:
    requests_fd, replies_fd, arena_fd, device = int(argv[0]), int(argv[1]), int(argv[2]), argv[3]
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the runner's Ctrl-C reaches the judge, which ends us
    sandbox = Sandbox(arena_fd, torch.device(device))
    with os.fdopen(requests_fd, "rb") as requests, os.fdopen(replies_fd, "wb") as replies:
        serve(requests, replies, sandbox)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)   # skip interpreter teardown: a broken extension can crash in destructors


if __name__ == "__main__":
    main(sys.argv[1:])
