"""Check that a scaled-out run holds the same record set as a reference run, and show what
measuring side by side did to the times (the device scripts' verdict; no GPU needed).

    python bench/scaleout_check.py REF_DIR NEW_DIR [--allow-died N]

Same record set: the same case keys, statuses, correctness and determinism verdicts (a
verdict of `atomic`-like strategies may flip between runs: those are listed, not failed,
when the implementation is not deterministic by design).  `--allow-died N`: up to N records
of NEW may be errors of a killed Dask worker.  Then, for every case ok in both: NEW's time
over REF's, split into host-bound records measured concurrently (harness.hostload) and the
rest.  Exit 0 when the record sets match, 1 when they do not, 2 on bad input.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from normbench.harness import hostload  # noqa: E402
from normbench.harness.store import StoreError, load_records  # noqa: E402

DIED = "Dask worker died"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref")
    ap.add_argument("new")
    ap.add_argument("--allow-died", type=int, default=0)
    a = ap.parse_args(argv)
    try:
        ref, new = load_records(a.ref), load_records(a.new)
    except StoreError as e:
        print(f"scaleout_check: {e}", file=sys.stderr)
        return 2
    ref, new = ref.set_index("case_id"), new.set_index("case_id")
    bad = []
    if not new.index.is_unique:
        bad.append(f"duplicate cases in {a.new}: {sorted(set(new.index[new.index.duplicated()]))[:5]}")
    only_ref = sorted(set(ref.index) - set(new.index))
    only_new = sorted(set(new.index) - set(ref.index))
    if only_ref:
        bad.append(f"{len(only_ref)} cases missing from {a.new}: {only_ref[:5]}")
    if only_new:
        bad.append(f"{len(only_new)} cases not in {a.ref}: {only_new[:5]}")
    common = sorted(set(ref.index) & set(new.index))
    died = [k for k in common if DIED in str(new.at[k, "error"])]
    if len(died) > a.allow_died:
        bad.append(f"{len(died)} records lost to a dead worker (allowed {a.allow_died}): {died[:5]}")
    flips = []
    for k in (k for k in common if k not in died):
        r, n = ref.loc[k], new.loc[k]
        for col in ("status", "correct"):
            if str(r[col]) != str(n[col]):
                bad.append(f"{k}: {col} {r[col]} -> {n[col]}")
        if str(r["deterministic"]) != str(n["deterministic"]):
            (flips if str(r["deterministic_by_design"]) == "False" else bad).append(
                f"{k}: deterministic {r['deterministic']} -> {n['deterministic']}")
    print(f"{len(common)} common cases; {len(died)} lost to a killed worker")
    for f in flips:
        print(f"note (not deterministic by design, verdict may differ run to run): {f}")
    _moves(ref, new, [k for k in common if k not in died])
    for b in bad:
        print(f"MISMATCH: {b}")
    print("record sets match" if not bad else f"{len(bad)} mismatch(es)")
    return 1 if bad else 0


def _moves(ref, new, keys) -> None:
    """NEW/REF time ratios: host-bound records measured next to others, and the rest."""
    groups = {"host-bound, concurrent": [], "other": []}
    for k in keys:
        r, n = ref.loc[k], new.loc[k]
        if r["status"] != "ok" or n["status"] != "ok":
            continue
        rec = {**n.to_dict(), "hostname": n.get("hostname")}
        flagged = hostload.contention_note(rec) is not None
        groups["host-bound, concurrent" if flagged else "other"].append(
            (float(n["time_ms"]) / float(r["time_ms"]), k))
    for name, rows in groups.items():
        if not rows:
            print(f"{name}: none")
            continue
        rows.sort()
        ratios = [x for x, _ in rows]
        mid = ratios[len(ratios) // 2]
        print(f"{name}: {len(rows)} records, new/ref time median {mid:.3f}, "
              f"range {ratios[0]:.3f}-{ratios[-1]:.3f}; most moved: "
              + ", ".join(f"{k} x{x:.2f}" for x, k in rows[-3:][::-1]))


if __name__ == "__main__":
    os.environ.setdefault("NORMBENCH_QUIET", "1")
    sys.exit(main())
