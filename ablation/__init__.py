"""Head ablation and few-shot evaluation: ``induction ablate``.

Lazy API (importing the package stays light so ``induction --help`` is fast)::

    from ablation import AblationConfig, ablate, ablate_heads

    result = ablate("grown8c", AblationConfig(frac=0.2, controls=20))  # = induction ablate
    result.to_frame()          # per task: clean, ablated, drop, controls, z, p_ctrl; MEAN row
    result.save("report.json") # or .csv/.parquet/.jsonl; result.plot("report.html")

    with ablate_heads(loaded.bridge, [(3, 1)]):   # any forward or generate, heads zeroed
        ...

The steps behind :func:`ablate` stay public: ``plan_heads``, ``load_suite``,
``run_ablation``, ``build_report``.
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
    "plot_report": "ablation.render",
    "ablate": "ablation.pipeline",
    "AblationResult": "ablation.pipeline",
    "AblationConfig": "ablation.config",
    "EvalResult": "ablation.results",
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
