import pytest


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` run only where torch sees a CUDA GPU."""
    marked = [item for item in items if "cuda" in item.keywords]
    if not marked:
        return
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if not available:
        for item in marked:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is false)"))
