"""``induction sweep``: score many models or checkpoints into one Parquet dataset.

::

    from induction.dynamics.sweep import SweepSettings, sweep

    report = sweep(["runs/lidas8-s0"], "sweeps/lidas8", SweepSettings(loss=True))
    report.failed        # [(item, one-line message), ...]
    report.to_frame()    # the dataset's rows of these settings; .save(path), .plot(path)

Sources (:func:`discover`): a fixed-protocol run folder (its ``checkpoints/step-*``, each
``step-N-pre`` before ``step-N``, then the final model), any model spec, or, with
``revisions``, the revisions of one hub model (Pythia's ``step1000``, ...).

The driver (:func:`sweep`) claims the dataset (:func:`induction.store.io.claim_output`: a second
sweep into it fails at once), skips every model whose file for these settings exists and
matches its content hash (a damaged file is noted, deleted and computed again), runs
the rest in this process (default), in ``workers`` local processes
(``concurrent.futures.ProcessPoolExecutor``) or as Ray tasks, and writes each model's rows as
one file the moment they come back (:mod:`induction.dynamics.dataset`). Workers only compute and
return rows; only the driver writes. A crash loses at most the models in flight; a rerun
computes only what is missing. A model that fails is reported on one line and the sweep goes
on. In one process, checkpoints of one run reuse one booted bridge
(:class:`induction.models.reload.Reloader`). Design and measurements: docs/dynamics.md.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from induction.config_fields import DEVICE_HELP, DTYPE_HELP, option
from induction.dynamics import dataset as ds
from induction.errors import InputError, WorkbenchError
from induction.scores.score_names import ScanConfig
from induction.store.fingerprint import fingerprint, source_hash
from induction.store.io import guards_inputs
from lineage.log import MAX_STEP

if TYPE_CHECKING:
    import pandas as pd

#: The sweep's code enters the settings hash with every whole package it depends on
#: (:func:`induction.store.fingerprint.code_packages`): a change to how scores are computed
#: invalidates the dataset's old rows (they are recomputed, not mixed).
CODE = ("induction.dynamics.sweep",)
_STEP = re.compile(r"^step-(\d+)(-pre)?$")
_REV_STEP = re.compile(r"(\d+)$")


@dataclass(frozen=True)
class SweepItem:
    """One model to score: its series key, its label in the series, what to load."""

    model: str
    checkpoint: str
    spec: str
    revision: str | None = None
    step: int | None = None

    @property
    def label_hash(self) -> str:
        return fingerprint(self.model, self.checkpoint, self.spec, self.revision, length=8)

    def describe(self) -> str:
        at = f"@{self.revision}" if self.revision else ""
        return f"{self.model} {self.checkpoint} ({self.spec}{at})"


#: What a sweep's scan of each model measures unless told otherwise: four scores over three
#: prompt seeds (each model's own progress bar is off; the sweep has one).
SWEEP_SCORES = ("induction", "prefix_matching", "duplicate_token", "previous_token")
SWEEP_SCAN = ScanConfig(scores=SWEEP_SCORES, batch=32, seeds=3, progress=False)
#: ScanConfig fields that say how a scan runs, not what it measures: never hashed.
_RUN_SCAN_FIELDS = ("device", "chunk", "progress", "rank_by", "patterns")


@dataclass(frozen=True, init=False)
class SweepSettings:
    """What each model gets: a scan (``scan``, a :class:`induction.scores.scan.ScanConfig`, default
    :data:`SWEEP_SCAN`) and the optional score sets. ``fv``: function-vector scores
    (:func:`induction.circuits.fv.fv_scores`, its defaults but ``fv_corruption``) beside the
    scan's, per head. ``device``/``dtype`` say where models load and ``progress`` shows the
    sweep's bar; none of the three is hashed.

    Built like any job config: ``SweepSettings(ScanConfig(...), depth=True)``, or flat, with
    ScanConfig fields as keywords (``SweepSettings(seeds=1, batch=4, loss=True)``); a
    ``scores`` list may hold ``fv`` (``scores=("induction", "fv")``)."""

    scan: ScanConfig = SWEEP_SCAN
    fv: bool = False
    depth: bool = option(False, "Also the per-layer depth angles.", "--depth")
    lineage: bool = option(False, "Also each head's primary ancestor (grown models).", "--lineage")
    ablate: bool = option(False, "Also ablate the top 20% heads (default suite; slow).", "--ablate")
    ablate_frac: float = 0.2
    ablate_controls: int = 5
    fv_corruption: str = option(
        "shuffled",
        "With fv: shuffled (Todd et al.'s labels) or foreign (other tasks' answers; see "
        "`induction fv --help`).",
    )
    # where models load: options of `induction sweep`, not compared, not hashed
    device: str = field(
        default="auto", compare=False, metadata=option("auto", DEVICE_HELP).metadata
    )
    dtype: str | None = field(
        default=None, compare=False, metadata=option(None, DTYPE_HELP).metadata
    )
    progress: bool = field(default=True, compare=False)

    def __init__(self, scan: ScanConfig | Mapping[str, Any] | None = None, **settings: Any) -> None:
        from induction.jobs import job_config
        from induction.scores.score_names import FV_SCORE

        own = {f.name: f.default for f in dataclasses.fields(self) if f.name != "scan"}
        unknown = set(settings) - set(own) - {f.name for f in dataclasses.fields(ScanConfig)}
        if unknown:
            known = sorted({*own, *(f.name for f in dataclasses.fields(ScanConfig))})
            raise InputError(
                f"unknown sweep setting {sorted(unknown)[0]!r}; known: {', '.join(known)}"
            )
        values = {k: settings.pop(k, v) for k, v in own.items()}
        scores = settings.get("scores")
        if scores is not None:  # the sweep's list may name fv beside the scan's scores
            names = [n.strip() for n in scores.split(",")] if isinstance(scores, str) else scores
            names = list(names)
            values["fv"] = bool(values["fv"]) or FV_SCORE in names
            settings["scores"] = tuple(n for n in names if n != FV_SCORE)
        base = SWEEP_SCAN if scan is None else scan
        if isinstance(base, Mapping):
            base = dataclasses.replace(SWEEP_SCAN, **base)
        object.__setattr__(self, "scan", job_config(ScanConfig, base, settings, "sweep scan"))
        for name, value in values.items():
            object.__setattr__(self, name, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        """Settings every model would refuse are refused once, before the dataset exists (the
        limits of one model, its context length, are checked per model)."""
        from induction.config_fields import normalize_seeds  # torch-free: the CLI builds one
        from induction.scores.score_names import check_convention, check_sweep_scores

        check_sweep_scores(self.scores)
        if not self.scan_scores and (self.scan.loss or self.ablate):
            what = "--loss" if self.scan.loss else "--ablate"
            raise InputError(f"{what} needs a scan score beside fv; e.g. --scores induction,fv")
        check_convention(self.scan.convention)
        normalize_seeds(self.scan.seeds)
        for name, value, least in (("--batch", self.scan.batch, 1),
                                   ("--n-repeats", self.scan.n_repeats, 2),
                                   ("--ablate-controls", self.ablate_controls, 1)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InputError(f"{name} must be an integer >= {least}, got {value!r}")
        seq = self.scan.seq_len
        if seq is not None:
            from induction.scores.prompts import MIN_SEQ_LEN

            if isinstance(seq, bool) or not isinstance(seq, int) or seq < MIN_SEQ_LEN:
                raise InputError(f"--seq-len must be an integer >= {MIN_SEQ_LEN}, got {seq!r}")
        if not 0 < self.ablate_frac <= 1:
            raise InputError(f"--ablate-frac must be in (0, 1], got {self.ablate_frac}")
        from induction.circuits.config import CORRUPTIONS

        if self.fv_corruption not in CORRUPTIONS:
            raise InputError(
                f"--fv-corruption {self.fv_corruption!r}: use one of {', '.join(CORRUPTIONS)}"
            )

    def hash(self) -> str:
        """12 hex digits over the settings (the scan's fields but those that only say how it
        runs, :data:`_RUN_SCAN_FIELDS`; not device, dtype or progress) and the scoring code.
        The code is hashed whole (:func:`induction.store.fingerprint.source_hash`), so any change
        to it, this module's included, gives new digits: the datasets are computed again."""
        scan = {
            f.name: getattr(self.scan, f.name)
            for f in dataclasses.fields(ScanConfig)
            if f.name not in _RUN_SCAN_FIELDS
        }
        d: dict[str, Any] = {
            **scan,
            "scores": self.scores,
            "depth": self.depth,
            "lineage": self.lineage,
            "ablate": self.ablate,
        }
        if self.ablate:
            d.update(ablate_frac=self.ablate_frac, ablate_controls=self.ablate_controls)
        if self.fv:
            d["fv_corruption"] = self.fv_corruption
        return fingerprint(d, source_hash(CODE), length=12)

    @property
    def scores(self) -> tuple[str, ...]:
        """Every score the sweep writes: the scan's, then ``fv`` when asked for."""
        from induction.scores.score_names import FV_SCORE

        return (*self.scan_scores, *((FV_SCORE,) if self.fv else ()))

    @property
    def scan_scores(self) -> tuple[str, ...]:
        names = self.scan.scores
        return tuple(n.strip() for n in names.split(",")) if isinstance(names, str) else (*names,)

    @property
    def scan_config(self) -> ScanConfig:
        """The scan each model gets: :attr:`scan` without its progress bar."""
        return dataclasses.replace(self.scan, progress=False)


