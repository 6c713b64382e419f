"""What the report, the README table and the end-of-run terminal tables claim about a run:
no lead inside the noise (summary.TIE), no record shown for a role it does not hold, a peer
that failed never a blank (CPU only, no kernels)."""
from __future__ import annotations

import io

import pandas as pd
import pytest
from rich.console import Console

import synthetic
from normbench.harness import summary
from normbench.harness.report import build_report
from normbench.harness.report.answer import markdown_table
from normbench.harness.report.fmt import fmt_ratio
from normbench.harness.report.terminal import print_tables


def _duel(peer_ms: float, det_ms: float = 0.040) -> list[dict]:
    """One shape: a deterministic strategy and a peer."""
    return [synthetic.record(implementation="disjoint_block", kind="strategy", groups=4,
                             groups_effective=4, deterministic_by_design=True, time_ms=det_ms),
            synthetic.record(implementation="torch", kind="baseline", time_ms=peer_ms, seed=2)]


def _cells(table: str) -> dict:
    header, _, row = table.splitlines()[:3]
    return dict(zip((c.strip() for c in header.strip("|").split("|")),
                    (c.strip() for c in row.strip("|").split("|"))))


def _terminal(recs) -> str:
    buf = io.StringIO()
    print_tables(pd.DataFrame(recs), {}, Console(file=buf, width=250, color_system=None))
    return buf.getvalue()


@pytest.mark.parametrize("factor,verdict", [(1.001, "level"), (1.0, "level"),
                                            (1 - 0.01, "level"), (1.02, "faster"),
                                            (0.97, "slower")])
def test_a_lead_inside_the_noise_is_a_tie_not_a_win_or_a_loss(factor, verdict):
    """The peer 0.1 % slower than ours was "faster on 1 of 1 shapes", an exact tie "faster
    on 0 of 1" (a loss): within summary.TIE both are level, the ratio itself unchanged."""
    md = build_report(pd.DataFrame(_duel(0.040 * factor)), synthetic.meta()).markdown()
    counts = {"faster": 0, "level": 0, "slower": 0, verdict: 1}
    assert (f"the deterministic strategy is faster on {counts['faster']}, level (within "
            f"{summary.TIE:.1%}) on {counts['level']} and slower on {counts['slower']} of "
            "1 shape.") in md
    assert f"median **{fmt_ratio(factor)}**" in md


@pytest.mark.parametrize("det_us,peer_us", [(10.15, 10.0), (100.0, 101.5), (10.0, 10.15),
                                            (101.5, 100.0), (1015.0, 1000.0), (0.1, 0.1015)])
def test_exactly_a_tie_apart_is_level_in_the_bullet_the_bold_the_italics_and_the_stars(
        det_us, peer_us):
    """Exactly 1.5 % apart is a tie at any scale, and every claim reads the one verdict.
    The bullet read the rounded ratio (1/r - 1) and the bold the two times (max/min - 1), so
    det 10.15 µs against a peer's 10.0 read "level" while the peer alone was bold, and 100
    against 101.5 read level with both bold."""
    recs = _duel(peer_us / 1000, det_us / 1000)
    for r, us in zip(recs, (det_us, peer_us)):
        r["time_ms"] = us / 1000
    assert summary.tied(det_us, peer_us) and summary.lead(peer_us, det_us) == "level"
    md = build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    assert (f"faster on 0, level (within {summary.TIE:.1%}) on 1 and slower on 0 of 1 shape."
            in md)
    cells = _cells(markdown_table(pd.DataFrame(recs)))
    assert cells["ours"].startswith("**") and cells["torch"].startswith("**")
    assert not cells["vs best peer"].startswith("*")
    row = next(line for line in _terminal(recs).splitlines() if line.startswith("│ 1024"))
    assert row.count("★ ") == 2
    # just past a tie, either way, is a lead at every scale
    for k in (1 + 1e-9, 1 - 1e-9):
        assert not summary.tied(min(det_us, peer_us) * (1 + summary.TIE) * 1.0001 * k,
                                min(det_us, peer_us))


def test_a_tie_bolds_and_stars_both_never_one_by_order():
    """README table: the row's fastest in bold, and each time within TIE of it — a tie bolded
    ours alone (or the peer alone, by 0.1 %); the ratio is italic only where the peer leads by
    more than a tie.  Terminal: ★ on both, not on the first in the roles' order."""
    cells = _cells(markdown_table(pd.DataFrame(_duel(0.040))))
    assert cells["ours"] == "**40.0** disjoint_block" and cells["torch"] == "**40.0**"
    cells = _cells(markdown_table(pd.DataFrame(_duel(0.0399))))     # the peer 0.25 % ahead
    assert cells["ours"] == "**40.0** disjoint_block" and cells["torch"] == "**39.9**"
    assert cells["vs best peer"] == "0.997"                        # not *0.997*: a tie
    cells = _cells(markdown_table(pd.DataFrame(_duel(0.038))))     # 5 % ahead: a lead
    assert cells["ours"] == "40.0 disjoint_block" and cells["torch"] == "**38.0**"
    assert cells["vs best peer"] == "*0.950*"
    text = _terminal(_duel(0.040))
    assert "★ 40.0 G4" in text and "★ 40.0 │" in text
    text = _terminal(_duel(0.050))
    assert "★ 40.0 G4" in text and "★ 50.0" not in text


