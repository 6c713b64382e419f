"""The measuring child of a distributed run's worker (harness/gpuworker.py starts it through
harness/isolate.py).  torch, Triton and the strategies are imported when this module loads,
and the plugins as the child starts (its `ready`, measure.prepare_worker), so a fresh child's
start-up — the one after a timeout too — never counts against its first case's timeout_s."""
from __future__ import annotations

from normbench import strategies
from normbench.harness import env, model, placement, timing
from normbench.harness.measure import Settings, measure, worker_record
from normbench.harness.plan import Case


def child(payload):
    """("facts", None) -> this GPU's facts; ("measure", (case, settings)) -> its record."""
    kind, arg = payload
    if kind == "facts":
        return _describe()
    if kind == "measure":
        case, settings = arg
        return worker_record(measure(Case(**case), Settings(**settings)))
    raise ValueError(f"unknown request {kind!r}")


def _describe() -> dict:
    # the implementations first: a plugin this worker cannot load (NORMBENCH_PLUGINS naming a
    # module not installed on its node) stops the run here, not as an error record a case
    known = strategies.known()
    info = env.describe()
    info["implementations"] = known     # the driver checks its plan against them
    on_gpu = not info["interpreted"]
    info["where"] = placement.local_gpu_fields()
    info["copy_ceiling_gbps"] = timing.copy_ceiling_gbps(strategies.default_device(), on_gpu)
    info["peak_tbps"] = model.peak_tbps(info["device_name"], None) if on_gpu else None
    return info
