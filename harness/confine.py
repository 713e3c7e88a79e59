"""Confinement: a sandbox slot in; a child process that can reach nothing of value out.

The judge starts the candidate's sandbox process with `preexec(uid, confinement)` and
`sandbox_env(...)`; what was put in force is a `Confinement`, stored in every record.

    uid = sandbox_uid(slot) if can_drop_privileges() else None
    private_tmp, confinement = prepare_sandbox(uid, writable=[job_dir])
    process = subprocess.Popen(argv, env=sandbox_env(private_tmp, keep), preexec_fn=preexec(uid, confinement))
    ... process.wait() ...
    kill_user(uid)                      # daemons it left behind, before anything is read back
    release_sandbox(private_tmp, [job_dir])

What stops what, when run as root (the separate user is the main wall; the rest narrow it):
- a uid of its own (no passwd entry needed): it cannot signal or ptrace the judge or runner, read
  their /proc/N/environ or memory, or write anything it does not own (results, build cache,
  harness, the record key); and every process it leaves behind can be found and killed by uid;
- a network namespace of its own with only a loopback that is down: no network at all;
- no_new_privs: no setuid binary (sudo, su) gives it root back; landlock (where the kernel has it)
  limits writes to its own folders even where a file is world-writable, and scopes signals;
- a minimal environment: no secret, token or path of the runner's passes through os.environ;
- PR_SET_PDEATHSIG: it dies when the judge does.
- a seccomp filter: it cannot change its CPU affinity (nor make other ABIs' system calls);
Without root none of the uid part is possible; `Confinement.notes` says what is missing.
A sandbox uid must be able to read and run what the candidate needs (the interpreter, its
packages, the harness, the toolkit): `unreachable_paths` says which of them it cannot reach.
"""
from __future__ import annotations

import ctypes
import errno
import logging
import os
import platform
import resource
import shutil
import signal
import stat
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable

log = logging.getLogger(__name__)

SANDBOX_UID_BASE = 61000   # uids 61000..61063 are used for sandboxes; no passwd entry needed
SANDBOX_SLOTS = 64
NETWORK_NONE = "none (own network namespace)"
NETWORK_HOST = "host"
SAFE_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
KILL_WAIT_S = 2.0

# This module's fork children make a few system calls and exit: safe in a threaded parent (the
# forking thread holds the GIL, and glibc resets malloc's locks in the child), so Python 3.12's
# warning about fork in a threaded process says nothing about them.
warnings.filterwarnings("ignore", message=r"This process \(pid=\d+\) is multi-threaded", category=DeprecationWarning,
                        module=r"harness\.confine")

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWNET = 0x40000000

# Landlock (linux/landlock.h). Syscall numbers are the same on every architecture.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_WRITE_FILE, _FS_REMOVE_DIR, _FS_REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_FS_MAKE_CHAR, _FS_MAKE_DIR, _FS_MAKE_REG, _FS_MAKE_SOCK = 1 << 6, 1 << 7, 1 << 8, 1 << 9
_FS_MAKE_FIFO, _FS_MAKE_BLOCK, _FS_MAKE_SYM = 1 << 10, 1 << 11, 1 << 12
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14            # ABI 2, ABI 3
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1   # ABI 6
# Only writes are handled: reading is left to file permissions (the sandbox needs the toolkit,
# torch and the candidate's sources), and ioctl is left alone because the GPU is driven by ioctls.
_FILE_WRITES = _FS_WRITE_FILE | _FS_TRUNCATE
_DEVICE_NODES = _FS_MAKE_CHAR | _FS_MAKE_BLOCK


