"""Outputs (atomic, :mod:`induction.store.io`), reading them back, and the generated block of
``docs/results.md`` between :data:`README_START` and :data:`README_END`."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from induction.errors import InputError, one_line

from .config import DEFAULT_OUT, ROUND4_MEASURING_COMMIT, SOURCE, Settings
from .figures import figure
from .models import is_round4
from .pipeline import Replication
from .report import task_table, verdict
from .store import strict_json

README_START = "<!-- replication:start -->"
README_END = "<!-- replication:end -->"
SUMMARY_START = "<!-- replication-summary:start -->"
SUMMARY_END = "<!-- replication-summary:end -->"
DEFAULT_FIGURE = "../benchmarks/results/zoo4/replication.png"  # relative to docs/


def payload(rep: Replication) -> dict:
    """Everything of a run as strict JSON (NaN -> null)."""
    return strict_json(
        {
            "settings": asdict(rep.settings),
            "source": SOURCE,
            "seconds": round(rep.seconds, 1),
            "models": rep.models.to_dict(orient="records"),
            "families": rep.families.to_dict(orient="records"),
            "comparisons": rep.comparisons.to_dict(orient="records"),
            "sentences": rep.sentences,
            "verdict": verdict(rep),
            "record": rep.record,
            "gates": rep.gates.to_dict(orient="records"),
            "claims": rep.claims.to_dict(orient="records"),
            "pending": rep.pending,
            "markdown": rep.markdown(),
        }
    )


def check_out_dir(out_dir: str | Path, refs, models_dir: str | Path | None) -> None:
    """Refuse, before measuring, an ``--out-dir`` whose outputs (the tables, JSON and figure,
    the store in ``models/``) would land in a folder the run reads: a model's folder or
    ``--models-dir`` (docs/safety.md: no output over or inside an input)."""
    from induction.models.specs import model_inputs
    from induction.store.io import check_outputs

    inputs = [p for ref in refs for p in model_inputs(ref.spec)]
    inputs += [Path(models_dir)] if models_dir is not None else []
    out = Path(out_dir)
    check_outputs({"--out-dir": out / "replication.json"}, inputs)
    check_outputs({"--out-dir": out / "models"}, inputs)


def write_outputs(rep: Replication, out_dir: str | Path, png: bool = True) -> list[str]:
    """Write tables, JSON and the figure atomically; returns what was written (and notes)."""
    from induction.figures.plots import save_figure
    from induction.store.io import write_json, write_table

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        str(write_table(rep.models, out / "replication.csv")),
        str(write_table(rep.tasks, out / "replication_tasks.csv")),
        str(write_table(rep.families, out / "replication_families.csv")),
        str(write_table(rep.comparisons, out / "replication_comparisons.csv")),
        str(write_json(out / "replication.json", payload(rep))),
    ]
    fig = figure(rep.models, rep.families)
    save_figure(fig, out / "replication.html")
    written.append(str(out / "replication.html"))
    if png:
        note = save_figure(fig, out / "replication.png")
        written.append(note or str(out / "replication.png"))
    return written


def record_settings(out_dir: str | Path, fallback: Settings | None = None) -> Settings:
    """The settings a record (``--record``) was measured with, read from its
    ``replication.json``; fields the measuring code did not have yet take what it did
    instead (uniform controls, no readouts, no further fractions). ``fallback`` (default
    :class:`Settings`) when there is no such file."""
    path = Path(out_dir) / "replication.json"
    if not path.is_file():
        return fallback or Settings()
    stored = json.loads(path.read_text())["settings"]
    before = {"controls_shape": "uniform", "readouts": False, "extra_fracs": ()}
    return Settings.from_dict({**before, **stored})


def load_results(out_dir: str | Path = DEFAULT_OUT) -> Replication | None:
    """The last written replication (``replication.json``), or None. Family rows and the
    tests across seeds are recomputed from the per-model rows, and the verdict per claim
    from the stored gate table (:meth:`Replication.reread_claims`)."""
    path = Path(out_dir) / "replication.json"
    if not path.is_file():
        return None
    from induction.store.io import read_json

    data = read_json(path, "replication results")
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise InputError(f"{path} is not a replication's results; rerun the measurement")
    if not data.get("models") or "p_perm" not in data["models"][0]:
        return None  # written by the first version of this script: rerun to upgrade
    tasks_path = Path(out_dir) / "replication_tasks.csv"
    try:
        tasks = pd.read_csv(tasks_path) if tasks_path.is_file() else pd.DataFrame()
        models = pd.DataFrame(data["models"]).fillna(np.nan)
        models["ctrl_drops"] = models["ctrl_drops"].astype(str)
        return Replication.from_models(
            models,
            Settings.from_dict(data["settings"]),
            tasks=tasks,
            sentences=data.get("sentences", {}),
            seconds=float(data.get("seconds") or 0.0),
            record=bool(data.get("record", False)),
            gates=pd.DataFrame(data.get("gates") or []),
            claims=pd.DataFrame(data.get("claims") or []),
            pending=list(data.get("pending") or []),
        ).reread_claims()
    except (KeyError, TypeError, ValueError, AttributeError, pd.errors.ParserError) as e:
        raise InputError(
            f"{path} (or replication_tasks.csv beside it) is damaged ({one_line(e, 120)}); "
            "rerun the measurement"
        ) from None


def readme_block(rep: Replication, figure_path: str = DEFAULT_FIGURE, command: str = "") -> str:
    """The generated block of ``docs/results.md``: command, settings, figure, tables, verdict
    (``figure_path`` is relative to the Markdown file)."""
    s = rep.settings
    n = len(rep.models)
    tasks = ", ".join(s.tasks) if s.tasks else f"the whole {s.suite} suite"
    command = command or "python benchmarks/replication.py --readme docs/results.md"
    lines = [
        README_START,
        f"Generated by `{command}` ({n} models, {rep.seconds / 60:.0f} min of measuring summed "
        "over the models, one CPU thread each; `--fast` for reduced settings, `--from-results` "
        "re-renders from the saved JSON; each model's measurement is kept in `models/` beside "
        "the outputs and reused while its inputs are unchanged). Outputs beside the figure "
        "(CSV, JSON, HTML).",
        "",
        f"Settings: top {s.frac:.0%} heads by induction score zeroed ({s.mode}); "
        f"{s.controls} random-head controls per model; {s.n_items} items per task and prompt "
        f"seed ({tasks}), prompt seeds {', '.join(map(str, s.prompt_seeds))}; RegBench: the "
        f"`zoo` suite's `regbench` task with the same head sets; scan {len(s.scan_seeds)} "
        f"seeds x {s.scan_batch} prompts; looped models ablated "
        + ("tied across passes" if s.tied else "per unrolled pass")
        + ". Drop = mean over the measured tasks (F1/EM; positive controls apart), positive = "
        "worse; CI: bootstrap over items within each task and prompt seed "
        f"({s.n_boot} resamples); p: permutation against the model's own random heads, "
        "(1 + k) / (1 + n), Holm over models; across seeds: exact permutation test and Welch's "
        "t (`ablation.stats.family_comparison`), Holm over the comparisons.",
        "",
        *_record_note(rep),
        *_gated(rep),
        f"![replication figure]({figure_path})",
        "",
        rep.markdown(),
        "",
        "Per task (mean over seeds): clean → drop with the top 20% ablated (random heads' "
        "drop); * positive control (kept out of the mean). RegBench: TVD (drop = increase) "
        "and next-letter accuracy.",
        "",
        task_table(rep.tasks, list(rep.families["family"])),
        "",
        "What was measured, read without the gates (the gated verdict above decides what any "
        "of it can say about the source):",
        "",
        *[f"- {line}" for line in verdict(rep)],
        README_END,
    ]
    return "\n".join(lines)


def _record_note(rep: Replication) -> list[str]:
    """Why the measurements are read as stored: round 4 was measured from one frozen commit
    by design (docs/replication.md, "How round 4 is measured"); the first fixed-protocol zoo by
    code that has changed since."""
    if not rep.record:
        return []
    if is_round4(rep.models["family"]):
        why = (
            f"every model was measured from one commit, `{ROUND4_MEASURING_COMMIT}`, as it "
            "landed, and the verdict reads those measurements as they are (docs/replication.md, "
            '"How round 4 is measured"); a rerun from that commit serves them again, one from a '
            "later commit whose measuring code differs measures every model again."
        )
    else:
        why = (
            "the code that measured them has changed since (readouts, layer-shaped controls, "
            "gates), so a rerun cannot reproduce them and none of them enters a verdict until "
            "the gates below pass."
        )
    return [f"**A record.** These measurements are read as stored (`--record`): {why}", ""]


def _gated(rep: Replication) -> list[str]:
    """The gate table and the verdict per source claim (:mod:`.gates`)."""
    from .gates import claims_markdown, gate_markdown

    if rep.gates.empty:
        return []
    n_ok = int(rep.gates["testable"].sum())
    return [
        f"**Validity gates** ({n_ok} of {len(rep.gates)} models testable; "
        "`induction/replication/gates.py`): strongest induction head (>= 0.4), the "
        "strongest head logged before the first growth (grown models), the in-context probe "
        "on fresh content (lookup >= 0.6 and >= 3x chance, variable assignment >= 0.5, "
        "first-assigned vs others gap <= 0.2; `induction.zoo.probe`), clean scores above the "
        "best right-type guess (lower end of a 95% Wilson interval, most tasks), and the "
        "top-20% drop not saturated (it leaves more than 10% of the margin over chance); "
        "the last columns are those two gates on each verdict readout, as the ablation "
        "computed them (docs/replication.md).",
        "",
        gate_markdown(rep.gates),
        "",
        "**Verdict per source claim** (a drop comparison is read only when every model of "
        "both families passes the model gates and a readout's gates, on the first of "
        "cand_acc, logprob that passes, and only when the seeds allow p < 0.05). "
        + WORDS
        + " The excess columns read the drop over each model's own random heads, uniform "
        "and layer-shaped (difference, adjusted), beside the primary raw drop.",
        "",
        *_pending_note(rep),
        claims_markdown(rep.claims),
        "",
    ]


def _pending_note(rep: Replication) -> list[str]:
    if not rep.pending:
        return []
    return [
        f"**Interim: {len(rep.pending)} models are not measured yet** "
        f"({', '.join(rep.pending)}), so every claim that reads their families says "
        "*pending*: a verdict comes from all seeds of a family, never from those measured "
        "first. The figures beside it describe the seeds measured so far.",
        "",
    ]


#: How a drop claim's word follows its interval (docs/replication.md, "Verdict words").
WORDS = (
    'Words (docs/replication.md, "Verdict words"): *agree* when the Holm-adjusted interval '
    "(the exact permutation test inverted at 0.05/m over the m drop claims, seeds unpaired) "
    "excludes 0 on the source's side, *disagree* when it excludes the "
    "source's effect (+0.10 and x2.25 LIDAS, +0.20 and x3.5 looped), *inconclusive* when it "
    "holds both, *untestable here* when a gate or the design rules the test out; read on the "
    "difference and the ratio of mean drops, a word stands where both scales give it, else "
    "*inconclusive*. Detectable difference and power: two-sample t (noncentral), at 0.05 "
    "and, in brackets, 0.05/m. The other rows are read the same way on one difference "
    "(docs/replication.md, A11): the lineage claim on each seed's m minus its chance level "
    "(12 random heads; sign-flip interval, one-sample t; source: 2 minus chance), the "
    "growth-timing question on the arms' difference in m (effect of interest: 2 against "
    "chance), RegBench on each pair's TVD difference at 0.05/pairs against the source's "
    "(the cells: the pair that decides)."
)


#: README's short form of :data:`WORDS`.
WORDS_SHORT = (
    "*agree*: the adjusted interval (the exact permutation test inverted at 0.05/m over the "
    "m drop claims, seeds unpaired) excludes 0 on the source's side; *disagree*: it excludes "
    "the source's effect (+0.10 and x2.25 LIDAS, +0.20 and x3.5 looped); *inconclusive*: it "
    "holds both; a word needs the difference and the ratio to give it. Detectable difference "
    "and power: two-sample t at 0.05 (0.05/m). Other claims read the same way on one "
    "difference (docs/replication.md, A11): lineage, each seed's m minus that of 12 random "
    "heads; growth timing, the arms' difference in m; RegBench, the deciding pair's TVD."
)


def summary_block(
    rep: Replication, results_link: str = "docs/results.md#replication", command: str = ""
) -> str:
    """The README's short block: the verdict per drop claim with its difference, adjusted
    interval, ratio, detectable difference and power (:func:`.gates.verdict_markdown`); the
    full tables live in ``docs/results.md``."""
    from .gates import verdict_markdown

    seeds = ", ".join(
        f"{r['family']} {int(r['seeds'])}" for r in rep.families.to_dict(orient="records")
    )
    link = f"[{results_link.split('#')[0]}]({results_link})"
    readout = "`cand_acc`" if "pass_cand_acc" in rep.gates else "F1/EM"
    return "\n".join(
        [
            SUMMARY_START,
            f"Generated by `{command or 'python benchmarks/replication.py'}` from "
            f"{len(rep.models)} models (seeds: {seeds}); top {rep.settings.frac:.0%} heads "
            f"zeroed, readout {readout}. Gates, excess over random heads, every figure: {link}.",
            "",
            *(_record_note(rep)),
            *(
                [*_pending_note(rep), verdict_markdown(rep.claims), ""]
                if not rep.claims.empty
                else []
            ),
            WORDS_SHORT,
            SUMMARY_END,
        ]
    )


def update_summary(
    path: str | Path, rep: Replication, results_link: str, command: str = ""
) -> Path:
    """Replace the block between the summary markers of ``path`` (atomic write)."""
    block = summary_block(rep, results_link, command)
    return replace_block(path, SUMMARY_START, SUMMARY_END, block)


def check_block(path: str | Path, start: str, end: str) -> str:
    """The text of the Markdown file ``path``, refused in one line (:class:`InputError`) when
    it is unreadable or lacks the ``start`` ... ``end`` markers; scripts call it before hours
    of measuring, not after."""
    from induction.errors import InputError
    from induction.store.io import read_text

    text = read_text(path, "Markdown file")
    if start not in text or end not in text:
        raise InputError(f"{path} has no {start} ... {end} block; add the two marker lines")
    return text


def replace_block(path: str | Path, start: str, end: str, block: str) -> Path:
    """Replace ``start`` ... ``end`` (markers included) of the Markdown file ``path`` with
    ``block`` (atomic write); a file without both markers is refused."""
    from induction.store.io import write_text

    text = check_block(path, start, end)
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return write_text(path, head + block + tail)


def update_readme(
    path: str | Path, rep: Replication, figure_path: str | None = None, command: str = ""
) -> Path:
    """Replace the block between the replication markers of ``path`` (atomic write)."""
    block = readme_block(rep, figure_path or DEFAULT_FIGURE, command)
    return replace_block(path, README_START, README_END, block)


def figure_link(readme: str | Path, out_dir: str | Path) -> str:
    """The figure's path relative to the Markdown file's folder."""
    return os.path.relpath(
        Path(out_dir).resolve() / "replication.png", Path(readme).resolve().parent
    )
