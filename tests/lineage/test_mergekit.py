"""mergekit passthrough import and checkpoint growth: every output layer is its source layer,
tensor by tensor; the grown folder loads and carries its log; bad configs are one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from safetensors import safe_open

from induction.errors import InputError, LineageError
from lineage.checkpoint import grow_checkpoint, read_checkpoint
from lineage.log import DuplicationLog, duplication_log
from lineage.mergekit import apply_mergekit, mergekit_log, parse_config


def solar(a: int, b: int, c: int, d: int, model: str = "org/base") -> dict:
    return {
        "slices": [
            {"sources": [{"model": model, "layer_range": [a, b]}]},
            {"sources": [{"model": model, "layer_range": [c, d]}]},
        ],
        "merge_method": "passthrough",
        "dtype": "float32",
    }


def tensors(folder: Path) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as fh:
            for name in fh.keys():
                out[name] = fh.get_tensor(name)
    return out


def assert_restacked(src: Path, out: Path, order: list[int]) -> None:
    """Independent check: each output tensor equals its source layer's tensor."""
    a, b = tensors(src), tensors(out)
    prefix = "model.layers."
    src_layer = [k for k in a if k.startswith(prefix)]
    per_layer = {n[len(prefix) :].split(".", 1)[1] for n in src_layer}
    expected = {k for k in a if not k.startswith(prefix)}
    expected |= {f"{prefix}{j}.{r}" for j in range(len(order)) for r in per_layer}
    assert set(b) == expected
    for name, t in b.items():
        if name.startswith(prefix):
            j, rest = name[len(prefix) :].split(".", 1)
            source = f"{prefix}{order[int(j)]}.{rest}"
        else:
            source = name
        assert t.dtype == a[source].dtype and torch.equal(t, a[source]), name


def test_solar_config_log():
    log = mergekit_log(solar(0, 24, 8, 32), source_depth=32)
    assert log.initial_depth == 32 and log.final_depth == 48
    assert [log.ancestor_of(i) for i in range(48)] == list(range(24)) + list(range(8, 32))
    event = log.events[0]
    assert event.operator == "mergekit" and "[0,24)+[8,32)" in event.note
    assert DuplicationLog.from_json(json.loads(json.dumps(log.to_json()))) == log


def test_yaml_file_and_default_source_depth(tmp_path):
    path = tmp_path / "solar.yml"
    path.write_text(yaml.safe_dump(solar(0, 3, 1, 4)))
    plan = parse_config(path)
    assert plan.order == [0, 1, 2, 1, 2, 3] and plan.model == "org/base"
    assert mergekit_log(path).initial_depth == 4  # smallest depth the config allows


def test_solar_style_stack_on_a_checkpoint(tiny_llama_factory, tmp_path):
    src = tiny_llama_factory(tmp_path / "src", n_layers=8)
    config = tmp_path / "solar.yml"
    config.write_text(yaml.safe_dump(solar(0, 6, 2, 8)))
    log = apply_mergekit(config, src, tmp_path / "out")
    order = list(range(6)) + list(range(2, 8))
    assert [log.ancestor_of(i) for i in range(12)] == order
    assert_restacked(src, tmp_path / "out", order)
    cfg = json.loads((tmp_path / "out/config.json").read_text())
    assert cfg["num_hidden_layers"] == 12
    assert (tmp_path / "out/tokenizer.json").is_file()
    assert DuplicationLog.load(tmp_path / "out") == log

    from induction.models.loading import load_model

    loaded = load_model(str(tmp_path / "out"), device="cpu")
    assert loaded.info.n_layers == 12 and duplication_log(loaded) == log


def test_preset_growth_equals_the_in_memory_operator(tiny_llama_factory, tmp_path):
    from transformers import AutoModelForCausalLM

    from lineage.growth import grow

    src = tiny_llama_factory(tmp_path / "src", n_layers=4)
    log = grow_checkpoint(src, tmp_path / "out", preset="lidas", block=2, step=7)
    assert log.events[-1].source == (1, 3) and log.events[-1].step == 7

    ref = AutoModelForCausalLM.from_pretrained(str(src)).eval()
    grow(ref, "lidas", block=2)
    got = AutoModelForCausalLM.from_pretrained(str(tmp_path / "out")).eval()
    ref_sd, got_sd = ref.state_dict(), got.state_dict()
    assert ref_sd.keys() == got_sd.keys()
    for k in ref_sd:
        assert torch.equal(ref_sd[k], got_sd[k]), k
    tokens = torch.randint(4, 128, (2, 10))
    with torch.no_grad():
        assert torch.equal(ref(tokens).logits, got(tokens).logits)


def test_growing_a_grown_checkpoint_extends_its_log(grown_dir, tmp_path):
    log = grow_checkpoint(grown_dir, tmp_path / "g12", preset="midas", block=4)
    assert log.depths() == [2, 4, 8, 12]
    assert log.events[-1].step == 200  # default: the source log's last step
    cfg = solar(0, 8, 4, 12)
    log2 = apply_mergekit(cfg, tmp_path / "g12", tmp_path / "g20", step=300)
    assert log2.depths() == [2, 4, 8, 12, 16]
    assert [e.operator for e in log2.events] == ["lidas", "lidas", "midas", "mergekit"]