# Seccomp (linux/seccomp.h, linux/filter.h): a filter that refuses sched_setaffinity, so that a confined process
# keeps the cores it was started on (a build stays off the GPU lane's cores, spawn.plan_cores: an affinity alone
# its code could widen), and refuses every system call of another ABI (x32, or i386 through int 0x80), where the
# same call has another number. Its judge may still move it: a filter binds only the calls its process makes.
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x45, 0x06
# machine -> (AUDIT_ARCH value, sched_setaffinity's number, the x32 call bit or 0)
_SECCOMP_ABI = {"x86_64": (0xC000003E, 203, 0x40000000), "aarch64": (0xC00000B7, 122, 0)}
SECCOMP_FILTER = "sched_setaffinity refused (it keeps the cores it was started on); other ABIs' system calls refused"


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _seccomp_program() -> tuple[_SockFprog, ctypes.Array]:
    """The filter as BPF (the array is returned too: the program points into it and must outlive the call)."""
    arch, affinity, x32 = _SECCOMP_ABI[platform.machine()]
    refuse = _SECCOMP_RET_ERRNO | errno.EPERM
    program = [(_BPF_LD_W_ABS, 0, 0, 4),                  # seccomp_data.arch
               (_BPF_JEQ_K, 1, 0, arch), (_BPF_RET_K, 0, 0, refuse),
               (_BPF_LD_W_ABS, 0, 0, 0),                  # seccomp_data.nr
               (_BPF_JSET_K, 0, 1, x32), (_BPF_RET_K, 0, 0, refuse),
               (_BPF_JEQ_K, 0, 1, affinity), (_BPF_RET_K, 0, 0, refuse),
               (_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW)]
    instructions = (_SockFilter * len(program))(*[_SockFilter(*step) for step in program])
    return _SockFprog(len(program), instructions), instructions


@lru_cache(maxsize=1)
def _seccomp_available() -> tuple[bool, str]:
    if platform.machine() not in _SECCOMP_ABI:
        return False, f"no filter for {platform.machine()}"
    libc = _libc()
    if libc is None:
        return False, "not Linux"
    if libc.prctl(21, 0, 0, 0, 0) < 0:   # PR_GET_SECCOMP: EINVAL where the kernel has no seccomp
        return False, f"the kernel has no seccomp ({os.strerror(ctypes.get_errno())})"
    return True, ""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Confinement:
    """What was in force for one sandbox; every field is a plain statement for the record."""
    user: str                       # "uid 61003", or "" when the candidate runs as the judge's user
    private_tmp: str                # its own temporary folder ("" if none)
    env_scrubbed: bool              # started with sandbox_env's environment, nothing else
    no_new_privs: bool
    network: str                    # NETWORK_NONE or NETWORK_HOST
    landlock: str                   # "filesystem writes limited to <dirs>" or "unavailable: <why>"
    seccomp: str                    # the filter, or "unavailable: <why>" / "not used: <why>"
    notes: tuple[str, ...] = ()     # what is missing and why, e.g. "not root: no separate user"
    writable: tuple[str, ...] = ()  # folders and files handed to the sandbox's user to write
    landlock_abi: int = 0           # landlock ABI version preexec puts in force; 0 for none

    def to_json(self) -> dict:
        data = asdict(self)
        data["notes"], data["writable"] = list(self.notes), list(self.writable)
        return data

    @property
    def separate_user(self) -> bool:
        return bool(self.user)


def can_drop_privileges() -> bool:
    """Root on Linux: only then can a sandbox get a uid of its own."""
    return sys.platform.startswith("linux") and os.geteuid() == 0


def sandbox_uid(slot: int) -> int:
    if not 0 <= slot < SANDBOX_SLOTS:
        raise ValueError(f"sandbox slot {slot} is outside [0, {SANDBOX_SLOTS})")
    return SANDBOX_UID_BASE + slot


def _is_sandbox_uid(uid: int) -> bool:
    return SANDBOX_UID_BASE <= uid < SANDBOX_UID_BASE + SANDBOX_SLOTS


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.unshare.argtypes = [ctypes.c_int]
    return libc


