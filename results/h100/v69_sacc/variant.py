"""The step every make_v7x.py generator ends with: rename the extension and its binding after the new file, put
the file's header line on top, and write it under .gpu/."""
import subprocess
from pathlib import Path

ROOT = next(d for d in Path(__file__).resolve().parents if (d / "candidates").is_dir())


def write_variant(src: str, base: str, name: str, header: str) -> Path:
    bver, ver = base.split("_")[0], name.split("_")[0]
    for old, new in ((f'CPP_SRC = "void sgd_{bver}_forward(', f'CPP_SRC = "void sgd_{ver}_forward('),
                     (f'functions=["sgd_{bver}_forward"],', f'functions=["sgd_{ver}_forward"],'),
                     (f'name="sgd_{base}",', f'name="sgd_{name}",')):
        assert src.count(old) == 1, (name, old, src.count(old))
        src = src.replace(old, new)
    src = header + "\n" + src.replace(f"sgd_{bver}_forward", f"sgd_{ver}_forward")
    out = ROOT / ".gpu" / f"{name}.py"
    out.parent.mkdir(exist_ok=True)
    out.write_text(src)
    print("wrote", out)
    return out


def catalogue_source(name: str, commit: str) -> str:
    """A scalar catalogue file's source: from the tree while it is there, else from `commit`, which held it."""
    path = ROOT / "candidates/scalar_gated_delta" / f"{name}.py"
    if path.exists():
        return path.read_text()
    return subprocess.run(["git", "show", f"{commit}:candidates/scalar_gated_delta/{name}.py"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
