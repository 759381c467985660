"""Head ablation and few-shot evaluation: ``induction ablate``.

Lazy API (importing the package stays light so ``induction --help`` is fast)::

    from ablation import plan_heads, load_suite, run_ablation, build_report, ablate_heads

    plan = plan_heads(loaded, frac=0.2, n_controls=5)   # top 20% by induction score + controls
    tasks = load_suite("words", n_items=40)
    run = run_ablation(loaded, tasks, plan, mode="zero")
    df = build_report(run)                              # per-task clean/ablated/drop/controls/z
"""

from __future__ import annotations

import importlib

_API = {
    "ablate_heads": "ablation.hooks",
    "HeadAblation": "ablation.hooks",
    "head_means": "ablation.hooks",
    "Engine": "ablation.engine",
    "enable_kv_cache": "ablation.engine",
    "plan_heads": "ablation.run",
    "run_ablation": "ablation.run",
    "build_report": "ablation.report",
    "write_report": "ablation.report",
    "plot_report": "ablation.report",
    "load_suite": "ablation.tasks",
    "SUITES": "ablation.tasks",
    "top_frac": "ablation.selection",
    "random_controls": "ablation.selection",
    "token_f1": "ablation.metrics",
    "exact_match": "ablation.metrics",
    "tvd": "ablation.metrics",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'ablation' has no attribute {name!r}")
