"""Tables and the verdict: the zoo's figures beside the source's, point by point, as Markdown.

Every sentence of :func:`verdict` is generated from the measured tables (nothing concluded in
advance): where the zoo agrees with the source (Kapl et al. 2025; docs/research.md), where it
does not, and what this design could and could not have shown.
"""

from __future__ import annotations

import math

import pandas as pd

from .config import SOURCE, SOURCE_FAMILIES, SOURCE_LABEL
from .stats import group_names

ALPHA = 0.05


# --------------------------------------------------------------------------- formatting


def _f(v, spec: str = ".3f", signed: bool = False) -> str:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return "–"
    if math.isnan(v):
        return "–"
    return format(v, ("+" if signed else "") + spec)


def _pm(mean, std, spec: str = ".3f", signed: bool = True) -> str:
    text = _f(mean, spec, signed)
    try:
        ok = std is not None and float(std) == float(std)
    except (TypeError, ValueError):
        ok = False
    return f"{text} ± {_f(std, spec)}" if ok and text != "–" else text


def _pct(v) -> str:
    return "–" if v is None or v != v else f"{float(v):.0%}"


def _p(v) -> str:
    return "–" if v is None or v != v else (f"{float(v):.3f}" if v >= 0.001 else "<0.001")


def _p_exact(v) -> str:
    """A p-value that can be far below 0.001 (the pooled test's), in scientific notation there."""
    return f"{v:.0e}" if v is not None and v == v and v < 0.001 else _p(v)


