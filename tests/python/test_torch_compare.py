"""tests/gpu/torch_compare.py's .item() check without a GPU: check_item_syncs() on reports written
here, in the shape of cuscope's JSON (docs/json-schema.md): it passes exactly when step/loss holds one
synchronization per step, the step none elsewhere, and step/loss carries the synchronization finding.
"""
import json
import os

from conftest import load_script

compare = load_script(os.path.join(os.path.dirname(__file__), "..", "gpu", "torch_compare.py"), "torch_compare")


def report(tmp_path, loss_syncs, step_syncs, finding=True, with_loss=True):
    ranges = [{"path": "", "self": {"sync_count": 0}, "total": {"sync_count": step_syncs}, "findings": []},
              {"path": "step", "self": {"sync_count": 0}, "total": {"sync_count": step_syncs}, "findings": []}]
    if with_loss:
        findings = [{"id": "synchronization", "severity": "warning"}] if finding else []
        ranges.append({"path": "step/loss", "self": {"sync_count": loss_syncs}, "total": {"sync_count": loss_syncs},
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


def test_a_missing_finding_fails(tmp_path, capsys):
    assert not compare.check_item_syncs(report(tmp_path, 20, 20, finding=False), 20, "cuscope run")
    assert "synchronization finding absent" in capsys.readouterr().out


def test_a_missing_range_fails(tmp_path, capsys):
    assert not compare.check_item_syncs(report(tmp_path, 0, 0, with_loss=False), 20, "cuscope run")
    assert capsys.readouterr().out == "FAIL cuscope run: no step/loss range\n"
