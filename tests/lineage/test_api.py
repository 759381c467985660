"""lineage.trace's Python API: TraceConfig, TracedModel (no load for folders), TraceResult's
to_frame / save / plot / to_dict, and the rendering in lineage.render."""

from __future__ import annotations

import pandas as pd
import pytest

from induction.errors import InputError
from lineage.api import TraceConfig, TraceResult, trace, traced_model


@pytest.fixture(scope="module")
def scores(grown_dir):
    strong = {(0, 1): 0.9, (1, 1): 0.85, (2, 1): 0.8, (3, 1): 0.75, (5, 3): 0.7, (6, 3): 0.65}
    rows = [(lay, h, strong.get((lay, h), 0.001 * (lay + h))) for lay in range(8) for h in range(4)]
    return pd.DataFrame(rows, columns=["layer", "head", "induction"])


@pytest.fixture(scope="module")
def result(grown_dir, scores) -> TraceResult:
    return trace(str(grown_dir), scores=scores, top=6)


def test_folder_is_traced_without_loading(grown_dir):
    traced = traced_model(str(grown_dir))
    assert traced.loaded is None and traced.spec.kind == "folder"
    assert (traced.n_layers, traced.n_heads, traced.stored_layers) == (8, 4, 8)
    assert traced.log.depths() == [2, 4, 8] and traced.loop_plan is None


def test_config_object_and_kwargs_agree(grown_dir, scores, result):
    cfg = TraceConfig(scores=scores, top=3)
    by_config = trace(str(grown_dir), cfg, top=6)  # keyword options override the config
    assert by_config.summary.sentence == result.summary.sentence
    assert cfg.top == 3  # the caller's config is not modified
    with pytest.raises(InputError, match="unknown lineage setting 'no_such_option'; known: "):
        trace(str(grown_dir), scores=scores, no_such_option=1)
    with pytest.raises(InputError, match="lineage config must be a TraceConfig or a dict"):
        trace(str(grown_dir), "top=6")
    by_dict = trace(str(grown_dir), {"scores": scores, "top": 3}, top=6)  # as the other jobs
    assert by_dict.summary.sentence == result.summary.sentence
    with pytest.raises(InputError, match="cannot write a table"):
        trace(str(grown_dir), scores=scores, out="a.txt")


def test_result_frame_save_plot_dict(result, tmp_path):
    frame = result.to_frame()
    assert len(frame) == 32 and {"ancestor_layer", "induction", "path"} <= set(frame.columns)
    path = result.save(tmp_path / "a.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(path), frame)
    fig = result.plot()
    assert fig.layout.title.text and len(fig.data) > 0
    assert result.plot(tmp_path / "g.graphml").is_file()
    d = result.to_dict()
    assert d["model"] == "grown" and d["headline_ancestors"] == ["L0H1", "L1H3"]
    assert result.facts is result.model  # the former attribute name


def test_render_prints_the_tables(result):
    from rich.console import Console

    console = Console(record=True, width=160)
    result.print(console)
    text = console.export_text()
    assert "6 of the 6 strongest heads descend from 2 ancestors" in text
    assert "Top 6 heads by induction" in text and "Ancestors (stage 0)" in text


def test_a_fixed_protocol_run_ships_its_pre_growth_network():
    """lidas8's pre-growth network is ``checkpoints/step-1000-pre`` (not ``initial/``); the
    trace finds it and scores the ancestors on it."""
    from induction.models.registry import zoo_path
    from lineage.api import shipped_stage

    folder = zoo_path("lidas8-s0")
    assert shipped_stage(folder, 0) == str(folder / "checkpoints" / "step-1000-pre")
    assert shipped_stage(folder, 1) is None
