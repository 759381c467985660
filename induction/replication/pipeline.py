"""The whole replication: measure every model (:mod:`.measure`), then the cross-model
statistics (:mod:`.stats`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

import pandas as pd

from induction.errors import InputError

from .config import Settings
from .measure import Measured, measure_scanned, scan_model
from .models import ModelRef, discover
from .stats import add_model_stats, comparisons, family_summary
from .store import MeasurementStore, as_stored, code_hash, measurement_key


@dataclass
class Replication:
    models: pd.DataFrame  # one row per model (every seed)
    tasks: pd.DataFrame  # one row per model x task (measured suite and RegBench reports)
    families: pd.DataFrame  # one row per family
    settings: Settings
    comparisons: pd.DataFrame = field(default_factory=pd.DataFrame)  # families vs dense
    sentences: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0  # measuring time summed over the models (each on one process)
    record: bool = False  # read as stored, whatever code measured it (``--record``)
    gates: pd.DataFrame = field(default_factory=pd.DataFrame)  # per model (.gates)
    claims: pd.DataFrame = field(default_factory=pd.DataFrame)  # per source claim (.gates)
    # models found but not measured yet (``stored_only``): every claim that reads one of
    # their families says "pending" rather than a verdict from the seeds measured so far
    pending: list[str] = field(default_factory=list)
    # each model's zoo name or folder (``--models-dir``): where the gates read card and weights
    specs: dict[str, str] = field(default_factory=dict)

    def add_gates(self, probe: bool = True) -> Replication:
        """Compute the gate table and the gated verdict per source claim (:mod:`.gates`)."""
        from .gates import claims, gate_table, regbench_rule_tvd

        self.gates = gate_table(self.models, self.tasks, self.settings, probe, self.specs)
        rule = regbench_rule_tvd(self.settings) if self.settings.regbench else None
        self.claims = claims(self, self.gates, rule)
        return self

    def reread_claims(self) -> Replication:
        """The verdict per claim read again from the stored gate table by the current rules
        (``--from-results``): the gates are measurements, the claims their reading, so an
        amendment to the reading (docs/replication.md) applies to every stored record."""
        from .gates import claims, regbench_rule_tvd, with_chance

        if self.gates.empty:
            return self
        self.gates = with_chance(self.gates, self.specs)
        rule = regbench_rule_tvd(self.settings) if self.settings.regbench else None
        self.claims = claims(self, self.gates, rule)
        return self

    @classmethod
    def from_models(cls, models: pd.DataFrame, settings: Settings, **kw) -> Replication:
        """Everything derived from the per-model rows (what ``--from-results`` recomputes)."""
        models = add_model_stats(models)
        return cls(
            models=models,
            families=family_summary(models),
            comparisons=comparisons(models),
            settings=settings,
            **{"tasks": pd.DataFrame(), **kw},
        )

    def markdown(self) -> str:
        from .report import markdown_tables

        return markdown_tables(self)


@overload
def measure_model(
    ref: ModelRef,
    settings: Settings,
    store: MeasurementStore | None = None,
    progress: bool = False,
    code: str | None = None,
    log=None,
    stored_only: Literal[False] = False,
) -> Measured: ...
@overload
def measure_model(
    ref: ModelRef,
    settings: Settings,
    store: MeasurementStore | None = None,
    progress: bool = False,
    code: str | None = None,
    log=None,
    stored_only: bool = False,
) -> Measured | None: ...
def measure_model(
    ref: ModelRef,
    settings: Settings,
    store: MeasurementStore | None = None,
    progress: bool = False,
    code: str | None = None,
    log=None,
    stored_only: bool = False,
) -> Measured | None:
    """:func:`.measure.measure` one model, served from ``store`` when it holds this model's
    measurement under the same inputs (:func:`.store.measurement_key`), and stored when not
    (``stored_only``: None instead of measuring). ``code`` is :func:`.store.code_hash` taken
    when the run started (default: now); a measurement is not stored if the code changed
    while it ran."""
    start = time.perf_counter()
    code = code or code_hash()
    loaded, scores = scan_model(ref, settings)
    key = measurement_key(loaded, settings, code) if store is not None else ""
    if store is not None:
        hit = store.get(ref.name, settings, key, scores)
        if hit is not None or stored_only:
            return hit
    measured = as_stored(measure_scanned(ref, loaded, scores, settings, progress, start))
    if store is None:
        return measured
    if code_hash() != code:
        (log or print)(f"{ref.name}: not stored: the measuring code changed during the run")
        return measured
    try:
        store.put(ref.name, settings, key, measured)
    except (OSError, InputError) as exc:  # keep the numbers; only the store failed
        (log or print)(f"{ref.name}: not stored ({exc})")
    return measured


def _measure_in_worker(ref, settings, store_root, threads: int, code: str) -> Measured:
    """One model in a worker process (``--jobs``): its own thread count, quiet libraries."""
    import sys

    import torch

    from induction.models.loading import quiet_libraries

    if threads:
        torch.set_num_threads(threads)
    quiet_libraries()
    store = MeasurementStore(store_root) if store_root is not None else None
    return measure_model(ref, settings, store, code=code, log=lambda s: print(s, file=sys.stderr))


def replicate(
    refs: Sequence[ModelRef] | None = None,
    settings: Settings | None = None,
    progress: bool = False,
    log=print,
    store: MeasurementStore | None = None,
    jobs: int = 1,
    threads: int = 1,
    stored_only: bool = False,
    record: bool = False,
) -> Replication:
    """Measure every model of ``refs`` (default: the fixed-protocol zoo's dense, LIDAS and
    looped models) and summarise. ``store`` keeps each model's measurement as it lands and
    serves those measured before from the same inputs; ``jobs`` > 1 measures that many models
    at once, each in its own process with ``threads`` torch threads. ``stored_only`` measures
    nothing: it summarises the models ``store`` holds under these settings and inputs, and
    names the others (an interim report while a long run spans sessions)."""
    settings = settings or Settings()
    refs = discover() if refs is None else list(refs)
    if not refs:
        raise InputError("no zoo models found; train them with `induction zoo train`")
    names = [ref.name for ref in refs]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"models named twice: {', '.join(twice)}; pass each model once")
    code = code_hash()  # the code this run measures with (checked again before each store)
    measured: dict[str, Measured] = {}
    pending: list[str] = []

    def report(ref: ModelRef, m: Measured) -> None:
        measured[ref.name] = m
        if not log:
            return
        r = m.row
        how = "stored, reused" if "reused" in m.extra else f"{m.seconds:.0f} s"
        log(
            f"{ref.name}: drop {r['drop']:+.3f} [{r['ci_lo']:+.3f}, {r['ci_hi']:+.3f}] "
            f"(random {r['ctrl_mean']:+.3f} ± {r['ctrl_std']:.3f}, p {r['p_perm']:.3f}); "
            f"{r['src_heads']} of top {r['src_top']} from {r['src_ancestors']} ancestors; {how}"
        )

    if record or stored_only:  # measure nothing: read what the store holds
        flag = "--record" if record else "--stored-only"
        if store is None:
            raise InputError(f"{flag} reads the stored measurements; drop --no-store")
        for ref in refs:
            if record:
                hit = store.get_record(ref.name)
            else:
                hit = measure_model(ref, settings, store, code=code, stored_only=True)
            if hit is not None:
                report(ref, hit)
                continue
            pending.append(ref.name)
            if log:
                missing = "no stored measurement" if record else "not measured"
                log(f"{ref.name}: {missing} with these settings yet ({flag})")
        refs = [ref for ref in refs if ref.name in measured]
        if not refs:
            raise InputError(f"no stored measurements for these settings; run without {flag}")
    elif jobs > 1 and len(refs) > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        root = store.root if store is not None else None
        ctx = mp.get_context("spawn")  # no forked torch thread pools
        pool = ProcessPoolExecutor(min(jobs, len(refs)), mp_context=ctx)
        try:
            futures = {
                pool.submit(_measure_in_worker, ref, settings, root, threads, code): ref
                for ref in refs
            }
            for done in as_completed(futures):
                report(futures[done], done.result())
        except BaseException:  # an error or Ctrl-C: stop, do not measure the queued models
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    else:
        for ref in refs:
            report(ref, measure_model(ref, settings, store, progress, code=code, log=log))
    ordered = [measured[ref.name] for ref in refs]
    return Replication.from_models(
        pd.DataFrame([m.row for m in ordered]),
        settings,
        tasks=pd.concat([m.tasks for m in ordered], ignore_index=True),
        sentences={ref.name: m.sentence for ref, m in zip(refs, ordered, strict=True)},
        seconds=sum(m.seconds for m in ordered),
        record=record,
        pending=pending,
        specs={ref.name: ref.spec for ref in refs},
    )
