"""One thread policy and quiet loading for the CLI, the API and notebooks; the progress helper."""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace

import pytest
import torch

from induction.errors import InputError
from induction.models import runtime
from induction.progress import Progress, progress_mode


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


ZOO_CPU = SimpleNamespace(zoo_vocabulary=True, device="cpu")
REAL_CPU = SimpleNamespace(zoo_vocabulary=False, device="cpu")
ZOO_CUDA = SimpleNamespace(zoo_vocabulary=True, device="cuda:0")


def test_thread_count_order(monkeypatch):
    monkeypatch.delenv(runtime.THREADS_ENV, raising=False)
    assert runtime.thread_count(ZOO_CPU) == 1
    assert runtime.thread_count(REAL_CPU) is None
    assert runtime.thread_count(ZOO_CUDA) is None
    assert runtime.thread_count(ZOO_CPU, threads=3) == 3  # explicit wins
    monkeypatch.setenv(runtime.THREADS_ENV, "2")
    assert runtime.thread_count(ZOO_CPU) == 2  # then the environment
    assert runtime.thread_count(REAL_CPU, threads=1) == 1
    monkeypatch.setenv(runtime.THREADS_ENV, "many")
    with pytest.raises(InputError, match="INDUCTION_THREADS"):
        runtime.thread_count(REAL_CPU)
    with pytest.raises(InputError, match="positive integer"):
        runtime.thread_count(REAL_CPU, threads=0)


def test_apply_thread_policy_sets_and_restores(monkeypatch, restore_threads):
    monkeypatch.delenv(runtime.THREADS_ENV, raising=False)
    monkeypatch.setattr(runtime, "_torch_default", None)
    monkeypatch.setattr(runtime, "_set_by_policy", None)
    torch.set_num_threads(2)
    assert runtime.apply_thread_policy(ZOO_CPU) == 1 and torch.get_num_threads() == 1
    assert runtime.apply_thread_policy(REAL_CPU) == 2  # torch's count before the policy
    torch.set_num_threads(1)  # the user's own choice is left alone
    runtime.apply_thread_policy(REAL_CPU)
    assert torch.get_num_threads() == 1
    monkeypatch.setattr(runtime, "_torch_default", 3)
    monkeypatch.setattr(runtime, "_set_by_policy", None)
    torch.set_num_threads(2)  # set by the caller before loading: the zoo default keeps it
    assert runtime.apply_thread_policy(ZOO_CPU) == 2 and torch.get_num_threads() == 2
    assert runtime.apply_thread_policy(ZOO_CPU, threads=1) == 1  # explicit still wins
    monkeypatch.setenv(runtime.THREADS_ENV, "2")
    assert runtime.apply_thread_policy(REAL_CPU) == 2  # and the environment


def test_load_model_applies_policy_and_is_quiet(
    tiny_llama_dir, monkeypatch, restore_threads, capfd
):
    from induction.models.loading import load_model

    monkeypatch.delenv(runtime.THREADS_ENV, raising=False)
    monkeypatch.delenv(runtime.VERBOSE_ENV, raising=False)
    monkeypatch.setattr(runtime, "_torch_default", 2)  # as if torch had started with 2
    monkeypatch.setattr(runtime, "_set_by_policy", None)
    torch.set_num_threads(2)
    loaded = load_model(tiny_llama_dir, device="cpu")  # zoo vocabulary on CPU
    assert loaded.info.zoo_vocabulary and torch.get_num_threads() == 1
    load_model(tiny_llama_dir, device="cpu", threads=2)
    assert torch.get_num_threads() == 2
    err = capfd.readouterr().err
    assert "Loading weights" not in err
    with pytest.raises(InputError, match="threads"):
        load_model(tiny_llama_dir, device="cpu", threads=0)


