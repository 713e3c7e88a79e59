"""The worker's verification summary, without a GPU: what each error column holds across trials."""
import itertools

from harness import verify
from harness.problem import select_shapes
from harness.worker import Evaluation
from tests.conftest import REPO


def test_max_abs_err_is_the_largest_over_trials_not_the_worst_relative_trials(monkeypatch):
    evaluation = Evaluation({"device": "cpu", "problem_path": str(REPO / "problems" / "scalar_gated_delta.yaml"),
                             "timing": {}, "secret_seed": 7}, emit=None)
    shape = select_shapes(evaluation.problem, ["seed"])[0]
    trials = len(list(verify.trials_for(evaluation.problem, evaluation.secret_seed, shape)))
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
    result = evaluation.verify(evaluation.reference, shape)
    assert result["trials"] == trials
    assert (result["max_abs_err"], result["max_rel_err"]) == (3e-4, 0.05)