@lru_cache(maxsize=1)
def _landlock_abi() -> tuple[int, str]:
    """(ABI version, "") when the kernel enforces landlock, else (0, why not).

    Asked of the kernel, not read from /sys/kernel/security/lsm: securityfs is often not mounted
    (in containers, on our CI) even where landlock is enforced.
    """
    libc = _libc()
    if libc is None:
        return 0, "not Linux"
    abi = libc.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_long(0),
                       ctypes.c_long(_LANDLOCK_CREATE_RULESET_VERSION))
    if abi >= 1:
        return int(abi), ""
    code = ctypes.get_errno()
    if code == errno.ENOSYS:
        return 0, "kernel has no landlock LSM (no landlock system calls)"
    if code == errno.EOPNOTSUPP:
        return 0, "kernel has no landlock LSM (built in but not enabled at boot)"
    return 0, f"landlock_create_ruleset failed: {os.strerror(code)}"


@lru_cache(maxsize=1)
def _can_unshare_network() -> tuple[bool, str]:
    """Whether a child can get a network namespace of its own: tried once, in a throwaway child."""
    libc = _libc()
    if libc is None:
        return False, "not Linux"
    pid = os.fork()
    if pid == 0:    # the child only makes the call and exits: safe even in a threaded parent
        code = 0 if libc.unshare(_CLONE_NEWNET) == 0 else (ctypes.get_errno() or 255)
        os._exit(min(code, 255))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return (True, "") if code == 0 else (False, f"unshare(CLONE_NEWNET): {os.strerror(code) if code > 0 else code}")


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    """chown `path` and everything under it, never following a symbolic link.

    fwalk works on directory descriptors, so a link swapped in for a folder while we walk (by a
    process of the sandbox that is still alive) cannot lead us out of the tree.
    """
    os.chown(path, uid, gid, follow_symlinks=False)
    if not path.is_dir() or path.is_symlink():
        return
    for _, dirs, files, dir_fd in os.fwalk(path, follow_symlinks=False):
        for name in dirs + files:
            try:
                os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                pass


def _landlock_rules(private_tmp: Path, writable: Iterable[Path], abi: int) -> list[tuple[str, int]]:
    """(path, allowed writes) for each place the sandbox may write; everything else is read-only."""
    tree = _handled_writes(abi) & ~_DEVICE_NODES
    rules = [(str(private_tmp), tree)]
    for path in writable:
        rules.append((str(path), tree if path.is_dir() else _FILE_WRITES & _handled_writes(abi)))
    # Device files are written to, not created: /dev/null, the terminal, and the GPU, which CUDA
    # opens read-write. /dev/shm holds POSIX shared memory and semaphores (multiprocessing, NCCL).
    rules.append(("/dev", _FILE_WRITES & _handled_writes(abi)))
    if os.path.isdir("/dev/shm"):
        rules.append(("/dev/shm", tree))
    # cuInit writes under /proc/self/task and fails (error 304) when refused, as seen on the H200.
    # A rule on /proc/self would cover the sandbox's first process only, not the children it
    # starts; all of /proc (existing files) is safe because what is written there is guarded
    # again by owner (root's files stay root's) and by landlock's own ptrace check (no other
    # process's mem).
    rules.append(("/proc", _FILE_WRITES & _handled_writes(abi)))
    return rules


def _handled_writes(abi: int) -> int:
    handled = (_FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE_CHAR | _FS_MAKE_DIR | _FS_MAKE_REG
               | _FS_MAKE_SOCK | _FS_MAKE_FIFO | _FS_MAKE_BLOCK | _FS_MAKE_SYM)
    if abi >= 2:
        handled |= _FS_REFER
    if abi >= 3:
        handled |= _FS_TRUNCATE
    return handled


