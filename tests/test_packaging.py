"""Packaging: `pip install .` builds a wheel of harness/ alone, with the default config and a `harness` command."""
from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator

import pytest

from tests.conftest import REPO

# what a copy of the repository needs to leave behind: environments, caches, results and earlier builds
NOT_COPIED = shutil.ignore_patterns(".venv", ".cache", ".git", "results", "build", "*.egg-info", "__pycache__",
                                    ".pytest_cache")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Iterator[zipfile.ZipFile]:
    """Built offline from a copy of the repository, so that the build's own folders never land in the tree."""
    pytest.importorskip("setuptools", minversion="70.1", reason="building a wheel offline needs setuptools>=70.1")
    top = tmp_path_factory.mktemp("packaging")
    shutil.copytree(REPO, top / "src", ignore=NOT_COPIED)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                           "-w", str(top / "dist"), str(top / "src")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (top / "dist").glob("harness-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


def test_wheel_holds_the_harness_package_and_nothing_else(wheel):
    names = wheel.namelist()
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"harness"}, sorted(tops)
    modules = {path.relative_to(REPO).as_posix() for path in (REPO / "harness").rglob("*.py")}
    assert modules <= set(names), f"modules missing from the wheel: {sorted(modules - set(names))}"


def test_wheel_ships_the_default_config(wheel):
    assert wheel.read("harness/configs/default.yaml") == (REPO / "configs" / "default.yaml").read_bytes()


def test_wheel_installs_the_harness_command(wheel):
    (entry_points,) = [name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(entry_points).decode())
    assert dict(parser["console_scripts"]) == {"harness": "harness.cli:main"}
    from harness.cli import main
    assert callable(main)
