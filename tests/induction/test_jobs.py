"""One job signature and one result protocol (induction.jobs, docs/design.md)."""

import pytest

from ablation.pipeline import AblationResult
from induction.circuits.effects import EffectsConfig, EffectsResult, head_effects
from induction.circuits.finder import CircuitResult, CircuitsConfig
from induction.circuits.fv import FVConfig, FVResult, fv_scores
from induction.circuits.job import induction_circuits
from induction.dynamics.sweep import SweepReport
from induction.errors import InputError
from induction.jobs import Result, job_config
from induction.models.loading import load_model
from induction.scores.depth import DepthAngles
from induction.scores.scan import ScanConfig, ScanResult, scan
from lineage.api import TraceResult


@pytest.mark.parametrize(
    "cls",
    [
        ScanResult,
        TraceResult,
        AblationResult,
        CircuitResult,
        EffectsResult,
        FVResult,
        DepthAngles,
        SweepReport,
    ],
)
def test_every_job_result_meets_the_protocol(cls):
    for method in ("to_frame", "save", "plot"):
        assert callable(getattr(cls, method, None)), f"{cls.__name__} has no {method}()"


def test_every_job_has_the_one_signature():
    """#43 item 4: ``job(model, config=None, /, **overrides)``; the sweep's models are its
    sources, with the dataset folder beside them."""
    import inspect

    from ablation.pipeline import ablate
    from induction.circuits import effects, fv, job
    from induction.dynamics.sweep import sweep
    from lineage.api import trace

    only, var = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_KEYWORD
    jobs = [scan, trace, ablate, job.run, effects.run, fv.run, sweep]
    for fn in jobs:
        params = list(inspect.signature(fn).parameters.values())
        lead = ["sources", "out", "config"] if fn is sweep else ["model", "config"]
        assert [p.name for p in params[: len(lead)]] == lead, fn.__qualname__
        assert all(p.kind is only for p in params[: len(lead)]), fn.__qualname__
        assert params[len(lead) - 1].default is None and params[-1].kind is var, fn.__qualname__


def test_ablation_settings_live_on_its_config(tiny_llama_dir):
    """device, dtype and progress are AblationConfig fields (overrides, like every job's);
    they are not recorded in the stored config unless set, nor progress ever."""
    from ablation.config import AblationConfig
    from ablation.pipeline import ablate

    cfg = job_config(AblationConfig, {"frac": 0.5}, {"progress": False, "device": "cpu"}, "x")
    assert (cfg.frac, cfg.progress, cfg.device, cfg.dtype) == (0.5, False, "cpu", None)
    assert AblationConfig(progress=False).to_dict() == AblationConfig().to_dict()
    assert "progress" not in cfg.to_dict() and cfg.to_dict()["device"] == "cpu"
    with pytest.raises(InputError, match="progress must be True or False"):
        AblationConfig(progress="yes")
    with pytest.raises(InputError, match="unknown ablation setting 'fraction'; known: "):
        ablate(str(tiny_llama_dir), fraction=0.1)  # refused before the model loads
    with pytest.raises(InputError, match="--frac must be in"):
        ablate(str(tiny_llama_dir), {"frac": 2.0})


def test_a_depth_result_saves_and_plots_like_the_others(tmp_path):
    r = DepthAngles("m", [10.0, 20.0], [1.0, 2.0], [5.0], [0.5], n_tokens=64)
    assert isinstance(r, Result)
    assert r.save(tmp_path / "d.csv").read_text().startswith("model,layer,angle")
    r.plot(tmp_path / "d.html")
    assert (tmp_path / "d.html").stat().st_size > 0


def test_job_config_merges_and_refuses_in_one_line():
    base = ScanConfig(batch=4)
    assert job_config(ScanConfig, base, {"seq_len": 8}, "scan") == ScanConfig(batch=4, seq_len=8)
    assert job_config(ScanConfig, {"batch": 2}, {"batch": 3}, "scan").batch == 3
    assert job_config(ScanConfig, None, {}, "scan") == ScanConfig()
    with pytest.raises(InputError, match="unknown scan setting 'bach'; known: .*batch"):
        job_config(ScanConfig, None, {"bach": 2}, "scan")
    with pytest.raises(InputError, match="circuits config must be a CircuitsConfig or a dict"):
        job_config(CircuitsConfig, ScanConfig(), {}, "circuits")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: CircuitsConfig(threshold=2), "threshold must be in"),
        (lambda: CircuitsConfig(top=0), "top must be >= 1"),
        (lambda: EffectsConfig(max_rows=0), "max_rows must be >= 1"),
        (lambda: EffectsConfig(mode="melt"), "melt"),
        (lambda: FVConfig(suite="zoo"), "use --suite words"),
        (lambda: FVConfig(shots=1), "--shots must be >= 2 to shuffle labels, got 1"),
    ],
)
def test_configs_check_themselves(make, message):
    with pytest.raises(InputError, match=message):
        make()


def test_every_job_takes_a_spec_or_a_loaded_model(tiny_llama_dir):
    loaded = load_model(tiny_llama_dir)
    by_spec = scan(str(tiny_llama_dir), seq_len=6, batch=2, seeds=(0,)).to_frame()
    by_model = scan(loaded, ScanConfig(seq_len=6, batch=2, seeds=(0,))).to_frame()
    assert by_spec.equals(by_model)
    settings = {"seq_len": 6, "batch": 2, "seeds": 1}
    a = head_effects(str(tiny_llama_dir), EffectsConfig(**settings, atp=False)).to_frame()
    b = head_effects(loaded, atp=False, **settings).to_frame()
    assert a.equals(b)
    c = induction_circuits(loaded, top=1, lineage=False, **settings)
    assert isinstance(c, CircuitResult) and isinstance(c, Result)
    f = fv_scores(loaded, FVConfig(tasks=["fact_word"], suite="zoofacts", n_prompts=2, shots=2))
    assert isinstance(f, Result) and len(f.to_frame()) == 2 * 4
