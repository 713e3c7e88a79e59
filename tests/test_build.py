"""Build stage: toolkit detection, cache keys, and a real CUDA compile where nvcc is present."""
from dataclasses import replace
from pathlib import Path

import pytest

from harness import build as build_stage
from harness.discovery import discover
from harness.env import collect_env, cuda_home
from tests.conftest import REPO


def fake_toolkit(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (root / "include" / "cuda_runtime.h").write_text("")
    return root


def test_cuda_home_sees_through_a_wrapper_nvcc(tmp_path, monkeypatch):
    toolkit = fake_toolkit(tmp_path / "cuda-13.0")
    wrapper_dir = tmp_path / "wrapper" / "bin"
    wrapper_dir.mkdir(parents=True)
    (wrapper_dir / "nvcc").write_text(f"#!/bin/sh\nexec {toolkit}/bin/nvcc \"$@\"\n")
    (wrapper_dir / "nvcc").chmod(0o755)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(wrapper_dir))
    found = cuda_home()
    # the wrapper's own folder has no include/cuda_runtime.h, so it is never taken
    assert found != str(wrapper_dir.parent)
    if not Path("/usr/local/cuda/bin/nvcc").exists():
        assert found == ""


def test_cuda_home_prefers_a_valid_env_setting(tmp_path, monkeypatch):
    toolkit = fake_toolkit(tmp_path / "toolkit")
    monkeypatch.setenv("CUDA_HOME", str(toolkit))
    assert cuda_home() == str(toolkit)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nothing-here"))
    assert cuda_home() != str(tmp_path / "nothing-here")


@pytest.fixture(scope="module")
def env():
    return collect_env("cpu")


def test_build_key_changes_with_source_torch_and_arch(env, tmp_path):
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    b = tmp_path / "b.py"
    b.write_text("x = 2\n")
    ca, cb = discover([a, b])
    assert build_stage.build_key(ca, env, "9.0") != build_stage.build_key(cb, env, "9.0")
    assert build_stage.build_key(ca, env, "9.0") != build_stage.build_key(ca, env, "8.0")
    assert build_stage.build_key(ca, env, "9.0") != build_stage.build_key(ca, replace(env, torch="0.0"), "9.0")
    assert build_stage.build_key(ca, env, "9.0") == build_stage.build_key(ca, env, "9.0")


def test_arch_list_order(env):
    assert build_stage.arch_list("8.0;9.0", env, "9.0") == "8.0;9.0"
    assert build_stage.arch_list("auto", replace(env, compute_capability="9.0"), "7.5") == "9.0"
    assert build_stage.arch_list("auto", replace(env, compute_capability=""), "7.5") == "7.5"


def test_same_extension_name_in_two_candidates_never_collides(tmp_path, env):
    a = tmp_path / "one" / "same.py"
    b = tmp_path / "two" / "same.py"
    for path, value in ((a, 1), (b, 2)):
        path.parent.mkdir()
        path.write_text(f"load_inline(name='ext')  # {value}\n")
    ca, cb = discover([a, b])
    assert ca.id != cb.id
    assert build_stage.build_dir_for(tmp_path, ca, env, "9.0") != build_stage.build_dir_for(tmp_path, cb, env, "9.0")


@pytest.mark.nvcc
@pytest.mark.slow
def test_shipped_cuda_candidate_compiles_for_real(tmp_path, env):
    candidate = discover([REPO / "candidates" / "scalar_gated_delta" / "v1_block_shared.py"])[0]
    result = build_stage.build_one(candidate, True, env, "9.0", tmp_path, 900)
    assert result.status == "ok", result.log_path.read_text()[-3000:]
    assert result.compile_s > 0 and not result.cached
    assert list((result.build_dir / "ext").rglob("*.so")), "the extension library was built"
    again = build_stage.build_one(candidate, True, env, "9.0", tmp_path, 900)
    assert again.status == "ok" and again.cached, "an unchanged candidate is never rebuilt"


@pytest.mark.slow
def test_corrupt_cache_entry_is_detected_and_rebuilt(tmp_path, env):
    candidate = discover([REPO / "tests" / "fixtures" / "cpu_zeros.py"])[0]
    first = build_stage.build_one(candidate, False, env, "9.0", tmp_path, 900)
    assert first.status == "ok" and not first.cached, first.log_path.read_text()[-2000:]
    assert build_stage.build_one(candidate, False, env, "9.0", tmp_path, 900).cached
    library = next((first.build_dir / "ext").rglob("*.so"))
    library.write_bytes(b"truncated")
    again = build_stage.build_one(candidate, False, env, "9.0", tmp_path, 900)
    assert again.status == "ok" and not again.cached, "a corrupt library must be rebuilt, not trusted"
    assert next((again.build_dir / "ext").rglob("*.so")).read_bytes() != b"truncated"


@pytest.mark.slow
def test_a_build_killed_half_way_is_started_afresh(tmp_path, env):
    """A compile killed by its time limit (or a SIGKILL) can leave torch's `lock` file in the extension
    folder; torch up to 2.11 (the GPU machines') then waits on it forever in the next build of that folder
    (later versions hold an OS lock instead). With no recorded success the harness empties the folder."""
    candidate = discover([REPO / "tests" / "fixtures" / "cpu_zeros.py"])[0]
    first = build_stage.build_one(candidate, False, env, "9.0", tmp_path, 900)
    assert first.status == "ok", first.log_path.read_text()[-2000:]
    (first.build_dir / "built.json").unlink()                   # killed before it could record success
    library = next((first.build_dir / "ext").rglob("*.so"))
    (library.parent / "lock").write_text("")                    # torch 2.11's build lock, left behind
    half_written = library.parent / "half_written.o"
    half_written.write_text("")
    again = build_stage.build_one(candidate, False, env, "9.0", tmp_path, 240)
    assert again.status == "ok" and not again.cached, f"{again.status}: {again.reason}"
    assert not half_written.exists(), "the half-finished build was reused"


def test_compiles_run_at_a_lower_priority_than_evaluations_and_see_no_gpu(tmp_path, env, monkeypatch):
    """A compile beside an evaluation yields the cores to the judge (build.BUILD_NICENESS), and its code cannot
    reach the GPU the judge times on (spawn.gpu_masks; test_spawn shows the masks at work)."""
    asked = {}

    def spawn(*args, **kwargs):
        asked.update(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(build_stage, "spawn_worker", spawn)
    candidate = discover([REPO / "tests" / "fixtures" / "cpu_zeros.py"])[0]
    with pytest.raises(RuntimeError, match="stop here"):
        build_stage.build_one(candidate, False, env, "9.0", tmp_path, 900)
    assert asked["niceness"] == build_stage.BUILD_NICENESS > 0
    assert asked["hide_gpus"] is True