def test_the_best_deterministic_mark_shows_the_deterministic_record():
    """disjoint_block's fastest GROUPS (2) was measured nondeterministic: it competes as
    nondet, and the answer's best deterministic is its G=4.  The terminal's ◆ cell showed
    the G=2 record's time; it shows G=4's, and G=2's under it marked nondet."""
    common = dict(norm="layernorm", rows=4096, d=1024, deterministic_by_design=True,
                  kind="strategy", implementation="disjoint_block")
    recs = [synthetic.record(groups=2, groups_effective=2, time_ms=0.030, deterministic=False,
                             distinct_results=2, **common),
            synthetic.record(groups=4, groups_effective=4, time_ms=0.045, seed=3, **common),
            synthetic.record(implementation="atomic", kind="strategy", norm="layernorm",
                             rows=4096, d=1024, deterministic_by_design=False, time_ms=0.050),
            synthetic.record(implementation="torch", kind="baseline", norm="layernorm",
                             rows=4096, d=1024, time_ms=0.090)]
    a = summary.answer(pd.DataFrame(recs)).iloc[0]
    assert (a.det_impl, a.det_groups, a.nondet_impl, a.nondet_groups) == \
        ("disjoint_block", "4", "disjoint_block", "2")
    text = _terminal(recs)
    assert "◆ 45.0 G4" in text and "◆ 30.0" not in text
    assert "★ 30.0 G2 nondet" in text and "marked nondet" in text
    # the same implementation deterministic at its fastest GROUPS: one line, no legend for it
    recs[0].update(deterministic=True, distinct_results=1)
    text = _terminal(recs)
    assert "◆ ★ 30.0 G2" in text and "nondet" not in text.replace("det÷nondet", "")


def test_a_peer_that_failed_is_never_a_blank_in_the_markdown_table(tmp_path):
    """A peer whose case errored or timed out showed a blank cell, as one never measured;
    it says ✗ error / ✗ timeout (the terminal's words), an incorrect one ✗, a skipped one
    (not run) stays blank.  report-table.md of a run timed under the interpreter carries
    report.md's warning about it."""
    from normbench.harness.report import write_table
    recs = _duel(0.050) + [
        synthetic.record(implementation="liger", kind="baseline", status="error", error="boom"),
        synthetic.record(implementation="quack", kind="baseline", status="timeout", error="t"),
        synthetic.record(implementation="torch_compile", kind="baseline", status="skipped",
                         error="not installed"),
        synthetic.record(implementation="peer_x", kind="baseline", correct=False)]
    cells = _cells(markdown_table(pd.DataFrame(recs)))
    assert (cells["liger"], cells["quack"], cells["torch_compile"], cells["peer_x"]) == \
        ("✗ error", "✗ timeout", "", "✗")
    assert "✗ error" in _terminal(recs)                    # the same words as the terminal
    gpu = write_table(synthetic.write_run(tmp_path / "gpu", recs, synthetic.meta()))
    assert "Triton interpreter" not in gpu
    cpu = synthetic.write_run(tmp_path / "cpu", [dict(r, timer="cpu_wall") for r in recs],
                              synthetic.meta(interpreted=True, timer="cpu_wall"))
    text = write_table(cpu)
    assert text.startswith("> **Warning:** these timings are **CPU wall-clock under the Triton "
                           "interpreter**")
    assert text.endswith(markdown_table(pd.DataFrame(recs)))


@pytest.mark.parametrize("impls,line", [
    (("torch",), "Against the best peer: not measurable here (this run records no "
                 "deterministic strategy)."),
    (("atomic",), "Against the best peer: not measurable here (this run records no "
                  "deterministic strategy and no peer (baseline))."),
    (("disjoint_block",), "Against the best peer: not measurable here (this run records no "
                          "peer (baseline))."),
])
def test_a_run_without_a_role_says_so_instead_of_none_passed(impls, line):
    """A peers-only or atomic-only run read "No peer (baseline) passed on a shape where a
    deterministic strategy passed", as if one had been measured and failed."""
    kinds = {"torch": "baseline", "atomic": "strategy", "disjoint_block": "strategy"}
    recs = [synthetic.record(implementation=i, kind=kinds[i],
                             deterministic_by_design=i.startswith("disjoint")) for i in impls]
    md = build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    assert line in md and "No peer (baseline) passed" not in md
    # both in the run, but never passing at one shape: the old sentence is the true one
    both = _duel(0.05)
    both[1].update(status="error", error="x", time_ms=None, correct=None)
    md = build_report(pd.DataFrame(both), synthetic.meta()).markdown()
    assert "No peer (baseline) passed on a shape where a deterministic strategy passed." in md


