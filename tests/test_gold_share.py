"""The judges of one run draw the same inputs from the run's secret seed, so they share gold answers through a
folder only the runner's user can read (judge.Judge.gold_for); a folder anyone else can reach is never used."""
from __future__ import annotations

import os

import pytest
import torch

from harness import judge
from harness.config import load_config
from harness.protocol import EvaluateJob
from tests.conftest import REPO


def referee(gold_dir: str) -> judge.Judge:
    config = load_config()
    job = EvaluateJob(device="cpu", problem_path=str(REPO / "problems" / "scalar_gated_delta.yaml"), shapes=("seed",),
                      timing=dict(config.get("timing")), judge=dict(config.get("judge")), secret_seed=7,
                      results_path="", gold_dir=gold_dir)
    return judge.Judge(job, emit=lambda line: None)


def test_a_second_judge_reads_the_gold_the_first_computed(tmp_path):
    folder = tmp_path / "gold"
    folder.mkdir(mode=0o700)
    first, second = referee(str(folder)), referee(str(folder))
    shape = first.problem.shapes["seed"]
    inputs = first.draw(shape, None, 123)
    gold = first.gold_for(shape, None, 123, inputs)
    assert len(list(folder.iterdir())) == 1

    def never(inputs):
        raise AssertionError("the second judge computed the gold again")

    second.gold = never
    assert torch.equal(second.gold_for(shape, None, 123, second.draw(shape, None, 123)), gold)


@pytest.mark.parametrize("mode", [0o750, 0o705, 0o777])
def test_a_gold_folder_another_user_can_reach_is_not_used(tmp_path, mode):
    folder = tmp_path / "gold"
    folder.mkdir()
    os.chmod(folder, mode)
    shared = referee(str(folder))
    shape = shared.problem.shapes["seed"]
    inputs = shared.draw(shape, None, 5)
    planted = folder / f"{shared.problem.sha256[:16]}-seed-timing-5.pt"   # where a forged answer would be read
    torch.save(torch.zeros(1), planted)
    assert torch.equal(shared.gold_for(shape, None, 5, inputs), shared.gold(inputs))   # not the planted one
    assert [p.name for p in folder.iterdir()] == [planted.name]   # and nothing written there
    assert judge.shared_gold_folder(str(folder)) is None
    assert judge.shared_gold_folder("") is None and judge.shared_gold_folder(str(tmp_path / "missing")) is None