def test_quiet_loading_restores_library_settings(monkeypatch):
    import transformers

    tlog = transformers.utils.logging
    monkeypatch.delenv(runtime.VERBOSE_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    before = tlog.get_verbosity(), tlog.is_progress_bar_enabled()
    level = logging.getLogger("transformer_lens").level
    with runtime.quiet_loading():
        assert tlog.get_verbosity() == logging.ERROR
        assert not tlog.is_progress_bar_enabled()
    assert (tlog.get_verbosity(), tlog.is_progress_bar_enabled()) == before
    assert logging.getLogger("transformer_lens").level == level
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in __import__("os").environ
    monkeypatch.setenv(runtime.VERBOSE_ENV, "1")
    with runtime.quiet_loading():
        assert tlog.is_progress_bar_enabled() == before[1]
    assert runtime.verbose_default(False) is False


# --------------------------------------------------------------------------- progress


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_mode(monkeypatch):
    monkeypatch.delenv("INDUCTION_PROGRESS", raising=False)
    assert progress_mode(False) == "off"
    assert progress_mode(True, io.StringIO()) == "lines"
    monkeypatch.setenv("INDUCTION_PROGRESS", "off")
    assert progress_mode(True, io.StringIO()) == "off"


def test_lines_every_ten_percent_or_ten_seconds():
    clock = FakeClock()
    out = io.StringIO()
    with Progress(True, stream=out, mode="lines", clock=clock) as bar:
        advance = bar.task(20, "scanning heads")
        for _ in range(20):
            clock.t += 3.0  # 20 steps of 3 s: past the quiet start, a line every 10%
            advance()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("scanning heads: 2/20 (10%)")
    assert lines[-1].startswith("scanning heads: 20/20 (100%), done in 60 s")
    assert len(lines) == 10


def test_lines_quiet_for_fast_tasks_and_slow_steps():
    clock = FakeClock()
    out = io.StringIO()
    with Progress(True, stream=out, mode="lines", clock=clock) as bar:
        fast = bar.task(50, "fast")
        for _ in range(50):
            clock.t += 0.01
            fast()
        slow = bar.task(1000, "slow")
        for _ in range(30):
            clock.t += 1.0  # 1 s per step: 0.1% each, so a line every 10 s
            slow()
    lines = out.getvalue().splitlines()
    assert not [ln for ln in lines if ln.startswith("fast")]
    assert [ln.split(":")[1].split()[0] for ln in lines] == [
        "10/1000",
        "20/1000",
        "30/1000",
        "30/1000",
    ]
    assert "~" in lines[0] and "s left" in lines[0]


def test_lines_take_the_callers_time_left_over_the_linear_one():
    clock = FakeClock()
    out = io.StringIO()
    with Progress(True, stream=out, mode="lines", clock=clock) as bar:
        advance = bar.task(10, "ablate")
        for step in range(3):
            clock.t += 3.0
            advance()
            if step == 1:
                advance.left(100.0)  # the caller knows better than 3 s a step
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("ablate: 1/10") and "~27 s left" in lines[0]  # linear
    assert "~97 s left" in lines[-1]  # 100 s said, 3 s ago


def test_off_and_single_step_tasks_are_noops():
    out = io.StringIO()
    with Progress(False, stream=out) as bar:
        bar.task(10, "x")()
    with Progress(True, stream=out, mode="lines") as bar:
        bar.task(1, "one")()
    assert out.getvalue() == ""


def test_phase_says_a_slow_step_while_it_runs_and_when_it_ends(monkeypatch):
    """A step with no count (a model loading): nothing when it is quick; once it has run the
    quiet time a line, written by a timer while the step still blocks, and a closing line."""
    import time

    import induction.progress

    out = io.StringIO()
    with Progress(True, stream=out, mode="lines") as bar, bar.phase("quick"):
        pass
    with Progress(False, stream=out) as bar, bar.phase("off"):
        pass
    assert out.getvalue() == ""
    monkeypatch.setattr(induction.progress, "LINE_QUIET_S", 0.05)
    clock = FakeClock()
    with Progress(True, stream=out, mode="lines", clock=clock) as bar, bar.phase("loading x"):
        deadline = time.monotonic() + 10
        while not out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)  # the step blocks; the timer thread speaks
        assert out.getvalue() == "loading x ...\n"
        clock.t += 43
    assert out.getvalue().splitlines() == ["loading x ...", "loading x: done in 43 s"]
