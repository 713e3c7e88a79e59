"""harness: check, compile, verify and time candidate CUDA kernels against a PyTorch reference."""
__version__ = "0.1.0"