def prepare_sandbox(uid: int | None, writable: Iterable[Path] = (), mounted: Iterable[Path] = ()
                    ) -> tuple[Path, Confinement]:
    """A fresh private temporary folder, `writable` handed to `uid`, and what preexec will enforce.
    Paths in `mounted` are writable too, but the sandbox reaches them through a bind mount of its own
    (spawn.with_binds), so the folders above them need not be open to it.

    Every decision is made here, by detection, so that the record states what was in force and
    preexec only carries it out (or fails the start: it never silently does less).
    """
    writable = [Path(p).absolute() for p in writable]
    mounted = {Path(p).absolute() for p in mounted}
    for path in writable:
        if not path.exists():
            raise FileNotFoundError(f"writable path {path} does not exist")
    notes: list[str] = []
    root = can_drop_privileges()
    separate = uid is not None and root
    if uid is not None and not _is_sandbox_uid(uid):
        raise ValueError(f"uid {uid} is not a sandbox uid (sandbox_uid(slot) gives one)")
    private_tmp = Path(tempfile.mkdtemp(prefix=f"harness-sandbox-{uid if separate else os.getpid()}-", dir="/tmp"))
    os.chmod(private_tmp, 0o700)
    if separate:
        os.chown(private_tmp, uid, uid)
        for path in writable:
            _chown_tree(path, uid, uid)
        # Owning a folder is no use if a folder above it (e.g. /root, mode 0700) cannot be entered.
        hidden = unreachable_paths(uid, [p for p in writable if p not in mounted])
        if hidden:
            release_sandbox(private_tmp, writable)
            raise PermissionError(f"uid {uid} cannot reach {', '.join(hidden)}: a folder above is closed to it")

    network_ok, network_why = _can_unshare_network() if root else (False, "not root")
    if not network_ok:
        notes.append(f"no network namespace ({network_why}): the candidate can reach the network")

    abi, landlock_why = _landlock_abi()
    if not separate:
        why = "no separate user requested" if uid is None else f"not root (euid {os.geteuid()}): no separate user"
        if abi >= 6:
            left = "landlock still limits its writes, signals and ptrace, but it can read all the judge can"
        elif abi:
            left = "landlock still limits its writes and ptrace, but it can signal the judge and read all it can"
        else:
            left = "it can signal and ptrace the judge, and read and write all the judge can"
        notes.insert(0, f"{why}: the candidate runs as the judge's user; {left} (the record key included)")
    if abi:
        rules = _landlock_rules(private_tmp, writable, abi)
        landlock = "filesystem writes limited to " + ", ".join(
            path if allowed & _FS_MAKE_REG else f"{path} (existing files)" for path, allowed in rules)
        if abi >= 6:
            landlock += "; signals and abstract unix sockets limited to the sandbox"
        landlock += f" (ABI {abi})"
    else:
        landlock = f"unavailable: {landlock_why}"

    seccomp_ok, seccomp_why = _seccomp_available()
    seccomp = SECCOMP_FILTER if seccomp_ok else f"unavailable: {seccomp_why}"
    confinement = Confinement(
        user=f"uid {uid}" if separate else "", private_tmp=str(private_tmp), env_scrubbed=True,
        no_new_privs=_libc() is not None, network=NETWORK_NONE if network_ok else NETWORK_HOST,
        landlock=landlock, seccomp=seccomp, notes=tuple(notes), writable=tuple(str(p) for p in writable),
        landlock_abi=abi)
    return private_tmp, confinement