@dataclass
class SweepReport:
    """What a sweep did: counts, failures (item, message) and the wall time; its rows are the
    dataset's rows of these settings (:meth:`to_frame`, :meth:`save`, :meth:`plot`: the
    job result protocol, :class:`induction.jobs.Result`)."""

    out: Path
    items: int = 0
    done: int = 0  # already in the dataset
    reused: int = 0  # same content and settings under another label: rows copied
    computed: int = 0
    failed: list[tuple[SweepItem, str]] = field(default_factory=list)
    seconds: float = 0.0
    settings_hash: str | None = None  # the rows of these settings; None: every row
    #: what the sweep read (its model folders) and the dataset itself: never written over
    inputs: tuple[Path, ...] = field(default=(), repr=False)

    def to_frame(self) -> pd.DataFrame:
        """The dataset's rows of this sweep's settings, one per (model, checkpoint, score,
        layer, head) (:func:`induction.dynamics.dataset.read_dataset`)."""
        rows = ds.read_dataset(self.out)
        if self.settings_hash is not None:
            rows = rows[rows["settings_hash"] == self.settings_hash].reset_index(drop=True)
        return rows

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_frame` as a table (.csv, .parquet, .json, .jsonl), atomically."""
        from induction.store.io import write_table

        return write_table(self.to_frame(), path)

    @guards_inputs
    def plot(
        self, path: str | Path | None = None, *, model: str | None = None, score: str = "induction"
    ) -> Any:
        """The timeline figure (:func:`induction.dynamics.timeline.build_timeline`) of
        ``model`` (default: the dataset's only one) by ``score``; written to ``path`` when
        given (.html or .png), as ``induction timeline`` draws it."""
        from induction.dynamics.timeline import build_timeline

        fig = build_timeline(
            self.to_frame(), model=model, score=score, settings=self.settings_hash
        ).figure()
        if path is not None:
            from induction.figures.plots import save_figure

            note = save_figure(fig, path)
            if note:
                raise InputError(note)
        return fig

    def summary(self) -> str:
        parts = [f"{self.computed} scored", f"{self.done} already done"]
        if self.reused:
            parts.append(f"{self.reused} copied from identical models")
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        models = f"{self.items} model{'' if self.items == 1 else 's'}"
        return f"sweep: {models} into {self.out}: {', '.join(parts)} ({self.seconds:.1f} s)"


# --------------------------------------------------------------------------- sources


def discover(sources: Sequence[str], revisions: Sequence[str] | None = None) -> list[SweepItem]:
    """The models of ``sources``, in order (see the module docstring)."""
    if not sources:
        raise InputError("pass at least one model spec or run folder")
    if revisions is not None:
        revisions = [r.strip() for r in revisions if r.strip()]
        if not revisions:
            raise InputError("--revisions is empty; pass e.g. --revisions step1000,step2000")
        if len(sources) != 1:
            raise InputError("--revisions applies to one hub model; pass exactly one spec")
        spec = str(sources[0])
        if Path(spec).expanduser().exists():
            raise InputError(
                f"--revisions applies to a hub model, and {spec} is a local path; sweep its "
                "checkpoints by passing the run folder without --revisions"
            )
        for rev in revisions:  # HR02, HR03: a revision names a ref, never a path
            if rev.startswith(("/", "~")) or "\\" in rev or ".." in rev.split("/"):
                raise InputError(
                    f"--revisions {rev!r} is not a branch, tag or commit of a hub model; give "
                    "names such as main or step1000"
                )
        return [
            SweepItem(spec, rev, spec, rev, _step_of_revision(rev))
            for rev in dict.fromkeys(revisions)
        ]
    items: list[SweepItem] = []
    for source in sources:
        text = str(source).strip()
        if not text:
            raise InputError("empty model spec in the sweep's sources")
        path = Path(text).expanduser()
        if path.exists():  # DIR and DIR/ are one model, not two series
            text = os.path.normpath(text)
        elif path.is_symlink():  # dangling or looping: an input error, not a failed model
            from induction.models.specs import resolve_spec

            resolve_spec(text)  # raises its one-line error
            raise InputError(f"{text} is a link to nothing; point it at a checkpoint folder")
        elif text.startswith(("/", "./", "../", "~")) or ".." in Path(text).parts:
            # a path that does not exist (HR04): an input error, not a failed model
            raise InputError(
                f"no such file or folder: {text}; pass a checkpoint folder or zoo name"
            )
        if path.is_dir() and (path / "checkpoints").is_dir():
            items += _run_items(path, text)
        else:
            items.append(SweepItem(_series_name(text), "final", text))
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for it in items:
        key = (it.model, it.checkpoint, it.spec)
        if key not in seen:
            seen.add(key)
            unique.append(it)
    return unique


def _series_name(text: str) -> str:
    from induction.models.specs import resolve_spec

    try:
        return resolve_spec(text).name
    except WorkbenchError:
        return Path(text).name or text


def _run_items(run: Path, text: str) -> list[SweepItem]:
    """A fixed-protocol run folder: checkpoints by (step, pre before post), then the final
    model when the run finished (its card.json is written last)."""
    found = []
    seen: dict[tuple[int, int], Path] = {}
    for sub in (run / "checkpoints").iterdir():
        m = _STEP.match(sub.name)
        config = sub / "config.json"
        if m and sub.is_dir() and os.path.lexists(config) and not config.is_file():
            raise InputError(  # a checkpoint is never dropped from the series silently
                f"{config} is not a regular file (a FIFO, folder or broken link); replace it "
                "with the checkpoint's config.json, or move the checkpoint away"
            )
        if m and sub.is_dir() and config.is_file():
            step, post = int(m.group(1)), 0 if m.group(2) else 1
            if step > MAX_STEP:
                raise InputError(f"{sub} names step {step}, beyond any run (at most {MAX_STEP:,})")
            if (step, post) in seen:
                raise InputError(
                    f"{seen[(step, post)].name} and {sub.name} in {run / 'checkpoints'} are both "
                    f"step {step}; keep one"
                )
            seen[(step, post)] = sub
            found.append((step, post, sub))
    name = run.resolve().name
    items = [
        SweepItem(name, sub.name, os.path.join(text, "checkpoints", sub.name), None, step)
        for step, _, sub in sorted(found)
    ]
    if (run / "card.json").is_file() and (run / "config.json").is_file():
        from induction.store.io import read_json

        card = read_json(run / "card.json", "card")
        step = card.get("steps") if isinstance(card, dict) else None
        last = max((s for s, _, _ in found), default=0)
        if isinstance(step, int) and not last <= step <= MAX_STEP:
            raise InputError(
                f"{run / 'card.json'} says the run took {step} steps, but its checkpoints go to "
                f"step {last}; restore the card"
            )
        items.append(SweepItem(name, "final", text, None, step if isinstance(step, int) else None))
    if not items:
        raise InputError(f"{run} has no finished checkpoints (checkpoints/step-N with config.json)")
    return items


def _step_of_revision(rev: str) -> int | None:
    m = _REV_STEP.search(rev)
    return int(m.group(1)) if m and rev[: m.start()].rstrip("-_").isalpha() else None


def content_hash(item: SweepItem) -> str | None:
    """The model's content hash from its files, without loading it; None when only a load
    can tell (a hub model not in the local cache, a spec that does not resolve)."""
    from induction.models.specs import resolve_spec
    from induction.store.fingerprint import model_content_hash

    try:
        if item.revision is not None:
            return _hub_hash(item.spec, item.revision)
        ms = resolve_spec(item.spec)
        if ms.path is not None and ms.path.exists():
            return model_content_hash(ms.path)
        if ms.kind == "hub":
            return _hub_hash(item.spec, None)
    except (WorkbenchError, OSError):
        return None
    return None


def _hub_hash(name: str, revision: str | None) -> str | None:
    from induction.models.loading import cached_hub_snapshot
    from induction.store.fingerprint import model_content_hash

    folder = cached_hub_snapshot(name, revision)
    return model_content_hash(folder) if folder is not None else None


# --------------------------------------------------------------------------- the worker

_RELOADERS: dict[tuple, Any] = {}


def run_item(item: SweepItem, settings: SweepSettings, chash: str | None = None) -> dict:
    """Load and score one model; returns ``{"columns": {...}, "content_hash": ...}`` (the
    dataset's columns as lists). Runs in the driver, a worker process or a Ray task; keeps
    one :class:`~induction.models.reload.Reloader` per process, so a series reuses its bridge."""
    from induction.models.model_types import loaded_model_hash
    from induction.models.reload import Reloader
    from induction.scores.scan import scan

    key = (settings.device, settings.dtype)
    reloader = _RELOADERS.get(key)
    if reloader is None:
        _RELOADERS.clear()  # one model in memory per process
        reloader = _RELOADERS[key] = Reloader(settings.device, settings.dtype)
    loaded = reloader.load(item.spec, revision=item.revision)
    chash = chash or loaded_model_hash(loaded)
    result = scan(loaded, settings.scan_config) if settings.scan_scores else None
    rows = _Rows()
    n_heads = int(loaded.info.n_heads)
    if result is not None:
        for name in result.scores:
            st = result.stats[name]
            mean, std = st.mean.tolist(), st.std.tolist()
            for i, layer in enumerate(result.layers):
                for h in range(n_heads):
                    rows.add(layer, h, name, mean[i][h], std[i][h])
    if settings.fv:
        from induction.circuits.fv import fv_scores

        fv = fv_scores(loaded, corruption=settings.fv_corruption, progress=False).table
        for r in fv.itertuples(index=False):
            rows.add(r.layer, r.head, "fv", r.fv, r.fv_std)
    if result is not None and result.in_context_loss is not None:
        icl = result.in_context_loss
        for name in ("loss_first", "loss_repeat", "loss_drop"):
            rows.add(None, None, name, icl[name], icl.get(f"{name}_std"))
    if settings.depth:
        from induction.scores.depth import depth_angles

        ang = depth_angles(loaded, batch=min(settings.scan.batch, 8), seq_len=settings.scan.seq_len)
        for layer, (m, s) in enumerate(zip(ang.state_mean, ang.state_std, strict=True)):
            rows.add(layer, None, "depth_state_angle", m, s)
        for layer, (m, s) in enumerate(zip(ang.update_mean, ang.update_std, strict=True)):
            rows.add(layer, None, "depth_update_angle", m, s)
    stage = 0
    if loaded.duplication_log_path is not None:
        from lineage.log import duplication_log

        log = duplication_log(loaded)
        if log is not None:  # (it is: the model ships a log)
            stage = len(log.events)
            if settings.lineage and stage:
                from lineage.ancestry import head_ancestry

                anc = head_ancestry(log, n_heads=n_heads)
                r: Any  # an itertuples row: a namedtuple of the columns (typed as scalars)
                for r in anc[anc["primary"]].itertuples():
                    rows.add(r.layer, r.head, "ancestor_layer", float(r.ancestor_layer), None)
                    rows.add(r.layer, r.head, "ancestor_share", float(r.share), None)
    if settings.ablate and result is not None:
        from ablation.pipeline import ablate

        res = ablate(
            loaded,
            frac=settings.ablate_frac,
            controls=settings.ablate_controls,
            scores=result.to_frame(),
            progress=False,
        )
        for r in res.to_frame().itertuples():
            if isinstance(r.drop, int | float):
                rows.add(None, None, f"ablation_drop:{r.task}:{r.metric}", r.drop, None)
    card = loaded.card or {}
    step = item.step
    if step is None:
        for k in ("step", "steps"):
            if isinstance(card.get(k), int):
                step = card[k]
                break
    ident = {
        "model": item.model,
        "checkpoint": item.checkpoint,
        "spec": item.spec,
        "revision": item.revision,
        "step": step,
        "growth": card.get("growth") if isinstance(card.get("growth"), str) else None,
        "stage": stage,
        "depth": int(loaded.info.n_layers),
        "content_hash": chash,
        "settings_hash": settings.hash(),
    }
    return {"columns": rows.columns(ident), "content_hash": chash}


class _Rows:
    def __init__(self):
        self.layer, self.head, self.score, self.value, self.std = [], [], [], [], []

    def add(self, layer, head, score, value, std):
        self.layer.append(None if layer is None else int(layer))
        self.head.append(None if head is None else int(head))
        self.score.append(score)
        self.value.append(float(value))
        self.std.append(None if std is None or std != std else float(std))

    def columns(self, ident: dict) -> dict[str, list]:
        n = len(self.score)
        cols = {k: [v] * n for k, v in ident.items()}
        cols.update(layer=self.layer, head=self.head, score=self.score)
        cols.update(value=self.value, std=self.std)
        return cols


# --------------------------------------------------------------------------- the driver


def sweep(
    sources: Sequence[str],
    out: str | Path,
    config: SweepSettings | Mapping[str, Any] | None = None,
    /,
    *,
    revisions: Sequence[str] | None = None,
    workers: int = 1,
    ray: str | None = None,
    say: Callable[[str], None] | None = None,
    settings: SweepSettings | None = None,
    **overrides: Any,
) -> SweepReport:
    """Score every model of ``sources`` into the dataset folder ``out`` (see the module
    docstring).

    The one job signature (:mod:`induction.jobs`), with the models (``sources``) and the
    dataset folder (``out``) first: ``config`` is a :class:`SweepSettings` or a dict of its
    fields, ``overrides`` its fields (ScanConfig fields too: ``seeds=1, loss=True``;
    ``progress=False``). ``settings=`` is the former name of ``config``. Not settings, so
    keyword-only: ``revisions`` (which hub revisions of the one model are the sources),
    ``workers > 1`` (local processes) or ``ray`` (an address; ``"local"`` starts a local
    instance), which say where the work runs and leave the rows unchanged, and ``say``, a
    callback that gets one line per failed model (default: stderr)."""
    from induction.models.specs import inputs_of
    from induction.progress import progress as progress_reporter
    from induction.store.cache_integrity import intact
    from induction.store.io import check_output_path, claim_output

    if settings is not None:
        if config is not None:
            raise InputError("pass the sweep's settings once: config or settings=, not both")
        config = settings
    if config is not None and not isinstance(config, SweepSettings | Mapping):
        raise InputError(
            f"sweep config must be a SweepSettings or a dict, got {type(config).__name__}"
        )
    if isinstance(config, SweepSettings):
        settings = dataclasses.replace(config, **overrides) if overrides else config
    else:
        settings = SweepSettings(**{**(config or {}), **overrides})
    progress = settings.progress
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"--workers must be an integer >= 1, got {workers!r}")
    if ray is not None and workers > 1:
        raise InputError("pass either --workers or --ray, not both")
    if ray == "local":
        _ray_cpus()  # a bad $INDUCTION_RAY_CPUS fails now, before the dataset folder exists
    items = discover(sources, revisions)
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; a sweep dataset is a folder")
    check_output_path(out, folder=True)
    _refuse_inside_inputs(out, items)
    shash = settings.hash()
    read = (*inputs_of(*sources, *(i.spec for i in items)), out.expanduser().absolute())
    report = SweepReport(out=out, items=len(items), settings_hash=shash, inputs=read)
    start = time.perf_counter()
    created = not out.exists()
    with claim_output(out):
        out.mkdir(parents=True, exist_ok=True)
        have: dict[tuple[str, str], Path] = {}
        names = set()
        labels: dict[str, list[Path]] = {}  # label hash -> files of these settings
        for p in sorted(out.iterdir()):
            parsed = ds.parse_name(p.name)
            if parsed and parsed[1] == shash and not intact(p):
                continue  # damaged: noted, deleted, computed again
            if parsed:
                have.setdefault(parsed[:2], p)
                names.add(p.name)
                if parsed[1] == shash:
                    labels.setdefault(parsed[2], []).append(p)
        todo: list[tuple[SweepItem, str | None]] = []
        current: dict[str, str] = {}  # label hash -> file name for the model's content now
        for item in items:
            chash = content_hash(item)
            if chash is None:
                todo.append((item, None))
                continue
            name = ds.file_name(chash, shash, item.label_hash)
            if name in names:
                report.done += 1
            elif (chash[:16], shash) in have:
                _relabel(have[(chash[:16], shash)], out / name, item)
                report.reused += 1
            else:
                todo.append((item, chash))
            current[item.label_hash] = name
        _drop_stale(labels, current)
        with progress_reporter(progress) as bar:
            advance = bar.task(len(todo), "sweep")
            if ray is not None:
                outcomes = _run_ray(todo, settings, address=ray)
            elif workers > 1:
                outcomes = _run_pool(todo, settings, workers=workers)
            else:
                outcomes = _run_here(todo, settings, workers=workers)
            for item, outcome in outcomes:
                advance.describe(f"sweep: {item.model} {item.checkpoint}")
                if isinstance(outcome, BaseException):
                    msg = _one_line(outcome)
                    report.failed.append((item, msg))
                    say(f"failed: {item.describe()}: {msg}")
                else:
                    chash = outcome["content_hash"]
                    table = ds.to_table(outcome["columns"])
                    ds.write_part(out, ds.file_name(chash, shash, item.label_hash), table)
                    report.computed += 1
                    del table, outcome
                advance()
        if created and not any(out.iterdir()):  # every model failed: leave nothing behind
            out.rmdir()
    report.seconds = time.perf_counter() - start
    return report


def _drop_stale(labels: dict[str, list[Path]], current: dict[str, str]) -> None:
    """Delete the files of these settings whose label now names a model of other content (its
    weights, card or duplication log changed since): one file per label, never stale rows."""
    from induction.store.cache_integrity import discard

    for label, name in current.items():
        for p in labels.get(label, []):
            if p.name != name:
                discard(p)


def _refuse_inside_inputs(out: Path, items: list[SweepItem]) -> None:
    from induction.models.specs import model_inputs
    from induction.store.io import check_outputs

    # a hub model's cache folder is an input whatever revision is swept (HR05)
    inputs = [p for it in items for p in model_inputs(it.spec)]
    check_outputs({"--out": out}, inputs)


def _relabel(src: Path, dest: Path, item: SweepItem) -> None:
    """Copy an identical model's rows under ``item``'s labels (no computation)."""
    table = ds.read_part(src).to_pydict()
    n = len(table["score"])
    for k in ("model", "checkpoint", "spec", "revision"):
        table[k] = [getattr(item, k)] * n
    if item.step is not None:
        table["step"] = [item.step] * n
    ds.write_part(dest.parent, dest.name, ds.to_table(table))


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    if isinstance(e, WorkbenchError):
        return text or type(e).__name__
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


Outcome = tuple[SweepItem, Any]


def _run_here(todo, settings, workers: int = 1) -> Iterator[Outcome]:
    for item, chash in todo:
        try:
            outcome = run_item(item, settings, chash)
        except Exception as e:  # reported, and the sweep goes on
            outcome = e
        yield item, outcome


def _run_pool(todo, settings, workers: int) -> Iterator[Outcome]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("spawn")  # no forked torch thread pools
    with ProcessPoolExecutor(max_workers=min(workers, max(len(todo), 1)), mp_context=ctx) as pool:
        futures = {pool.submit(run_item, item, settings, chash): item for item, chash in todo}
        for fut in as_completed(futures):
            try:
                outcome = fut.result()
            except Exception as e:
                outcome = e
            yield futures[fut], outcome


def _run_ray(todo, settings, address: str | None) -> Iterator[Outcome]:
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install -e '.[ray]' (or pip install ray)") from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address in (None, "", "local"):
            # a local instance: its workers import this checkout like the driver does
            root = str(Path(__file__).resolve().parents[1])
            path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
            kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
            kwargs["num_cpus"] = _ray_cpus()
        else:
            kwargs["address"] = address
        try:
            ray.init(**{k: v for k, v in kwargs.items() if v is not None})
        except Exception as e:
            raise InputError(f"cannot start or reach Ray at {address}: {_one_line(e)}") from None
        started = True
    try:
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        task = ray.remote(num_gpus=gpus, max_retries=0)(run_item)
        # (ray's annotations give a remote function made through options() 2 arguments)
        refs = {task.remote(item, settings, chash): item for item, chash in todo}  # pyright: ignore[reportCallIssue]
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    outcome = ray.get(ref)
                except Exception as e:
                    cause = getattr(e, "cause", None)
                    outcome = cause if isinstance(cause, BaseException) else e
                yield refs.pop(ref), outcome
    finally:
        if started:
            ray.shutdown()


def _ray_cpus() -> int | None:
    """``$INDUCTION_RAY_CPUS`` (CPUs of a local Ray instance; unset or 0: Ray's default)."""
    text = os.environ.get("INDUCTION_RAY_CPUS", "0").strip() or "0"
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise InputError(f"$INDUCTION_RAY_CPUS must be a whole number >= 0, got {text!r}")
    return value or None