def test_the_role_that_never_passed_is_the_one_named():
    """Every deterministic strategy wrong against fp64, the peer correct: the answer read "No
    peer (baseline) passed on a shape where a deterministic strategy passed", as if the peers
    had failed.  It names the role that never passed, or says neither did, or that the two
    passed only at different shapes."""
    def said(recs):
        md = build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
        assert "No peer (baseline) passed" not in md
        return md
    recs = _duel(0.05)
    recs[0].update(correct=False)
    assert ("No deterministic strategy passed on a shape where a peer (baseline) passed."
            in said(recs))
    recs = _duel(0.05) + [synthetic.record(implementation="atomic", kind="strategy",
                                           deterministic_by_design=False, time_ms=0.03,
                                           deterministic=False, distinct_results=2, seed=5)]
    for r in recs[:2]:
        r.update(correct=False)
    assert ("Neither a deterministic strategy nor a peer (baseline) passed on any shape."
            in said(recs))
    recs = _duel(0.05) + [dict(r, d=2048, case_id=f"{r['case_id']}-2048") for r in _duel(0.05)]
    recs[0].update(correct=False)                       # ours at 1024 wrong, the peer at 2048
    recs[3].update(status="error", error="x", time_ms=None, correct=None)
    assert "No shape has both a deterministic strategy and a peer (baseline) passing." in said(recs)


def test_counts_of_one_are_singular():
    """ "1 records, 1 implementations, 1 shapes", "(range …, 1 shapes)", "Show all 1
    records" read wrong."""
    rep = build_report(pd.DataFrame(_duel(0.05)[:1]), synthetic.meta())
    md, html = rep.markdown(), rep.html()
    assert "1 record, 1 implementation, 1 shape" in md
    assert "1 record; the markdown report leaves this table out" in md
    assert "Show the record" in html and "Show all 1" not in html
    md = build_report(pd.DataFrame(_duel(0.05)), synthetic.meta()).markdown()
    assert "2 records, 2 implementations, 1 shape ·" in md
    assert "(range 1.25–1.25, 1 shape)" in md and "1 shapes" not in md


def test_peers_recorded_but_not_competing_are_named_beside_the_best_peer(tmp_path):
    """quack and liger were skipped (not installed) at every shape: the bullet read "median
    1.72 … faster on 5 of 5" against torch_compile with no word that the fastest peers were
    never measured.  The bullet, the terminal's caption and report-table.md name the peers
    recorded without competing, skipped (not measured) apart from failed (error, timeout,
    incorrect); a run whose peers all passed says nothing of it."""
    from normbench.harness.report import write_table
    recs = _duel(0.050) + [
        synthetic.record(implementation="quack", kind="baseline", status="skipped",
                         error="quack-kernels is not installed"),
        synthetic.record(implementation="liger", kind="baseline", status="skipped",
                         error="liger-kernel is not installed"),
        synthetic.record(implementation="torch_compile", kind="baseline", status="timeout",
                         error="t"),
        synthetic.record(implementation="peer_x", kind="baseline", correct=False)]
    note = ("At 1 of 1 shape peers were recorded but did not compete — quack, liger not "
            "measured (skipped); torch_compile failed (timeout); peer_x failed (incorrect) — "
            "so the best peer there is the best of those that passed.")
    a = summary.answer(pd.DataFrame(recs))
    assert a.iloc[0].peer_out == (("quack", "skipped"), ("liger", "skipped"),
                                  ("torch_compile", "timeout"), ("peer_x", "incorrect"))
    assert summary.peers_out(a) == note
    md = build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    bullet = next(line for line in md.splitlines() if "Against the best peer" in line)
    assert bullet.endswith("of 1 shape. " + note)
    assert " ".join(_terminal(recs).split()).count(note) == 1      # the caption, wrapped
    text = write_table(synthetic.write_run(tmp_path / "run", recs, synthetic.meta()))
    assert text.startswith(f"> **Note:** {note}\n\n")
    assert text.endswith(markdown_table(pd.DataFrame(recs)))
    # a peer skipped at one shape and measured at another: counted where it did not compete
    two = _duel(0.050) + [dict(r, d=2048, case_id=f"{r['case_id']}-2048") for r in _duel(0.05)]
    two += [synthetic.record(implementation="quack", kind="baseline", time_ms=0.030, seed=7),
            synthetic.record(implementation="quack", kind="baseline", d=2048, status="skipped",
                             error="x")]
    assert summary.peers_out(summary.answer(pd.DataFrame(two))) == (
        "At 1 of 2 shapes a peer was recorded but did not compete — quack not measured "
        "(skipped) — so the best peer there is the best of those that passed.")
    # every peer passed: no note anywhere
    md = build_report(pd.DataFrame(_duel(0.050)), synthetic.meta()).markdown()
    assert "did not compete" not in md and "did not compete" not in _terminal(_duel(0.050))
    assert summary.peers_out(summary.answer(pd.DataFrame(_duel(0.050)))) == ""
