"""bench/kernel_time.py's reading of a profiler trace: calls split at the flush kernel, busy
time and span per call (the figures that separate a peer's kernels from its host path)."""
import importlib.util
import json
import os

from normbench import strategies  # noqa: F401  (sets TRITON_INTERPRET before the script defines its kernel)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("kernel_time", os.path.join(ROOT, "bench", "kernel_time.py"))
kt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kt)


def test_calls_split_at_the_flush_and_nothing_before_the_first():
    trace = [("warm", 0, 5), (kt.MARK, 10, 50), ("a", 70, 100), ("b", 175, 5),
             (kt.MARK, 200, 50), ("a", 260, 90), ("b", 352, 4), (kt.MARK, 400, 50)]
    calls = kt.per_call(list(reversed(trace)))          # order by start time, not by list order
    assert calls == [[("a", 70, 100), ("b", 175, 5)], [("a", 260, 90), ("b", 352, 4)], []]
    s = kt.summarize(calls)
    assert s["kernel_us"] == (105 + 94) / 2             # busy time: the durations summed
    assert s["span_us"] == (110 + 96) / 2               # first start to last end: gaps count
    assert s["kernels"] == 2 and s["by_name"] == {"a": 95, "b": 4.5}
    assert s["busy_p10"] < s["kernel_us"] < s["busy_p90"]


def test_overlapping_kernels_span_less_than_their_sum():
    s = kt.summarize([[("a", 0, 100), ("b", 10, 100)]])
    assert s["kernel_us"] == 200 and s["span_us"] == 110


def test_a_programmatic_dependent_is_read_as_what_it_adds_after_the_first_kernel():
    """A reduce launched early (pdl) waits inside its record: first_us + after_first_us is
    the span, after_first_us what the call takes past its first kernel (a gap counts too)."""
    calls = [[("row", 0, 100), ("reduce", 5, 104)], [("row", 200, 110), ("reduce", 204, 110)]]
    s = kt.summarize(calls)
    assert s["first_us"] == 105 and s["after_first_us"] == 6.5 and s["span_us"] == 111.5
    s = kt.summarize([[("b", 20, 5), ("a", 0, 10)]])      # first by start, a gap after it
    assert s["first_us"] == 10 and s["after_first_us"] == 15


def test_no_kernels_reads_as_nan_not_zero():
    s = kt.summarize([[], []])
    assert s["kernel_us"] != s["kernel_us"] and s["kernels"] == 0


def test_trace_kernels_reads_only_kernel_events(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": [
        {"cat": "kernel", "name": "k", "ts": 1.5, "dur": 2.0},
        {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1.0, "dur": 0.5},
        {"cat": "kernel", "name": "flow", "ts": 3.0}]}))
    assert kt.trace_kernels(str(p)) == [("k", 1.5, 2.0)]
