"""Optional peers (liger, quack): registered when importable, else listed with the reason."""
from ._registry import register_unavailable

register_unavailable("liger", kind="baseline", reason="liger-kernel is not installed (pip install liger-kernel)")
register_unavailable("quack", kind="baseline", reason="quack-kernels is not installed (pip install quack-kernels)")
