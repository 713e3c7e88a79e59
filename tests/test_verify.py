"""The judge's verification summary, without a GPU or a sandbox process: what each error column holds across
trials. A stand-in sandbox runs the reference in this process and writes its outputs into the arena."""
import itertools

import torch

from harness import verify
from harness.judge import Exchange, Judge, layout_end
from harness.problem import select_shapes
from harness.protocol import EvaluateJob, Reply
from tests.conftest import REPO


class InProcessSandbox:
    """Answers the judge's requests as an honest sandbox would, with the reference as the candidate."""

    def __init__(self, judge: Judge, model):
        self.judge, self.model, self.layout = judge, model, None

    def ask(self, op: str, copied_bytes: int = 0, **args) -> Exchange:
        judge, data = self.judge, {}
        if op == "layout":
            self.layout = args
        elif op == "call":
            layout = judge.layouts[self.layout["shape"]]
            inputs = [judge.arena_view(offset, tuple(shape), torch.float32).clone()
                      for offset, shape in zip(layout.in_offsets[args["slot"]], layout.inputs)]
            outputs = []
            for out_slot in args["out_slots"]:
                out = self.model(*inputs)
                judge.arena_view(layout.out_offsets[out_slot], layout.output, torch.float32).copy_(out)
                outputs.append({"shape": list(out.shape), "dtype": "float32", "plain": "", "copied": True})
            data = {"outputs": outputs, "threads_before": 1, "threads_after": 1, "inputs_changed": -1}
        return Exchange(Reply(op, True, data=data), 0.0, 0.0)


def test_max_abs_err_is_the_largest_over_trials_not_the_worst_relative_trials(monkeypatch):
    job = EvaluateJob(device="cpu", problem_path=str(REPO / "problems" / "scalar_gated_delta.yaml"), shapes=("seed",),
                      timing={}, judge={}, secret_seed=7, results_path="")
    judge = Judge(job, emit=None)
    shape = select_shapes(judge.problem, ["seed"])[0]
    layout = judge.layout_for(shape, 1)
    judge.layouts[shape.name] = layout
    judge.arena_bytes = torch.zeros(layout_end(layout), dtype=torch.uint8)
    judge.sandbox = InProcessSandbox(judge, judge.gold_model.float())
    trials = len(list(verify.trials_for(judge.problem, judge.secret_seed, shape)))
    assert trials >= 2
    # scripted (abs, rel) per trial: the largest absolute error comes first, the worst relative one last
    scripted = iter([(3e-4, 0.01)] + [(1e-4, 0.02)] * (trials - 2) + [(2e-4, 0.05)])
    calls = itertools.count()

    def scripted_compare(out, gold, problem):
        if next(calls) % 2:          # the second call on the same inputs (D105): equal
            return 0.0, 0.0, True, ""
        max_abs, rel = next(scripted)
        return max_abs, rel, True, ""

    monkeypatch.setattr(verify, "compare", scripted_compare)
    result = judge.verify(shape, layout, False)
    assert result["trials"] == trials
    assert (result["max_abs_err"], result["max_rel_err"]) == (3e-4, 0.05)
