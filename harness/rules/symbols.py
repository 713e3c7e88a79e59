"""Built-library rule (I119): what the compiled extension can call, read from what the build produced.

Input: the path of a built extension library (.so). Output: `Finding`s.

The source rules read spelling, which macros, templates and `&fork` can disguise; the linker's
symbols cannot be. What the candidate's code calls outside itself is the set of undefined symbols
of its object files beside the library (`nm --undefined-only main.o cuda.cuda.o`, or the ELF reader
here where nm is missing), or, when they are gone, the library's dynamic imports (`nm -D
--undefined-only`). The objects come first because a toolchain may link part of its C++ runtime
into the library statically, and that code (locale, random_device ...) calls open, read and ioctl.
Each name is classified against a kernel's vocabulary (`vocabulary.SYMBOLS_*`):

- allowed: the C and C++ runtimes and libm, libtorch/c10/ATen/pybind11 and the Python C API that
  bindings use, the CUDA runtime's launch, memory, query and synchronize calls, OpenMP;
- denied: processes, dynamic loading, thread creation, files, sockets, signals, the environment,
  stream creation, graphs, host callbacks, IPC, driver entry points, device resets, and the Python
  C API's code-running calls: an error wherever the candidate's objects refer to it;
- anything else (cudaEvent*, other streams, std::thread, ATen's math namespaces, ...): torch's own
  inline code refers to some of these (c10's CUDA guard implements event and stream methods behind
  a vtable), so it is an error only where the candidate's code reaches it, by a disassembly of the
  library (`objdump`): from a function of the candidate's outside the runtimes' namespaces, through
  any chain of direct calls, or from its data. Without objdump it is only logged.
"""
from __future__ import annotations

import bisect
import logging
import re
import shutil
import struct
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.rules import BUILD, Finding, finding, rule
from harness.rules.vocabulary import (SYMBOLS_DENIED, SYMBOLS_LIBC, SYMBOLS_NAMESPACE_EXCEPTIONS,
                                      SYMBOLS_NAMESPACES, SYMBOLS_PATTERNS)

log = logging.getLogger(__name__)

ALLOWED, DENIED, OUTSIDE = "allowed", "denied", "outside"
TOOL_TIME_LIMIT_S = 120
MESSAGE_NAMES = 8          # symbols named in one finding's message


# ===== reading the build ========================================================================

@dataclass(frozen=True)
class ElfSymbol:
    name: str
    defined: bool
    function: bool
    value: int
    size: int


@dataclass(frozen=True)
class Reading:
    """What a build's code refers to outside itself, and which functions are the candidate's."""
    names: list[str]              # undefined symbols, sorted
    code: set[str] | None         # what the candidate's object files define (functions, data); None: not known
    source: str                   # what was read


def read_build(library: Path) -> Reading | None:
    """The candidate's object files beside the library (main.o, cuda.cuda.o), else the library itself.

    A library holds more than the candidate's code where the toolchain links part of its runtime
    statically (the GPU machines' compiler links libstdc++'s locale, random_device and transactional
    memory pieces in, which call open, read, ioctl, syscall ...): that code is the toolchain's. The
    objects hold exactly what the candidate's translation units compiled, inline header code included.
    """
    objects = sorted(library.parent.glob("*.o"))
    if objects:
        undefined: set[str] = set()
        defined: set[str] = set()
        for path in objects:
            names, table = undefined_symbols(path), elf_symbols(path, dynamic=False)
            if names is None or table is None:
                break
            undefined.update(names)
            defined.update(s.name for s in table if s.defined)
        else:
            return Reading(sorted(undefined - defined), defined, ", ".join(p.name for p in objects))
    names = undefined_symbols(library)
    return None if names is None else Reading(names, None, library.name)


def undefined_symbols(path: Path) -> list[str] | None:
    """The names an object or library needs from elsewhere (sorted, versions dropped); None if unreadable."""
    names = _nm_undefined(path)
    if names is None:
        names = elf_undefined_symbols(path)
    return None if names is None else sorted(set(names))


