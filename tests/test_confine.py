"""Confinement: a child started as a sandbox really runs apart from its (root) parent.

The tests that start sandboxes need root (as on CI and the GPU machine); without it they skip and
say so. Each child reports what it could do as one JSON line on stdout.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from harness.confine import (NETWORK_NONE, SANDBOX_UID_BASE, Confinement, can_drop_privileges, kill_user,
                             prepare_sandbox, preexec, release_sandbox, sandbox_env, sandbox_uid, unreachable_paths)
from harness.spawn import sandbox_slot

REPO = Path(__file__).resolve().parent.parent
# High slots, so that a test never shares a uid with a runner's sandboxes (slots from 0 up).
PROBE_SLOT, DAEMON_SLOT, DEATH_SLOT = 63, 62, 61
# Python 3.12 warns about every fork in a threaded process; confine's fork children only make system calls.
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
needs_root = pytest.mark.skipif(not can_drop_privileges(),
                                reason="needs root (euid 0 on Linux): only root can give a sandbox its own uid")


@pytest.fixture(autouse=True)
def held_slots():
    """The slots these tests use by number, held the way a runner holds its sandboxes' (spawn.sandbox_slot), so
    that a harness run beside them (another pytest worker's) never gives one of their users to its sandbox."""
    with contextlib.ExitStack() as stack:
        for slot in (PROBE_SLOT, DAEMON_SLOT, DEATH_SLOT):
            stack.enter_context(sandbox_slot(slot, 1))
        yield

PROBE = textwrap.dedent("""
    import json, os, socket, sys
    parent, forbidden = int(sys.argv[1]), sys.argv[2]
    def attempt(action):
        try:
            action()
            return "ok"
        except OSError as exc:
            return type(exc).__name__
    def write(path):
        with open(path, "w") as handle:
            handle.write("x")
    def read(path):
        with open(path, "rb") as handle:
            handle.read()
    def connect():
        socket.create_connection(("192.0.2.1", 80), timeout=1).close()
    def name_a_thread():    # what cuInit does under /proc/self/task (refused, CUDA fails with error 304)
        import threading
        ready, done = threading.Event(), threading.Event()
        worker = threading.Thread(target=lambda: (ready.set(), done.wait()))
        worker.start()
        ready.wait()
        try:
            write(f"/proc/self/task/{worker.native_id}/comm")
        finally:
            done.set()
            worker.join()
    print(json.dumps({
        "uid": [os.getuid(), os.geteuid(), os.getgid()],
        "groups": os.getgroups(),
        "env": dict(os.environ),
        "signal_parent": attempt(lambda: os.kill(parent, 0)),
        "read_parent_environ": attempt(lambda: read(f"/proc/{parent}/environ")),
        "write_forbidden": attempt(lambda: write(os.path.join(forbidden, "planted"))),
        "write_private_tmp": attempt(lambda: write(os.path.join(os.environ["TMPDIR"], "mine"))),
        "interfaces": sorted(name for _, name in socket.if_nameindex()),
        "connect": attempt(connect),
        "name_a_thread": attempt(name_a_thread),
        "no_new_privs": open("/proc/self/status").read().split("NoNewPrivs:")[1].split()[0],
    }))
""")


def sandbox_python(uid: int) -> str:
    """An interpreter the sandbox uid may run: ours, unless it lives somewhere private like /root."""
    for candidate in (sys.executable, shutil.which("python3", path="/usr/bin:/bin") or ""):
        if candidate and not unreachable_paths(uid, [candidate]):
            return candidate
    pytest.skip(f"no Python interpreter that uid {uid} may run ({sys.executable} is not reachable)")


def run_probe(uid: int | None, confinement: Confinement, private_tmp: Path, forbidden: Path,
              keep: dict[str, str]) -> dict:
    python = sandbox_python(uid) if uid is not None else sys.executable
    done = subprocess.run([python, "-c", PROBE, str(os.getpid()), str(forbidden)], capture_output=True,
                          text=True, timeout=20, env=sandbox_env(private_tmp, keep),
                          preexec_fn=preexec(uid, confinement), cwd="/")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def root_only_folder(tmp_path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o700)
    return folder


@pytest.fixture
def open_folder():
    """A root-owned folder any uid may enter (pytest's tmp_path is below a 0700 one)."""
    folder = Path(tempfile.mkdtemp(prefix="test-confine-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


@needs_root
def test_sandbox_child_is_cut_off_from_its_parent(root_only_folder, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_SECRET", "do-not-leak")
    uid = sandbox_uid(PROBE_SLOT)
    private_tmp, confinement = prepare_sandbox(uid)
    keep = {"CUDA_VISIBLE_DEVICES": "0", "MAX_JOBS": "2"}
    try:
        seen = run_probe(uid, confinement, private_tmp, root_only_folder, keep)
        assert confinement.separate_user and confinement.user == f"uid {uid}"
        assert seen["uid"] == [uid, uid, uid] and seen["groups"] == []
        assert seen["env"] == sandbox_env(private_tmp, keep)
        assert "HARNESS_TEST_SECRET" not in seen["env"]
        assert seen["signal_parent"] == "PermissionError"
        assert seen["read_parent_environ"] == "PermissionError"
        assert seen["write_forbidden"] == "PermissionError"
        assert not (root_only_folder / "planted").exists()
        assert seen["write_private_tmp"] == "ok"
        assert seen["name_a_thread"] == "ok"
        assert seen["no_new_privs"] == "1"
        assert (private_tmp / "mine").stat().st_uid == uid
        assert stat.S_IMODE(private_tmp.stat().st_mode) == 0o700
    finally:
        kill_user(uid)
        release_sandbox(private_tmp)
    assert not private_tmp.exists()


@needs_root
def test_sandbox_has_no_network(root_only_folder):
    uid = sandbox_uid(PROBE_SLOT)
    private_tmp, confinement = prepare_sandbox(uid)
    try:
        if confinement.network != NETWORK_NONE:
            pytest.skip(f"no network namespace on this machine: {confinement.notes}")
        seen = run_probe(uid, confinement, private_tmp, root_only_folder, {})
    finally:
        release_sandbox(private_tmp)
    assert seen["interfaces"] == ["lo"]
    assert seen["connect"] == "OSError"     # ENETUNREACH: not even a route


@needs_root
def test_writable_folder_is_handed_over_and_taken_back(open_folder, tmp_path):
    uid = sandbox_uid(PROBE_SLOT)
    with pytest.raises(PermissionError, match="cannot reach"):     # pytest's tmp_path is under a 0700 folder
        prepare_sandbox(uid, [tmp_path])
    job = open_folder / "job"
    (job / "sub").mkdir(parents=True)
    (job / "sub" / "input.txt").write_text("x")
    private_tmp, confinement = prepare_sandbox(uid, [job])
    try:
        assert {p.stat().st_uid for p in (job, job / "sub", job / "sub" / "input.txt")} == {uid}
        script = "import sys; open(sys.argv[1], 'w').write('result')"
        done = subprocess.run([sandbox_python(uid), "-c", script, str(job / "sub" / "result.txt")],
                              env=sandbox_env(private_tmp, {}), preexec_fn=preexec(uid, confinement),
                              capture_output=True, text=True, timeout=20, cwd="/")
        assert done.returncode == 0, done.stderr
    finally:
        kill_user(uid)
        release_sandbox(private_tmp, [job])
    owners = {p.stat().st_uid for p in job.rglob("*")} | {job.stat().st_uid}
    assert owners == {os.geteuid()}
    assert (job / "sub" / "result.txt").read_text() == "result"


@needs_root
def test_landlock_limits_writes_even_for_root(tmp_path, root_only_folder):
    """No separate user here, so only landlock stands between the child and the folder."""
    private_tmp, confinement = prepare_sandbox(None)
    try:
        if not confinement.landlock_abi:
            pytest.skip(f"landlock {confinement.landlock}")
        seen = run_probe(None, confinement, private_tmp, root_only_folder, {})
    finally:
        release_sandbox(private_tmp)
    assert seen["uid"] == [0, 0, 0]
    assert seen["write_forbidden"] == "PermissionError"
    assert seen["write_private_tmp"] == "ok"
    assert seen["name_a_thread"] == "ok"
    if confinement.landlock_abi >= 6:     # signal scoping: even root inside cannot signal out
        assert seen["signal_parent"] == "PermissionError"


@needs_root
@pytest.mark.gpu
def test_cuda_works_in_a_sandbox():
    uid = sandbox_uid(PROBE_SLOT)
    if unreachable_paths(uid, [sys.executable]):
        pytest.skip(f"uid {uid} cannot run {sys.executable}, the interpreter that has torch")
    private_tmp, confinement = prepare_sandbox(uid)
    try:
        done = subprocess.run([sys.executable, "-c", "import torch; print(torch.ones(3, device='cuda').sum().item())"],
                              env=sandbox_env(private_tmp, {"CUDA_VISIBLE_DEVICES": "0"}), capture_output=True,
                              text=True, timeout=120, preexec_fn=preexec(uid, confinement), cwd="/")
    finally:
        kill_user(uid)
        release_sandbox(private_tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3.0"


DAEMON = textwrap.dedent("""
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(sys.argv[1], "w") as handle:
                handle.write(str(os.getpid()))
            time.sleep(60)
        os._exit(0)
    os.wait()
""")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as handle:
            return "\nState:\tZ" not in handle.read()
    except FileNotFoundError:
        return False


@needs_root
def test_kill_user_kills_a_detached_daemon():
    uid = sandbox_uid(DAEMON_SLOT)
    private_tmp, confinement = prepare_sandbox(uid)
    pid_file = private_tmp / "daemon.pid"
    try:
        # DEVNULL: a daemon holding our pipes open would keep run() waiting for their end.
        done = subprocess.run([sandbox_python(uid), "-c", DAEMON, str(pid_file)], env=sandbox_env(private_tmp, {}),
                              preexec_fn=preexec(uid, confinement), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20, cwd="/")
        assert done.returncode == 0
        deadline = time.monotonic() + 5
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.01)
        daemon = int(pid_file.read_text())
        assert alive(daemon), "the daemon should outlive the process that started it"
        assert kill_user(uid) >= 1
        assert not alive(daemon)
        assert kill_user(uid) == 0
    finally:
        kill_user(uid)
        release_sandbox(private_tmp)


@needs_root
def test_sandbox_dies_with_its_judge():
    """PR_SET_PDEATHSIG must be set after the uid change, which would clear it."""
    uid = sandbox_uid(DEATH_SLOT)
    judge = textwrap.dedent(f"""
        import subprocess, sys, time
        from harness.confine import preexec, prepare_sandbox, sandbox_env
        tmp, confinement = prepare_sandbox({uid})
        child = subprocess.Popen([sys.argv[1], "-c", "import time; time.sleep(60)"], env=sandbox_env(tmp, {{}}),
                                 preexec_fn=preexec({uid}, confinement), cwd="/")
        print(child.pid, tmp, flush=True)
        time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", judge, sandbox_python(uid)], stdout=subprocess.PIPE, text=True,
                               cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        child, private_tmp = process.stdout.readline().split()
        assert alive(int(child))
        process.kill()
        process.wait()
        deadline = time.monotonic() + 5
        while alive(int(child)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not alive(int(child))
    finally:
        process.kill()
        process.wait()
        kill_user(uid)
    release_sandbox(Path(private_tmp))


@needs_root
def test_unreachable_paths_sees_what_the_sandbox_user_sees(root_only_folder):
    secret = root_only_folder / "key"
    secret.write_text("x")
    uid = sandbox_uid(PROBE_SLOT)
    assert unreachable_paths(uid, [secret, "/bin/sh", "/"]) == [str(secret)]


def test_kill_user_refuses_uids_that_are_not_sandboxes():
    # kill(-1) as root would take the whole machine down with it.
    for uid in (0, os.geteuid(), SANDBOX_UID_BASE - 1, SANDBOX_UID_BASE + 64):
        with pytest.raises(ValueError):
            kill_user(uid)
    assert kill_user(None) == 0


def test_sandbox_uids_are_bounded():
    assert sandbox_uid(0) == SANDBOX_UID_BASE and sandbox_uid(63) == SANDBOX_UID_BASE + 63
    for slot in (-1, 64):
        with pytest.raises(ValueError):
            sandbox_uid(slot)


def test_sandbox_env_passes_nothing_but_what_it_is_given(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    env = sandbox_env(tmp_path, {"CUDA_HOME": "/opt/cuda", "CUDA_VISIBLE_DEVICES": "1"})
    assert set(env) == {"PATH", "HOME", "TMPDIR", "TMP", "LANG", "LC_ALL", "PYTHONDONTWRITEBYTECODE",
                        "PYTHONNOUSERSITE", "OMP_WAIT_POLICY", "CUDA_HOME", "CUDA_VISIBLE_DEVICES"}
    assert env["HOME"] == env["TMPDIR"] == env["TMP"] == str(tmp_path)
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"
    path = env["PATH"].split(os.pathsep)
    assert path[0] == os.path.dirname(sys.executable) and "/opt/cuda/bin" in path
    with pytest.raises(ValueError):
        sandbox_env(tmp_path, {"HOME": "/root"})


def test_confinement_says_what_is_missing_without_root(monkeypatch):
    monkeypatch.setattr("harness.confine.can_drop_privileges", lambda: False)
    private_tmp, confinement = prepare_sandbox(sandbox_uid(PROBE_SLOT))
    try:
        assert not confinement.separate_user and confinement.user == ""
        assert confinement.network == "host"
        assert any("not root" in note for note in confinement.notes)
        assert json.loads(json.dumps(confinement.to_json()))["notes"] == list(confinement.notes)
    finally:
        release_sandbox(private_tmp)


def test_preexec_refuses_a_confinement_for_another_uid():
    private_tmp, confinement = prepare_sandbox(sandbox_uid(PROBE_SLOT))
    try:
        if not confinement.separate_user:
            pytest.skip("no separate user without root")
        with pytest.raises(ValueError):
            preexec(sandbox_uid(PROBE_SLOT - 1), confinement)
    finally:
        release_sandbox(private_tmp)
