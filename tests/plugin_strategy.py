"""A plugin strategy in one file, loaded with NORMBENCH_PLUGINS=tests.plugin_strategy: it must
appear in the report's tables, plots and widget with no edit anywhere else."""
import math

from normbench import strategies
from normbench.strategies import register

_torch = strategies.get("torch")


@register("test_plugin_rows", kind="strategy", deterministic_by_design=True, uses_groups=True,
          auto_groups=lambda rows, d, sm: 2,
          writers=lambda rows, g: math.ceil(rows / g),
          workspace=lambda rows, d, g, has_bias: 7 * g * d * (2 if has_bias else 1))
def backward(x, dy, weight, mean, rstd, *, groups):
    """PyTorch's backward, registered as a grouped strategy with a model of its own."""
    return _torch.fn(x, dy, weight, mean, rstd)
