"""Call one candidate's forward a few times at one shape, for a profiler to wrap (needs a GPU).

    ncu --clock-control none --set full -k regex:kern --launch-skip 2 --launch-count 1 -o v13_medium \
        python3 tools/profile_once.py --candidate candidates/scalar_gated_delta/v20_ws.py \
        --problem problems/scalar_gated_delta.yaml --shape medium
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.problem import load_problem, select_shapes  # noqa: E402
from harness.verify import make_inputs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--problem", required=True)
    parser.add_argument("--shape", default="medium")
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    problem = load_problem(args.problem)
    shape = select_shapes(problem, [args.shape])[0]
    spec = importlib.util.spec_from_file_location("candidate_under_test", args.candidate)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew().cuda()
    inputs = make_inputs(problem, shape, None, 0, torch.device("cuda"))
    for _ in range(args.calls):
        model(*inputs)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
