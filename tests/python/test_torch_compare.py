"""tests/gpu/torch_compare.py's .item() check without a GPU: check_item_syncs() on reports written
here, in the shape of cuscope's JSON (docs/json-schema.md): it passes exactly when step/loss holds one
synchronization per step, the step none elsewhere, the waits timed, and step/loss carries the
synchronization finding exactly when its waits take 5% of its host time or more (the rule's
threshold, both ways).
"""
import json
import os

from conftest import load_script

compare = load_script(os.path.join(os.path.dirname(__file__), "..", "gpu", "torch_compare.py"), "torch_compare")


def report(tmp_path, loss_syncs, step_syncs, finding=True, with_loss=True, sync_ns=60_000, host_ns=1_000_000):
    ranges = [{"path": "", "self": {"sync_count": 0}, "total": {"sync_count": step_syncs}, "findings": []},
              {"path": "step", "self": {"sync_count": 0}, "total": {"sync_count": step_syncs}, "findings": []}]
    if with_loss:
        findings = [{"id": "synchronization", "severity": "warning"}] if finding else []
        ranges.append({"path": "step/loss", "self": {"sync_count": loss_syncs, "sync_ns": sync_ns},
                       "total": {"sync_count": loss_syncs, "sync_ns": sync_ns}, "host": {"total_ns": host_ns},
                       "findings": findings})
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"activity_status": "on, synchronizes and allocations seen by callbacks, ...",
                                "ranges": ranges}))
    return str(path)


def test_one_item_a_step_with_its_finding_passes(tmp_path, capsys):
    assert compare.check_item_syncs(report(tmp_path, 20, 20), 20, "cuscope run")
    assert capsys.readouterr().out.startswith("ok cuscope run: step/loss synchronizations 20 (expected 20")


def test_a_wrong_count_fails(tmp_path, capsys):
    assert not compare.check_item_syncs(report(tmp_path, 19, 19), 20, "cuscope run")
    assert capsys.readouterr().out.startswith("FAIL cuscope run: step/loss synchronizations 19 (expected 20")


def test_a_synchronization_elsewhere_in_the_step_fails(tmp_path, capsys):
    assert not compare.check_item_syncs(report(tmp_path, 20, 21), 20, "Python API")
    assert "in all of step 21" in capsys.readouterr().out


def test_a_missing_finding_fails_where_the_waits_reach_the_threshold(tmp_path, capsys):
    assert not compare.check_item_syncs(report(tmp_path, 20, 20, finding=False, sync_ns=50_000), 20, "cuscope run")
    out = capsys.readouterr().out
    assert out.startswith("FAIL cuscope run:")
    assert "synchronization finding absent (the waits took 5.0% of step/loss's host time: due at 5%)" in out


def test_no_finding_passes_where_the_waits_stay_under_the_threshold(tmp_path, capsys):
    # 49,999 ns of 1 ms: just under 5%, as the H200 run of 2026-11-27 saw (4.9%).
    assert compare.check_item_syncs(report(tmp_path, 20, 20, finding=False, sync_ns=49_999), 20, "Python API")
    out = capsys.readouterr().out
    assert out.startswith("ok Python API:")
    assert "synchronization finding absent (the waits took 5.0% of step/loss's host time: not due at 5%)" in out


def test_untimed_waits_fail_though_no_finding_is_due(tmp_path, capsys):
    # 20 synchronizations of 0 ns: the finding is rightly absent, but the waits were not timed.
    assert not compare.check_item_syncs(report(tmp_path, 20, 20, finding=False, sync_ns=0), 20, "cuscope run")
    assert capsys.readouterr().out.startswith("FAIL cuscope run: step/loss synchronizations 20 (expected 20")


def test_a_finding_under_the_threshold_fails(tmp_path, capsys):
    assert not compare.check_item_syncs(report(tmp_path, 20, 20, finding=True, sync_ns=40_000), 20, "cuscope run")
    assert "synchronization finding present (the waits took 4.0% of step/loss's host time: not due at 5%)" in (
        capsys.readouterr().out)


def test_a_missing_range_fails(tmp_path, capsys):
    assert not compare.check_item_syncs(report(tmp_path, 0, 0, with_loss=False), 20, "cuscope run")
    assert capsys.readouterr().out == "FAIL cuscope run: no step/loss range\n"
