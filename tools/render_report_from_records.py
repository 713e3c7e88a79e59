"""Render report.html from a records file that has no results folder around it (no envs.jsonl), such as the
committed H200 corpus records, and optionally screenshot it with headless Chromium.

    python3 tools/render_report_from_records.py results/h200/checks/corpus_records.jsonl \
        --problem problems/scalar_gated_delta.yaml --device-name "NVIDIA H200" --driver 580.159.04 \
        --torch 2.11.0+cu130 --cuda 13.0 --out /tmp/report --screenshot results/h200/report/corpus_report.png
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.leaderboard import build_rows  # noqa: E402
from harness.problem import load_problem  # noqa: E402
from harness.records import read_records  # noqa: E402
from harness.report_html import write_report  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records")
    parser.add_argument("--problem", required=True)
    parser.add_argument("--device-name", required=True)
    parser.add_argument("--driver", default="")
    parser.add_argument("--torch", default="")
    parser.add_argument("--cuda", default="")
    parser.add_argument("--out", required=True, help="folder for report.html")
    parser.add_argument("--screenshot", help="PNG path: a 1400x2000 headless Chromium screenshot")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    records = read_records(Path(args.records))
    shapes = [s for s in problem.shapes if any(r.shape == s for r in records)]
    names = list(dict.fromkeys(r.candidate for r in records))
    order = [n for n in names if n.startswith("ref:")] + sorted(n for n in names if not n.startswith("ref:"))
    env = {"device": "cuda" if args.cuda else "cpu", "device_name": args.device_name, "driver": args.driver,
           "torch": args.torch, "torch_cuda": args.cuda, "harness_commit": "(not recorded with these records)"}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    page = write_report(out, problem, env, build_rows(records, order, shapes), shapes,
                        {"run_id": records[-1].run_id if records else "", "source": str(args.records)})
    print(page)
    if args.screenshot:
        browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)),
                       None)
        if browser is None:
            print("no chromium on PATH: no screenshot", file=sys.stderr)
            return 1
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,2000",
                        f"--screenshot={Path(args.screenshot).resolve()}", page.resolve().as_uri()], check=True,
                       capture_output=True, timeout=120)
        print(args.screenshot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
