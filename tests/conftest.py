import os
import sys

# Kernels must see TRITON_INTERPRET before they are defined: strategies decides it on import.
os.environ.setdefault("NORMBENCH_QUIET", "1")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)

# Where the environment sets PYTHONDONTWRITEBYTECODE (this machine's does), every CLI
# call the tests make — a fresh interpreter, or a fork of tests/forkcli.py's server, which has
# imported no normbench module — compiles normbench's ~70 modules from source: 0.3-0.4 s of a
# call that takes 1.4 s forked.  They are compiled once here into their __pycache__ (ignored
# by git), which Python still reads under that setting; a source changed since is compiled
# afresh, as always (py_compile writes whatever that setting says).
if os.environ.get("PYTHONDONTWRITEBYTECODE"):
    import compileall
    for _sub in ("harness", "strategies", "normbench", "bench", "tests"):
        compileall.compile_dir(os.path.join(_ROOT, _sub), quiet=1)

import pytest  # noqa: E402
import torch  # noqa: E402

# Before any test module can import triton by another path (a harness module that reads its
# version, Inductor): Triton's own jit functions (tl.sum …) are interpreted only if
# TRITON_INTERPRET is set when triton.language is first imported, and strategies sets it.
from normbench import strategies  # noqa: E402,F401


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def poisoned(monkeypatch):
    """Every float tensor torch.empty / empty_like returns is filled with NaN, so an output
    element an implementation forgets to write shows up as NaN in the comparison."""
    real_empty, real_like = torch.empty, torch.empty_like

    def poison(t):
        if t.requires_grad:        # a leaf that requires grad can't be filled (Inductor makes some)
            return t
        if t.is_floating_point():
            t.fill_(float("nan"))
        elif t.dtype in (torch.int32, torch.int64):
            t.fill_(-7)
        return t

    monkeypatch.setattr(torch, "empty", lambda *a, **k: poison(real_empty(*a, **k)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **k: poison(real_like(*a, **k)))
    yield


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    """(folder for a test's plugin module, PYTHONPATH naming it and the checkout): one for a
    test module's plugin tests, so that their environments are one for tests/forkcli.py
    (NORMBENCH_* aside) and its server forks every call but the first, where a folder of each
    test's made each test's first call a plain `python run_bench.py` (torch and pandas
    imported afresh)."""
    folder = tmp_path_factory.mktemp("plugins")
    return folder, f"{_ROOT}{os.pathsep}{folder}"
