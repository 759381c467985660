"""benchmarks/fv_comparison.py: both exclusion arms, the token-loss outcome and the gate."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def fvc(load_benchmark):
    return load_benchmark("fv_comparison")


def test_a_zoo_model_gets_both_arms_and_is_gated_on_its_pair_tasks(
    fvc, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    md = tmp_path / "fv.md"
    fvc.main(["lidas8", "--fast", "--out-dir", str(tmp_path), "--markdown", str(md)])
    found = json.loads((tmp_path / "lidas8-s0.json").read_text())
    arms = {(a["score"], a["exclude"]) for a in found["arms"]}
    assert arms == {("fv", "induction:0.02"), ("induction", "fv:0.02")}
    # the first fixed zoo never saw a relation given only by demonstrations: at chance, so
    # the comparison is untestable here and says so
    assert found["testable"] is False and "pair tasks above chance" in found["gate"]
    for a in found["arms"]:
        assert {"target_effect", "controls_mean", "p_controls"} <= set(a["token_loss"])
        assert a["n_heads"] == 4  # ceil(5% of 64)
        # the readout that moves where the task metric sits at 1.0, with its own controls
        lp = a["logprob"]
        assert lp["clean"] <= 0 and lp["ctrl_std"] >= 0 and 0 < lp["p_ctrl"] <= 1
    r = found["rankings"]
    assert 0 <= r["overlap_top2"] <= 1 and -1 <= r["spearman"] <= 1
    assert r["headroom"] == pytest.approx(r["p_clean"] - r["p_corrupted"])
    assert r["corruption"] == "shuffled" and len(r["baselines"]) == 4  # one row per pair task
    assert "| lidas8-s0 | untestable" in md.read_text()
    assert "log-prob drop (nats), FV heads" in md.read_text()


def test_scores_are_read_only_where_the_corruption_takes_the_task_away(fvc):
    """The FV pair answers shuffled-label prompts as well as clean ones: untestable, with the
    numbers and the fix; foreign labels leave room."""
    ok, why = fvc.headroom_gate(
        {"headroom": 0.001, "p_clean": 0.998, "p_corrupted": 0.997, "corruption": "shuffled"}
    )
    assert not ok and "shuffled 0.997" in why and "--corruption foreign" in why
    ok, why = fvc.headroom_gate(
        {"headroom": 0.99, "p_clean": 0.997, "p_corrupted": 0.005, "corruption": "foreign"}
    )
    assert ok and why == "headroom 0.99"
    assert not fvc.headroom_gate({})[0]  # an old record without baselines does not pass


def test_gated_tasks_score_nothing_when_no_pair_task_is_above_chance(fvc, tmp_path, monkeypatch):
    """--gated-tasks: the clean pass names each task's gate; with none above chance no FV score
    or ablation runs and the record says untestable."""
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    md = tmp_path / "fv.md"
    fvc.main(["lidas8", "--fast", "--gated-tasks", "--out-dir", str(tmp_path), "--markdown",
              str(md)])  # fmt: skip
    found = json.loads((tmp_path / "lidas8-s0.json").read_text())
    assert found["tasks"] == [] and found["arms"] == [] and found["testable"] is False
    assert len(found["task_gates"]) == 4  # the zoofacts tasks, each with its gate
    assert all(not g["above_chance"] for g in found["task_gates"])
    assert "| lidas8-s0 | untestable: no pair task above chance |" in md.read_text()


def test_fv_speed_paths_agree_with_the_loop(load_benchmark):
    speed = load_benchmark("fv_speed")
    out = speed.main(["lidas8", "--heads", "6", "--prompts", "3", "--runs", "1"])
    assert out["heads"] == 6
    assert out["max_abs_cie_diff"] < 1e-5
    assert out["loop_over_prefix"] > 0 and out["full_over_prefix"] > 0


def test_a_stopped_run_resumes_after_its_last_finished_step_with_the_same_numbers(
    fvc, tmp_path, monkeypatch, capsys
):
    """The steps finished before a crash are kept (sealed) and a rerun reads them instead of
    recomputing: the result is the uninterrupted run's, number for number. A file of other
    settings or an edited one is not read."""
    argv = ["lidas8", "--fast", "--out-dir"]
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache-a"))
    fvc.main([*argv, str(tmp_path / "whole")])
    whole = json.loads((tmp_path / "whole" / "lidas8-s0.json").read_text())
    assert not (tmp_path / "whole" / "lidas8-s0.partial.json").exists()

    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache-b"))
    out = tmp_path / "stopped"
    real_arm, calls = fvc.arm, []

    def stops_at_the_second_arm(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the session ends here
        return real_arm(*args, **kwargs)

    monkeypatch.setattr(fvc, "arm", stops_at_the_second_arm)
    with pytest.raises(KeyboardInterrupt):
        fvc.main([*argv, str(out)])
    partial = out / "lidas8-s0.partial.json"
    kept = json.loads(partial.read_text())
    assert list(kept["steps"]) == ["gates", "scores", "arm fv 0.05"]
    assert not (out / "lidas8-s0.json").exists()

    capsys.readouterr()

    # an edited file is not read, nor one of other settings
    partial.write_text(json.dumps({**kept, "seconds": kept["seconds"] + 1}))
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        fvc.main([*argv, str(out)])
    assert "fails its seal (edited or damaged); starting afresh" in capsys.readouterr().err
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        fvc.main([*argv, str(out), "--mode", "zero"])
    assert "steps of other inputs" in capsys.readouterr().err
    assert json.loads(partial.read_text())["key"] != kept["key"]  # now --mode zero's steps

    partial.write_text(json.dumps(kept))
    computed = []
    monkeypatch.setattr(fvc, "arm", lambda *a, **k: computed.append(a[2]) or real_arm(*a, **k))
    fvc.main([*argv, str(out)])
    assert computed == ["induction"]  # the FV arm was read, not run again
    assert "resuming after 3 finished steps (gates, scores, arm fv 0.05" in capsys.readouterr().out
    resumed = json.loads((out / "lidas8-s0.json").read_text())
    assert not partial.exists()
    for key in ("tasks", "task_gates", "rankings", "heads", "arms", "testable", "gate"):
        assert resumed[key] == whole[key], key