def _md(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |")
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _label(fam: str, src: str | None) -> str:
    return f"{fam} ({SOURCE_LABEL.get(src, '?')})" if src and fam != src else fam


def _src(src: str | None, key: str, spec: str = ".2f") -> str:
    v = SOURCE[key].get(src) if src else None
    return "–" if v is None else format(v, spec)


# --------------------------------------------------------------------------- tables


def models_table(models: pd.DataFrame) -> str:
    """One row per model (every seed)."""
    top_n = int(models["top_n"].iloc[0]) if len(models) else 0
    header = [
        "model",
        "clean",
        "top-20% drop [95% CI]",
        "random heads",
        "excess",
        "p (Holm)",
        "RegBench TVD clean (drop)",
        "top 12: 10 from m ancestors",
        f"top-{top_n} ancestors (random)",
        "max induction (heads ≥ 0.4)",
        "FLOPs vs dense",
    ]
    rows = []
    for r in models.to_dict(orient="records"):
        rows.append(
            [
                r["model"],
                _f(r["clean"]),
                f"{_f(r['drop'], signed=True)} "
                f"[{_f(r['ci_lo'], '+.2f')}, {_f(r['ci_hi'], '+.2f')}]",
                _pm(r["ctrl_mean"], r["ctrl_std"]),
                _f(r["excess"], signed=True),
                f"{_p(r['p_perm'])} ({_p(r['p_holm'])})",
                f"{_f(r.get('tvd_clean'))} ({_f(r.get('tvd_drop'), signed=True)})",
                f"{r['src_heads']} of {r['src_top']} from {r['src_ancestors']}",
                f"{r['top_ancestors']} of {r['ancestor_pool']} "
                f"({_f(r['random_ancestors'], '.1f')})",
                f"{_f(r['max_induction'], '.2f')} ({int(r['induction_heads'])})",
                _f(r.get("flops_vs_dense"), ".2f"),
            ]
        )
    return _md(header, rows)


def _comparison(comps: pd.DataFrame, fam: str, measure: str) -> str:
    if comps is None or comps.empty:
        return "–"
    hit = comps[(comps["family"] == fam) & (comps["measure"] == measure)]
    if hit.empty:
        return "(baseline)" if fam in set(comps["vs"]) else "–"
    c = hit.iloc[0]
    return f"{_f(c['diff'], signed=True)} (p {_p(c['p_perm'])}, Holm {_p(c['p_holm'])})"


def family_table(families: pd.DataFrame, comps: pd.DataFrame) -> str:
    """One row per family: mean ± sd over seeds and the test across seeds against dense."""
    header = [
        "family",
        "seeds",
        "clean",
        "top-20% drop",
        "excess over random",
        "random heads (pooled)",
        "seeds with Holm p ≤ 0.05",
        "all seeds vs random heads: exact p (Holm)",
        "Δ drop vs dense (perm. p)",
        "Δ excess vs dense (perm. p)",
        "source drop",
    ]
    rows = []
    for r in families.to_dict(orient="records"):
        rows.append(
            [
                _label(r["family"], r["source_family"]),
                str(r["seeds"]),
                _pm(r["clean"], r["clean_std"], signed=False),
                _pm(r["drop"], r["drop_std"]),
                _pm(r["excess"], r["excess_std"]),
                _pm(r["ctrl_pooled"], r["ctrl_pooled_std"]),
                f"{r['n_significant']} of {r['seeds']}",
                f"{_p_exact(r.get('p_pooled'))} ({_p_exact(r.get('p_pooled_holm'))})",
                _comparison(comps, r["family"], "drop"),
                _comparison(comps, r["family"], "excess"),
                _f(r["source_drop"], ".2f"),
            ]
        )
    return _md(header, rows)


def source_table(families: pd.DataFrame) -> str:
    """The source's figures beside the zoo's, point by point (zoo: mean ± sd over seeds;
    the source's value for the family's counterpart in brackets)."""
    fams = families.to_dict(orient="records")
    header = ["claim", "source"] + [_label(r["family"], r["source_family"]) for r in fams]
    src_all = ", ".join(f"{SOURCE_LABEL[f]} {{}}" for f in SOURCE_FAMILIES)
    rows = [
        [
            f"mean drop over the measured tasks, top {SOURCE['frac']:.0%} heads zeroed",
            "mean F1 over 19 tasks: "
            + src_all.format(*(SOURCE["drop"][f] for f in SOURCE_FAMILIES)),
            *[
                f"{_pm(r['drop'], r['drop_std'])} [{_src(r['source_family'], 'drop')}]"
                for r in fams
            ],
        ]
    ]
    for g in group_names(families):
        rows.append(
            [
                f"group mean drop: {g} (clean)",
                "not reported",
                *[
                    f"{_pm(r[f'drop:{g}'], r[f'drop:{g}_std'])} ({_f(r[f'clean:{g}'], '.2f')})"
                    for r in fams
                ],
            ]
        )
    if "tvd_clean" in families.columns:
        rows.append(
            [
                "RegBench TVD, clean (lower is better)",
                src_all.format(*(SOURCE["tvd"][f] for f in SOURCE_FAMILIES)),
                *[
                    f"{_pm(r['tvd_clean'], r['tvd_clean_std'], signed=False)} "
                    f"[{_src(r['source_family'], 'tvd', '.3f')}]"
                    for r in fams
                ],
            ]
        )
    lin = SOURCE["lineage"]
    rows.append(
        [
            f"{lin['heads']} of the {lin['top']} strongest heads from m ancestors",
            f"m = {lin['ancestors']} ({lin['model']})",
            *[
                f"m = {_pm(r['src_ancestors'], r['src_ancestors_std'], '.1f', False)} "
                f"(fewest {r['src_min']}; 2 most prolific hold {_f(r['src_from2'], '.1f')})"
                for r in fams
            ],
        ]
    )
    rows.append(
        [
            "training FLOPs vs dense",
            f"LIDAS {1 - SOURCE['flops_saving']:.2f} ({SOURCE['flops_saving']:.0%} fewer)",
            *[_f(r.get("flops_vs_dense"), ".2f") for r in fams],
        ]
    )
    return _md(header, rows, "ll" + "r" * len(fams))


def task_table(tasks: pd.DataFrame, families: list[str] | None = None) -> str:
    """Per family and task: clean → drop with the top 20% ablated (random heads' drop), means
    over seeds, so one sees which abilities go."""
    if tasks is None or tasks.empty or "family" not in tasks.columns:
        return ""
    t = tasks[~tasks["task"].astype(str).str.startswith("MEAN")]
    names = list(dict.fromkeys(t["task"]))
    header = ["task (metric)"] + list(families or dict.fromkeys(t["family"]))
    rows = []
    for n in names:
        x = t[t["task"] == n]
        pc = bool(x["positive_control"].astype(bool).any()) if "positive_control" in x else False
        cells = [f"{n} ({x['metric'].iloc[0]})" + (" *" if pc else "")]
        for fam in header[1:]:
            y = x[x["family"] == fam]
            cells.append(
                "–"
                if y.empty
                else f"{_f(y['clean'].mean(), '.2f')} → {_f(y['drop'].mean(), '.2f', True)} "
                f"({_f(y['ctrl_mean'].mean(), '.2f', True)})"
            )
        rows.append(cells)
    return _md(header, rows)


def markdown_tables(rep) -> str:
    """Per model, per family (with the tests across seeds), then the source point by point."""
    return "\n\n".join(
        [
            models_table(rep.models),
            family_table(rep.families, rep.comparisons),
            source_table(rep.families),
        ]
    )


# --------------------------------------------------------------------------- verdict


def _fam_rows(families: pd.DataFrame) -> list[dict]:
    return families.to_dict(orient="records")


def verdict(rep) -> list[str]:
    """Plain sentences comparing the measured tables with the source's claims."""
    fams = _fam_rows(rep.families)
    comps, s = rep.comparisons, rep.settings
    out: list[str] = []
    for r in fams:
        src = r["source_family"]
        out.append(
            f"{_label(r['family'], src)}: ablating the top {s.frac:.0%} heads drops the mean "
            f"score over the measured tasks by {_pm(r['drop'], r['drop_std'])} over "
            f"{r['seeds']} seed(s) (source {_src(src, 'drop')}); random heads "
            f"{_pm(r['ctrl_pooled'], r['ctrl_pooled_std'])}, so the excess is "
            f"{_pm(r['excess'], r['excess_std'])}; {r['n_significant']} of {r['seeds']} seed(s) "
            f"beat random heads at Holm-adjusted p ≤ {ALPHA} (z per seed {r['z_seeds']})"
            + _pooled(r)
        )
    out += _order(fams, comps)
    ratios = [
        (r["family"], r["drop"] / SOURCE["drop"][r["source_family"]])
        for r in fams
        if r["source_family"] in SOURCE["drop"] and r["drop"] == r["drop"]
    ]
    if ratios:
        out.append(
            "Size: the zoo's drops are "
            + ", ".join(f"{f} {x:.1f}x" for f, x in ratios)
            + " the source's; relative to the clean score the top heads cost "
            + ", ".join(f"{r['family']} {_pct(r.get('rel_drop'))}" for r in fams)
            + " and random heads "
            + ", ".join(f"{r['family']} {_pct(r.get('ctrl_rel'))}" for r in fams)
            + "."
        )
    out += _groups(rep)
    out += _regbench(fams)
    out += _lineage(fams)
    out += _flops(fams)
    out += _design(rep)
    return out


def _pooled(r: dict) -> str:
    """The family's seeds together against their random heads (stats.pooled_rank_p)."""
    p, adj = r.get("p_pooled"), r.get("p_pooled_holm")
    if p is None or p != p or adj is None:
        return "."
    said = "beat" if adj <= ALPHA else "do not beat"
    return (
        f"; its {r['seeds']} seed(s) together {said} random heads (exact rank test p "
        f"{_p_exact(p)}, Holm over families {_p_exact(adj)})."
    )


def _order(fams: list[dict], comps: pd.DataFrame) -> list[str]:
    out = []
    valid = [r for r in fams if r["drop"] == r["drop"]]
    if len(valid) > 1:
        zoo = sorted(valid, key=lambda r: r["drop"])
        src = sorted(valid, key=lambda r: SOURCE["drop"].get(r["source_family"], math.inf))
        same = [r["family"] for r in zoo] == [r["family"] for r in src]
        out.append(
            "Order of the drops: "
            + " < ".join(f"{r['family']} ({r['drop']:+.3f})" for r in zoo)
            + ("; the same as the source's." if same else "; the source's order is ")
            + ("" if same else " < ".join(r["family"] for r in src) + ".")
        )
    if comps is None or comps.empty:
        return out
    for fam in dict.fromkeys(comps["family"]):
        d = comps[(comps["family"] == fam) & (comps["measure"] == "drop")].iloc[0]
        e = comps[(comps["family"] == fam) & (comps["measure"] == "excess")].iloc[0]
        sd_ = d["source_diff"]
        sign = (
            "the source's direction"
            if sd_ == sd_ and d["diff"] * sd_ > 0
            else "against the source's direction"
        )
        resolved = (
            f"resolved at Holm-adjusted p ≤ {ALPHA}"
            if d["p_holm"] <= ALPHA
            else f"not resolved at {ALPHA}"
        )
        out.append(
            f"{fam} − {d['vs']} across seeds: drop {d['diff']:+.3f} (source {_f(sd_, '+.2f')}; "
            f"{sign}), exact permutation p {_p(d['p_perm'])} over {d['n_a']} vs {d['n_b']} "
            f"seeds (smallest possible {_p(d['min_p'])}), Welch p {_p(d['p_welch'])}: "
            f"{resolved}; in excess of random heads {e['diff']:+.3f} (p {_p(e['p_perm'])}, "
            f"Holm {_p(e['p_holm'])})."
        )
    return out


def _groups(rep) -> list[str]:
    groups = group_names(rep.families)
    if len(groups) < 2:
        return []
    out = []
    for r in _fam_rows(rep.families):
        vals = {g: r[f"drop:{g}"] for g in groups if r[f"drop:{g}"] == r[f"drop:{g}"]}
        if not vals:
            continue
        near = [g for g in groups if r[f"clean:{g}"] == r[f"clean:{g}"] and r[f"clean:{g}"] < 0.05]
        top = max(vals, key=lambda g: vals[g])
        out.append(
            f"{r['family']} by group (drop; clean): "
            + ", ".join(f"{g} {vals[g]:+.3f}; {_f(r[f'clean:{g}'], '.2f')}" for g in vals)
            + f"; the largest drop is in {top}"
            + (
                f"; {', '.join(near)} clean below 0.05, so there is nothing to drop there."
                if near
                else "."
            )
        )
    return out


def _regbench(fams: list[dict]) -> list[str]:
    rows = [r for r in fams if r.get("tvd_clean") == r.get("tvd_clean") and "tvd_clean" in r]
    if not rows:
        return []
    zoo = sorted(rows, key=lambda r: r["tvd_clean"])
    src = sorted(rows, key=lambda r: SOURCE["tvd"].get(r["source_family"], math.inf))
    same = [r["family"] for r in zoo] == [r["family"] for r in src]
    lo, hi = min(SOURCE["tvd"].values()), max(SOURCE["tvd"].values())
    return [
        "RegBench TVD of the clean models (the zoo suite's held-out automata; lower is better): "
        + ", ".join(
            f"{r['family']} {_pm(r['tvd_clean'], r['tvd_clean_std'], signed=False)}" for r in zoo
        )
        + f" against the source's {lo:.3f}-{hi:.3f} (LIDAS best, dense worst); the zoo's order "
        + (
            "is the source's"
            if same
            else "differs from the source's (" + " < ".join(r["family"] for r in src) + " there)"
        )
        + f", its levels {min(r['tvd_clean'] for r in rows):.3f}-"
        f"{max(r['tvd_clean'] for r in rows):.3f}. Ablating the top heads "
        "raises it by "
        + ", ".join(f"{r['family']} {_f(r.get('tvd_drop'), '+.3f')}" for r in rows)
        + " (random heads "
        + ", ".join(f"{_f(r.get('tvd_ctrl'), '+.3f')}" for r in rows)
        + ")."
    ]


def _lineage(fams: list[dict]) -> list[str]:
    lin = SOURCE["lineage"]
    out = []
    for r in fams:
        what = {
            "dense": "of the model's own heads",
            "lidas": "of the initial network's heads",
            "looped": "of the stored block's heads",
        }.get(r["source_family"], "ancestors")
        m = r["src_ancestors"]
        conc = r["top_ancestors"] < r["random_ancestors"] - 0.5
        agree = m <= lin["ancestors"] + 0.5
        line = (
            f"{r['family']}: {r['src_heads']} of the {r['src_top']} strongest heads descend from "
            f"{_pm(m, r.get('src_ancestors_std'), '.1f', False)} {what} (fewest possible "
            f"{r['src_min']}; source {lin['heads']} of {lin['top']} from {lin['ancestors']}, "
            f"{lin['model']})"
        )
        if r["source_family"] == "dense":
            line += ": trivially, a dense model is its own lineage."
        else:
            line += (
                (
                    "; the source's claim is about LIDAS"
                    if r["source_family"] != "lidas"
                    else "; as concentrated as the source's"
                    if agree
                    else "; less concentrated than the source's"
                )
                + f". The {r['top_n']} ablated heads come from {r['top_ancestors']:.1f} of "
                f"{r['ancestor_pool']} (random heads {r['random_ancestors']:.1f}): "
                + (
                    "more concentrated than chance."
                    if conc
                    else "no more concentrated than chance."
                )
            )
        out.append(line)
    return out


def _flops(fams: list[dict]) -> list[str]:
    out = []
    for r in fams:
        x = r.get("flops_vs_dense")
        if x is None or x != x or r["source_family"] == "dense":
            continue
        if r["source_family"] == "lidas":
            out.append(
                f"Training FLOPs: {r['family']} {x:.2f}x dense ({1 - x:.0%} fewer; source "
                f"{SOURCE['flops_saving']:.0%} fewer)."
            )
        else:
            out.append(f"Training FLOPs: {r['family']} {x:.2f}x dense.")
    return out


def _design(rep) -> list[str]:
    """What the design could and could not show, from its own sizes."""
    m, s = rep.models, rep.settings
    if m.empty:
        return []
    n = len(m)
    n_ctrl = s.controls
    min_p = 1 / (1 + n_ctrl) if n_ctrl else math.nan
    holm_floor = n * min_p
    layers = sorted({int(v) for v in m["layers"]})
    heads = sorted({int(v) for v in m["heads"]})
    widths = sorted({int(v) for v in m["d_model"]}) if "d_model" in m else []
    vocab = sorted({int(v) for v in m["vocab"]}) if "vocab" in m else []
    seeds = rep.families["seeds"].tolist()
    out = [
        f"What this design can show: {n} models, {n_ctrl} random-head controls each, so a "
        f"model's permutation p is at least {min_p:.3f} and, Holm over {n} models, the "
        f"smallest adjusted p is {min(1.0, holm_floor):.3f}"
        + (
            f" (≤ {ALPHA}: a model can beat its random heads after correction)."
            if holm_floor <= ALPHA
            else f" (> {ALPHA}: no model can pass the correction on its own; each family's "
            "seeds pooled can: the exact rank test reaches down to "
            f"{_p_exact(min_p ** max(seeds))} with {max(seeds)} seed(s))."
        ),
    ]
    comps = rep.comparisons
    if comps is not None and not comps.empty:
        drop = comps[comps["measure"] == "drop"].to_dict(orient="records")
        parts = [
            f"{c['family']} {int(c['n_a'])} vs {int(c['n_b'])} (smallest possible p "
            f"{_p(c['min_p'])}" + (", so it cannot reach 0.05)" if c["min_p"] > ALPHA else ")")
            for c in drop
        ]
        out.append(
            f"Across seeds each family is compared with {drop[0]['vs']} by an exact "
            "permutation test over its seeds: " + ", ".join(parts) + "; the intervals and "
            "Welch's t are the finer measure where the seeds are few."
        )
    out.append(
        f"What it cannot show: the models are tiny ({', '.join(map(str, layers))} layers, "
        f"{', '.join(map(str, heads))} heads, width {', '.join(map(str, widths))}) on a "
        f"synthetic vocabulary of {', '.join(map(str, vocab))} tokens, against the source's "
        "360M-3B models on natural text; "
        + (
            "the source's 19 tasks are rebuilt in that vocabulary (docs/zoo19.md)"
            if s.suite == "zoo19"
            else "the source's closed-book and primitive groups are asked in the zoo's training "
            "formats (zootrain, docs/replication.md); its other groups need skills never trained"
            if s.suite == "zootrain"
            else "the source's 19 tasks in its four groups are asked in round 4's training "
            "formats on that vocabulary (zoo4g, docs/replication.md), each skill trained"
            if s.suite == "zoo4g"
            else f"the tasks are the {s.suite} suite's"
        )
        + (f", {len(s.tasks)} of them run here" if s.tasks else "")
        + f"; {s.n_items} items per task and prompt seed x "
        f"{len(s.prompt_seeds)} prompt seed(s), on CPU budgets. Agreement in direction is "
        "evidence about the mechanism at small scale, not a reproduction of the source's sizes."
    )
    return out
