"""Run one candidate's forward a few times at one shape, for ncu to profile: python ncu_candidate.py FILE SHAPE."""
import glob, os, sys
import torch
sys.path.insert(0, os.getcwd())
from harness.problem import load_problem
from harness.sandbox import import_file
from harness.verify import make_inputs
path, shape_name = sys.argv[1], sys.argv[2]
problem = load_problem("problems/scalar_gated_delta.yaml")
stem = os.path.splitext(os.path.basename(path))[0]
built = sorted(glob.glob(f"/tmp/rs_work/builds/{stem}_000-*/ext"))
if built:
    os.environ["TORCH_EXTENSIONS_DIR"] = built[0]
module = import_file(path, "candidate")
model = module.ModelNew(*problem.init_inputs).cuda()
inputs = make_inputs(problem, problem.shapes[shape_name], None, 1, torch.device("cuda"))
for _ in range(4):
    out = model(*inputs)
torch.cuda.synchronize()
print("ran", shape_name, tuple(out.shape))