def test_never_overwrites_the_input(tiny_llama_factory, tmp_path):
    src = tiny_llama_factory(tmp_path / "src", n_layers=4)
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    for out in (src, src / "inner", tmp_path):
        with pytest.raises(InputError, match="refusing|contains the input"):
            grow_checkpoint(src, out, preset="lidas", block=2, force=True)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy/x").write_text("keep")
    with pytest.raises(InputError, match="--force"):
        grow_checkpoint(src, tmp_path / "busy", preset="lidas", block=2)
    grow_checkpoint(src, tmp_path / "busy", preset="lidas", block=2, force=True)
    assert not (tmp_path / "busy/x").exists()
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp leftovers


def test_looped_and_pickle_checkpoints_are_refused(tiny_llama_factory, tmp_path):
    src = tiny_llama_factory(tmp_path / "src", n_layers=2)
    looped = tmp_path / "looped"
    shutil.copytree(src, looped)
    (looped / "loop_plan.json").write_text("{}")
    with pytest.raises(InputError, match="looped"):
        read_checkpoint(looped)
    pickled = tmp_path / "pickled"
    shutil.copytree(src, pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(InputError, match="only pickle weights"):
        read_checkpoint(pickled)


def _cfg(**change):
    cfg = solar(0, 6, 2, 8)
    for key, value in change.items():
        if key == "slices":
            cfg["slices"] = value
        else:
            cfg[key] = value
    return cfg


def _src(a, b, model="m"):
    return {"model": model, "layer_range": [a, b]}


@pytest.mark.parametrize(
    "config,message",
    [
        (_cfg(merge_method="slerp"), "merge_method 'slerp' is not supported"),
        ({"slices": solar(0, 1, 1, 2)["slices"]}, "no merge_method"),
        ({"merge_method": "passthrough", "models": [{"model": "m"}]}, "models:"),
        (_cfg(slices=[]), "non-empty list"),
        (_cfg(slices=[{"sources": []}]), "slice 0 has no sources"),
        (
            _cfg(slices=[{"sources": [_src(0, 4), _src(0, 2, "n")]}]),
            "unequal layer counts \\(4 vs 2\\)",
        ),
        (_cfg(slices=[{"sources": [_src(0, 4), _src(4, 8, "n")]}]), "is a merge"),
        (_cfg(slices=[{"sources": [_src(3, 3)]}]), "is empty"),
        (_cfg(slices=[{"sources": [_src(5, 2)]}]), "is empty"),
        (_cfg(slices=[{"sources": [_src(-1, 2)]}]), "below 0"),
        (_cfg(slices=[{"sources": [_src(0, 9)]}]), "outside the source model's layers 0..7"),
        (
            _cfg(slices=[{"sources": [_src(0, 2)]}, {"sources": [_src(2, 4, "n")]}]),
            "several source models",
        ),
        (
            _cfg(
                slices=[
                    {"sources": [{"model": "m", "layer_range": [0, 2], "parameters": {"scale": 0}}]}
                ]
            ),
            "parameters",
        ),
        (_cfg(slices=[{"sources": [{"model": "m", "layer_range": [0, 2.5]}]}]), "two integers"),
        (_cfg(slices=[{"sources": [{"model": "m"}]}]), "needs model and layer_range"),
        (_cfg(dtype="int4"), "dtype"),
    ],
)
def test_bad_configs_are_one_line_errors(config, message):
    with pytest.raises(LineageError, match=message) as err:
        parse_config(config, source_depth=8)
    assert "\n" not in str(err.value)


def test_bad_yaml_file(tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text("slices: [\n  - {sources: [\n")
    with pytest.raises(LineageError, match="not valid YAML at line") as err:
        parse_config(path)
    assert "\n" not in str(err.value)
    with pytest.raises(LineageError, match="not found"):
        parse_config(tmp_path / "missing.yml")


def zoo_grown() -> list[str]:
    from induction.models import registry

    return [n for n in registry.zoo_models() if n.startswith("grown-")]


@pytest.mark.skipif(not zoo_grown(), reason="no grown zoo models shipped yet")
def test_solar_style_stack_on_a_zoo_model(tmp_path):
    from induction.models import registry

    src = registry.zoo_path(zoo_grown()[0])
    depth = read_checkpoint(src).depth
    cut = depth // 4
    log = apply_mergekit(solar(0, depth - cut, cut, depth), src, tmp_path / "out")
    order = list(range(depth - cut)) + list(range(cut, depth))
    assert_restacked(src, tmp_path / "out", order)
    assert log.final_depth == len(order) and log.events[-1].operator == "mergekit"


@pytest.mark.slow
def test_solar_style_stack_on_real_smollm2(tmp_path, smollm2_folder):
    """SOLAR's recipe (drop 8 layers from each copy) on the real 30-layer SmolLM2-135M
    (about 25 s; writes a 0.7 GB checkpoint, removed afterwards)."""
    src = smollm2_folder
    log = apply_mergekit(
        solar(0, 22, 8, 30, model="HuggingFaceTB/SmolLM2-135M"), src, tmp_path / "o"
    )
    order = list(range(22)) + list(range(8, 30))
    assert [log.ancestor_of(i) for i in range(44)] == order
    assert_restacked(src, tmp_path / "o", order)
    assert json.loads((tmp_path / "o/config.json").read_text())["num_hidden_layers"] == 44
    # and the lineage read back from the weights alone is the config's
    from lineage.infer import compare_with_log, infer_lineage

    inferred = infer_lineage(tmp_path / "o")
    assert inferred.n_families == 30 and compare_with_log(inferred, log)["partition_equal"]
    shutil.rmtree(tmp_path / "o")
