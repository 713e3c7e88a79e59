import torch, time, sys
torch.set_num_threads(1)
a = torch.randn(2**24)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    b = a * 2.0