def sandbox_env(private_tmp: Path, keep: dict[str, str]) -> dict[str, str]:
    """The whole environment of a sandbox: a fixed minimum plus exactly `keep`, nothing from os.environ."""
    path = [os.path.dirname(sys.executable)]        # the venv's bin: python, and ninja for builds
    if keep.get("CUDA_HOME"):
        path.append(os.path.join(keep["CUDA_HOME"], "bin"))
    env = {
        "PATH": os.pathsep.join(dict.fromkeys(path + list(SAFE_PATH))),
        "HOME": str(private_tmp), "TMPDIR": str(private_tmp), "TMP": str(private_tmp),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
        # OpenMP threads that spin after a call burn CPU the judge counts as hidden work.
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    clash = sorted(set(keep) & set(env))
    if clash:
        raise ValueError(f"sandbox_env sets {', '.join(clash)} itself; keep may not override it")
    return env | {name: str(value) for name, value in keep.items()}


def preexec(uid: int | None, confinement: Confinement) -> Callable[[], None]:
    """The preexec_fn that puts `confinement` in force in the child, between fork and exec.

    Everything is looked up here, in the parent; the child makes system calls only. Each step
    that the confinement promises either succeeds or the start fails (Popen raises): a record
    must never claim more than was in force. PR_SET_PDEATHSIG ties the child to the thread that
    called Popen, so call Popen from a thread that outlives the sandbox.
    """
    if confinement.separate_user and (uid is None or confinement.user != f"uid {uid}"):
        raise ValueError(f"preexec for uid {uid} with a confinement for {confinement.user!r}")
    libc = _libc()
    if libc is None:
        raise OSError("confinement needs Linux")
    parent = os.getpid()
    drop = uid if confinement.separate_user else None
    unshare_net = confinement.network == NETWORK_NONE
    abi = confinement.landlock_abi
    if abi:
        writes = _handled_writes(abi)
        rules = [(path.encode(), _PathBeneathAttr(allowed, -1)) for path, allowed in
                 _landlock_rules(Path(confinement.private_tmp), [Path(p) for p in confinement.writable], abi)]
        scoped = (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0
        ruleset = _RulesetAttr(writes, 0, scoped)
        ruleset_size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else ctypes.sizeof(ctypes.c_uint64)
        ruleset_ref, syscall = ctypes.byref(ruleset), libc.syscall
        # syscall(2) reads every argument as a long: pass longs, not 32-bit ints with loose upper halves.
        create, add, restrict = (ctypes.c_long(n) for n in (_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE,
                                                            _SYS_LANDLOCK_RESTRICT_SELF))
        size, path_beneath, no_flags = ctypes.c_long(ruleset_size), ctypes.c_long(_LANDLOCK_RULE_PATH_BENEATH), ctypes.c_long(0)
    core_limit, open_path, sigkill = (0, 0), os.O_PATH | os.O_CLOEXEC, int(signal.SIGKILL)
    seccomp = _seccomp_program() if confinement.seccomp == SECCOMP_FILTER else None

    def fail(step: str) -> None:
        code = ctypes.get_errno()
        message = f"sandbox confinement failed at {step}: {os.strerror(code)}"
        os.write(2, message.encode() + b"\n")    # Popen itself only says "Exception occurred in preexec_fn"
        raise OSError(code, message)

    def confine() -> None:
        if unshare_net and libc.unshare(_CLONE_NEWNET) != 0:
            fail("unshare(CLONE_NEWNET)")
        ruleset_fd = -1
        if abi:    # built while still root, so every path can be opened; enforced last
            ruleset_fd = syscall(create, ruleset_ref, size, no_flags)
            if ruleset_fd < 0:
                fail("landlock_create_ruleset")
            for path, rule in rules:
                rule.parent_fd = os.open(path, open_path)
                added = syscall(add, ctypes.c_long(ruleset_fd), path_beneath, ctypes.byref(rule), no_flags)
                os.close(rule.parent_fd)
                if added != 0:
                    fail(f"landlock_add_rule({path.decode()})")
        resource.setrlimit(resource.RLIMIT_CORE, core_limit)
        os.umask(0o077)
        if drop is not None:
            os.setgroups([])
            os.setresgid(drop, drop, drop)
            os.setresuid(drop, drop, drop)
            if os.getuid() != drop or os.geteuid() != drop:
                raise OSError(errno.EPERM, "sandbox confinement failed: uid did not change")
        # After the uid change, which clears the parent-death signal.
        if libc.prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0) != 0:
            fail("PR_SET_PDEATHSIG")
        if os.getppid() != parent:    # the judge died before the line above: nobody will wait for us
            os.kill(os.getpid(), sigkill)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            fail("PR_SET_NO_NEW_PRIVS")
        if abi:
            if syscall(restrict, ctypes.c_long(ruleset_fd), no_flags) != 0:
                fail("landlock_restrict_self")
            os.close(ruleset_fd)
        if seccomp is not None and libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER,
                                              ctypes.addressof(seccomp[0]), 0, 0) != 0:
            fail("PR_SET_SECCOMP")

    return confine