def _nm_undefined(path: Path) -> list[str] | None:
    if not shutil.which("nm"):
        return None
    dynamic = ["-D"] if Path(path).suffix != ".o" else []
    try:
        done = subprocess.run(["nm", *dynamic, "--undefined-only", str(path)], capture_output=True, text=True,
                              timeout=TOOL_TIME_LIMIT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [line.split()[-1].split("@")[0] for line in done.stdout.splitlines() if line.split()]


def elf_undefined_symbols(path: Path) -> list[str] | None:
    """Undefined symbols read without binutils: a library's dynamic table, an object file's full one."""
    table = elf_symbols(path, dynamic=True)
    if not table:
        table = elf_symbols(path, dynamic=False)
    return None if table is None else [s.name for s in table if not s.defined]


def elf_symbols(path: Path, dynamic: bool) -> list[ElfSymbol] | None:
    """The dynamic (SHT_DYNSYM) or full (SHT_SYMTAB) symbol table of an ELF file; None if it is not one."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    wanted = 11 if dynamic else 2
    try:
        if wide:
            shoff, = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
            section, entry = order + "IIQQQQIIQQ", order + "IBBHQQ"
        else:
            shoff, = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
            section, entry = order + "IIIIIIIIII", order + "IIIBBH"
        sections = [struct.unpack_from(section, data, shoff + i * shentsize) for i in range(shnum)]
        symbols: list[ElfSymbol] = []
        for header in sections:
            if header[1] != wanted:
                continue
            offset, size, link, entsize = header[4], header[5], header[6], header[9]
            strtab = sections[link][4]
            for start in range(offset, offset + size, entsize or struct.calcsize(entry)):
                fields = struct.unpack_from(entry, data, start)
                name_at, info, shndx, value, length = (fields[0], fields[1], fields[3], fields[4], fields[5]) if wide \
                    else (fields[0], fields[3], fields[5], fields[1], fields[2])
                if name_at == 0:
                    continue
                end = data.index(b"\0", strtab + name_at)
                name = data[strtab + name_at:end].decode("ascii", "replace")
                symbols.append(ElfSymbol(name, shndx != 0, info & 0xF == 2, value, length))
        return symbols
    except (struct.error, ValueError, IndexError):
        return None


# ===== what a name means ========================================================================

_SUBSTITUTIONS = {"Sa": ("std", "allocator"), "Sb": ("std", "basic_string"), "Ss": ("std", "string"),
                  "Si": ("std", "istream"), "So": ("std", "ostream"), "Sd": ("std", "iostream")}
_INLINE_NAMESPACES = {"__cxx11", "__1", "_V2", "__8"}


def mangled_path(name: str) -> tuple[str, ...]:
    """The leading namespace/class names of a symbol: `_ZN3c104cuda9SetDeviceEab` -> (c10, cuda, SetDevice).

    A C name is its own path; typeinfo and vtables are read for their type, local entities for their
    function; a global operator new/delete or a builtin type's typeinfo get a placeholder.
    """
    name = name.split(".")[0]            # foo.cold, foo.isra.0: parts of foo
    if not name.startswith("_Z"):
        return (name,)
    text = name[2:]
    if text[:2] in ("TV", "TT", "TI", "TS", "GV", "GR", "TH", "TW"):
        text = text[2:]
        if text[:1] and text[0] in "PKRVO" or (len(text) == 1 and text.islower()):
            return ("<builtin>",)
    elif text[:2] in ("Th", "Tv"):
        text = re.sub(r"^T[hv](?:n?\d+_)+", "", text)
    if text.startswith("Z"):             # a local entity: named by its enclosing function
        return mangled_path("_Z" + text[1:])
    if text[:2] in ("nw", "na", "dl", "da"):
        return ("<operator new/delete>",)
    nested = text.startswith("N")
    if nested:
        text = re.sub(r"^N[rVK]*[RO]?", "", text)
    parts: list[str] = []
    while text:
        if text.startswith("St"):
            parts.append("std")
            text = text[2:]
            continue
        if text[:2] in _SUBSTITUTIONS:
            parts.extend(_SUBSTITUTIONS[text[:2]])
            break
        if text.startswith("L"):         # internal linkage
            text = text[1:]
            continue
        match = re.match(r"(\d+)", text)
        if not match:
            break
        length, start = int(match.group(1)), match.end()
        parts.append(text[start:start + length])
        text = text[start + length:] if nested else ""
        while tag := re.match(r"B(\d+)", text):        # ABI tags: str[abi:cxx11] is str
            text = text[tag.end() + int(tag.group(1)):]
    if not parts and len(text) >= 2 and text[:2].islower():
        return ("<operator>",)
    return tuple(p for p in parts if p not in _INLINE_NAMESPACES) or (name,)


def is_runtime_code(name: str) -> bool:
    """Whether a function defined in the library belongs to the runtimes' namespaces (their inline code)."""
    path = mangled_path(name)
    return name.startswith("_Z") and path[0] in SYMBOLS_NAMESPACES


def classify(name: str) -> str:
    """allowed, denied, or outside (neither: an error only where the candidate's code reaches it)."""
    if SYMBOLS_DENIED.match(name):
        return DENIED
    if name in SYMBOLS_LIBC or SYMBOLS_PATTERNS.match(name):
        return ALLOWED
    path = mangled_path(name)
    if name.startswith("_Z") and path[0] in SYMBOLS_NAMESPACES:
        if any(path[:len(prefix)] == prefix for prefix in SYMBOLS_NAMESPACE_EXCEPTIONS):
            return OUTSIDE
        return ALLOWED
    if name.startswith("_Z") and path[0] in ("<operator>",):
        return ALLOWED                   # global operators of the runtimes (operator<< on their types)
    if name.startswith("_Z") and path[0].startswith("THP"):
        return ALLOWED                   # torch's Python bindings
    return OUTSIDE


# ===== who refers to what =======================================================================

_LABEL = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_INSTRUCTION = re.compile(r"^\s+([0-9a-f]+):\s*(.*)$")
_TARGET = re.compile(r"<([^<>]+?)(?:[+-]0x[0-9a-f]+)?>")
_COMMENT_ADDRESS = re.compile(r"#\s*(?:0x)?([0-9a-f]+)\b")
_STUB_SECTIONS = (".plt", ".plt.got", ".plt.sec", ".iplt")
_CODE_RELOCATIONS = ("JUMP_SLOT", "GLOB_DAT", "RELATIVE", "IRELATIVE", "TPOFF", "DTPMOD", "DTPOFF", "TLSDESC", "NONE")


def _objdump(library: Path, *flags: str) -> str | None:
    try:
        done = subprocess.run(["objdump", *flags, str(library)], capture_output=True, text=True,
                              timeout=TOOL_TIME_LIMIT_S, errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def candidate_references(library: Path, undefined: Iterable[str],
                         code: set[str] | None = None) -> dict[str, set[str]] | None:
    """Each symbol the candidate's own code reaches, with the functions (or data) that refer to it.

    The candidate's code starts at every function outside the runtimes' namespaces (and, when `code`
    is known, defined in the candidate's object files) and takes in every function of `code` those
    reach by direct calls or references, so an inline wrapper it calls (`at::cuda::CUDAEvent::record`)
    counts. A pointer stored in the candidate's data counts too. Calls through a vtable are not
    followed: that is how c10's CUDA guard keeps its event and stream methods, which an honest kernel
    never calls. None without `objdump`.
    """
    if not shutil.which("objdump"):
        return None
    relocations = _objdump(library, "-R", "-w")
    disassembly = _objdump(library, "-d", "--no-show-raw-insn", "-w")
    if relocations is None or disassembly is None:
        return None
    table = elf_symbols(library, dynamic=False) or []
    objects = sorted((s.value, s.value + s.size, s.name) for s in table if s.defined and not s.function and s.size)
    return references_in(disassembly, relocations, undefined, code, lambda address: _owner(objects, address))


def _owner(objects: list[tuple[int, int, str]], address: int) -> str | None:
    index = bisect.bisect_right(objects, (address, float("inf"), "")) - 1
    return objects[index][2] if index >= 0 and objects[index][0] <= address < objects[index][1] else None


def references_in(disassembly: str, relocations: str, undefined: Iterable[str], code: set[str] | None = None,
                  data_owner=lambda address: None) -> dict[str, set[str]]:
    """`candidate_references` on the text of `objdump -d --no-show-raw-insn -w` and `objdump -R -w`.

    `data_owner(address)` names the data object holding a relocated pointer. Without `code`, any
    data reference counts; with it, one held by the candidate's own data (not the runtimes').
    """
    undefined = set(undefined)

    def candidates(function: str) -> bool:
        return not is_runtime_code(function) and (code is None or function.split(".")[0] in code)

    slots: dict[int, str] = {}                    # GOT slot address -> symbol
    found: dict[str, set[str]] = {}
    for line in relocations.splitlines():
        fields = line.split()
        if len(fields) < 3 or not re.fullmatch(r"[0-9a-f]+", fields[0]):
            continue
        symbol = re.split(r"[@+]", fields[2])[0]
        if symbol not in undefined:
            continue
        address = int(fields[0], 16)
        if fields[1].endswith(("JUMP_SLOT", "GLOB_DAT")):
            slots[address] = symbol
        elif not fields[1].endswith(_CODE_RELOCATIONS):
            owner = data_owner(address)
            if code is None or owner is not None and candidates(owner):
                found.setdefault(symbol, set()).add(owner or "<data>")
    refers: dict[str, set[str]] = {}              # function -> undefined symbols it refers to
    edges: dict[str, set[str]] = {}               # function -> defined functions it calls or refers to
    current, in_stub = "", False
    for line in disassembly.splitlines():
        if line.startswith("Disassembly of section "):
            in_stub = line[len("Disassembly of section "):].rstrip(":") in _STUB_SECTIONS
            continue
        label = _LABEL.match(line)
        if label:
            current = label.group(2)
            refers.setdefault(current, set())
            edges.setdefault(current, set())
            continue
        if in_stub or not current or current.endswith("@plt") or not _INSTRUCTION.match(line):
            continue
        for target in _TARGET.findall(line):
            base = target[:-4] if target.endswith("@plt") else target
            base = base.split("@")[0]
            if base in undefined:
                refers[current].add(base)
            elif base != current:
                edges[current].add(target)
        address = _COMMENT_ADDRESS.search(line)
        if address and int(address.group(1), 16) in slots:
            refers[current].add(slots[int(address.group(1), 16)])
    reached = [f for f in refers if candidates(f)]
    seen = set(reached)
    while reached:
        function = reached.pop()
        for callee in edges.get(function, ()):
            if callee in refers and callee not in seen and (code is None or callee.split(".")[0] in code):
                seen.add(callee)
                reached.append(callee)
    for function in seen:
        for symbol in refers[function]:
            found.setdefault(symbol, set()).add(function)
    return found


def demangled(names: Iterable[str]) -> dict[str, str]:
    """Readable forms of C++ names (c++filt), where it is installed; else the names themselves."""
    names = list(names)
    mangled = [n for n in names if n.startswith("_Z")]
    readable = dict(zip(names, names))
    if mangled and shutil.which("c++filt"):
        try:
            done = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True,
                                  timeout=TOOL_TIME_LIMIT_S)
            lines = done.stdout.splitlines()
            if done.returncode == 0 and len(lines) == len(mangled):
                readable.update(zip(mangled, lines))
        except (OSError, subprocess.SubprocessError):
            pass
    return readable


# ===== the rule =================================================================================

@rule("I119", stage=BUILD)
def calls_outside_vocabulary(library: Path) -> Iterator[Finding]:
    """Calls outside a kernel's vocabulary, by the built library's symbols: processes, files, dynamic loading, threads, other streams, graphs or devices.

    Read from the symbols the compiled code refers to, so no spelling in the sources hides them.
    Runs after a successful build; an error turns the build into `rejected`.
    """
    library = Path(library)
    reading = read_build(library)
    if reading is None:
        log.warning("I119 skipped for %s: neither nm nor the ELF reader could read its symbols", library)
        return
    judged = [n for n in reading.names if classify(n) != ALLOWED]
    if not judged:
        return
    denied = {n for n in judged if classify(n) == DENIED}
    references = candidate_references(library, judged, reading.code)
    disassembled = references is not None
    references = references or {}
    # Read from the candidate's objects, a denied name is its code's doing wherever it appears. Read
    # from the library alone it may belong to a statically linked runtime: who calls it decides, if
    # a disassembly can tell; if none can, a denied name is still an error.
    errors = [n for n in judged if n in references or n in denied and (reading.code is not None or not disassembled)]
    if not disassembled and len(errors) < len(judged):
        log.warning("I119 for %s: no objdump to tell the candidate's calls from its runtimes' inline code; "
                    "not judged: %s", library, ", ".join([n for n in judged if n not in errors][:MESSAGE_NAMES]))
    if not errors:
        return
    by = sorted({f for n in errors for f in references.get(n, ())})
    readable = demangled(errors + by)
    where = f" (from {_listing(by, readable, 3)})" if by else ""
    yield finding("I119", 0, f"{library.name} ({reading.source}) calls outside a kernel's vocabulary: "
                             f"{_listing(errors, readable)}{where}")


def _listing(names: list[str], readable: dict[str, str], limit: int = MESSAGE_NAMES) -> str:
    shown = [f"`{_short(readable.get(n, n))}`" for n in names[:limit]]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(shown) + more


def _short(text: str, width: int = 100) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
