"""Gold answers replayed from a CUDA graph (verify.GoldGraphs): the same numbers as the eager reference, bit for
bit, or the eager reference itself."""
from pathlib import Path

import pytest
import torch

from harness.problem import import_reference, load_problem
from harness.verify import GoldGraphs, gold_output, make_inputs

ROOT = Path(__file__).resolve().parent.parent


def reference(name: str):
    problem = load_problem(ROOT / "problems" / f"{name}.yaml")
    return problem, import_reference(problem).Model(*problem.init_inputs).double().eval()


def test_on_the_host_every_gold_is_eager():
    problem, model = reference("scalar_gated_delta")
    golds = GoldGraphs(model, capture_at=1)
    inputs = make_inputs(problem, problem.shapes["seed"], None, 1, torch.device("cpu"))
    for _ in range(3):
        assert torch.equal(golds(inputs), gold_output(model, inputs))
    assert golds.summary() == {"replays": 0, "calls": 3, "eager": []}


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["scalar_gated_delta", "channel_gated_delta"])
def test_a_replayed_gold_equals_the_eager_one(name):
    problem, model = reference(name)
    model = model.cuda()
    golds = GoldGraphs(model)
    shape = problem.shapes["seed"]
    for seed in range(6):   # captured at the third call, replayed from the fourth, on new inputs each time
        inputs = make_inputs(problem, shape, None, seed, torch.device("cuda"))
        assert torch.equal(golds(inputs), gold_output(model, inputs))
    assert golds.summary()["replays"] == 3
    # a second signature is captured in its own graph and the first given up (keep=1)
    other = make_inputs(problem, problem.check_shapes["t33_d24"], None, 0, torch.device("cuda"))
    for _ in range(4):
        assert torch.equal(golds(other), gold_output(model, other))
    assert golds.summary()["replays"] == 4 and len(golds.graphs) == 1


class Syncing(torch.nn.Module):
    """A reference that reads a value back to the host mid-forward: it cannot be captured."""
    def forward(self, x):
        return x * float(x.abs().max().item())


@pytest.mark.gpu
def test_a_reference_that_cannot_be_captured_stays_eager():
    golds = GoldGraphs(Syncing())
    x = torch.randn(64, device="cuda")
    for _ in range(5):
        assert torch.equal(golds([x]), x.double() * float(x.double().abs().max().item()))
    assert golds.summary()["replays"] == 0
    assert golds.summary()["eager"] and golds.summary()["eager"][0].startswith("eager: ")
