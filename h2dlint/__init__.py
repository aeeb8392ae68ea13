"""h2dlint: find and fix PyTorch code that stalls the GPU stream."""

__version__ = "0.1.0"