def unreachable_paths(uid: int | None, paths: Iterable[str | Path]) -> list[str]:
    """Those of `paths` the sandbox user could not read (and, for folders and programs, enter or run).

    Worth asking once before the first sandbox: an interpreter under /root (mode 0700) is
    invisible to every sandbox uid, and Popen would only say "Permission denied".
    """
    paths = [str(p) for p in paths]
    if uid is None or not can_drop_privileges() or not paths:
        return []
    if not _is_sandbox_uid(uid):
        raise ValueError(f"uid {uid} is not a sandbox uid")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            bad = []
            for path in paths:
                mode = os.R_OK
                try:
                    info = os.stat(path)    # an owner-executable file is a program: it must run too
                    if stat.S_ISDIR(info.st_mode) or info.st_mode & stat.S_IXUSR:
                        mode |= os.X_OK
                except OSError:
                    pass
                if not os.access(path, mode):
                    bad.append(path)
            os.write(write_end, "\0".join(bad).encode())
            code = 0
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        answer = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError(f"could not check paths as uid {uid}")
    return answer.split("\0") if answer else []


def _live_pids(uid: int) -> list[int]:
    """Processes whose real uid is `uid` and that are not yet dead (zombies are)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as handle:
                status = handle.read().decode(errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        state, uids = fields.get("State", "").split(), fields.get("Uid", "").split()
        if uids and uids[0] == str(uid) and state and state[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def _kill_all_as(uid: int) -> None:
    """kill(-1, SIGKILL) as `uid`: every process that uid may signal, whatever its session or parent."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            # Only once we are that uid and nothing more: kill(-1) as root would kill the machine.
            if os.getuid() == uid and os.geteuid() == uid and uid != 0:
                os.kill(-1, signal.SIGKILL)    # Linux spares the caller itself
                code = 0
        except BaseException:
            pass
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        log.warning("the killer process for uid %d failed (status %d)", uid, status)


def kill_user(uid: int | None) -> int:
    """Kill every process of a sandbox uid, daemons included; returns how many were alive at the start."""
    if uid is None:
        return 0
    if not _is_sandbox_uid(uid) or uid == os.geteuid():
        raise ValueError(f"refusing to kill every process of uid {uid}: not a sandbox uid")
    alive = _live_pids(uid)
    count = len(alive)
    if alive and not can_drop_privileges():
        log.warning("%d processes of uid %d are alive and only root can kill them", count, uid)
        return count
    deadline = time.monotonic() + KILL_WAIT_S
    while alive and time.monotonic() < deadline:
        _kill_all_as(uid)
        time.sleep(0.01)    # SIGKILL is delivered when the process next runs
        alive = _live_pids(uid)
    if alive:
        log.warning("uid %d: processes %s still alive %.0f s after SIGKILL (stuck in the kernel?)",
                    uid, alive, KILL_WAIT_S)
    return count


def release_sandbox(private_tmp: Path, writable: Iterable[Path] = ()) -> None:
    """Remove the private folder and take `writable` back; call after kill_user, so nothing is writing."""
    if can_drop_privileges():
        owner = os.geteuid(), os.getegid()
        for path in writable:
            if os.path.lexists(path):
                _chown_tree(Path(path), *owner)
    else:
        _make_removable(Path(private_tmp))
    shutil.rmtree(private_tmp)


def _make_removable(top: Path) -> None:
    """Without root, a folder the candidate made read-only (chmod 0500) would stop rmtree."""
    os.chmod(top, stat.S_IRWXU)
    for _, dirs, _, dir_fd in os.fwalk(top, follow_symlinks=False):
        for name in dirs:    # before fwalk descends into them
            os.chmod(name, stat.S_IRWXU, dir_fd=dir_fd)
