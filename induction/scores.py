"""Compatibility module: the scan's public names at their old address.

The scan now lives in one module per idea: :mod:`induction.scan` (the pipeline, ``scan``,
``ScanConfig``, ``ScanResult``, ``induction_scores``, ``in_context_loss``),
:mod:`induction.stripe` (the pattern hook), :mod:`induction.passes` and
:mod:`induction.chunking` (forward passes), :mod:`induction.copying`, :mod:`induction.loss`,
:mod:`induction.stats`, :mod:`induction.score_names` and :mod:`induction.target`. Importing
from ``induction.scores`` keeps working; new code should import from those modules.
"""

from __future__ import annotations

from induction.chunking import CPU_TOKENS_PER_PASS, auto_chunk
from induction.copying import copying_scores
from induction.scan import ScanConfig, ScanResult, in_context_loss, induction_scores, scan
from induction.score_names import (
    ATTENTION_SCORES,
    CONVENTIONS,
    DEFAULT_COPYING_TOKENS,
    DEFAULT_SEEDS,
    INDUCTION_THRESHOLD,
    SCORES,
    TL_SCORES,
    check_scores,
)
from induction.target import model_device

__all__ = [
    "ATTENTION_SCORES",
    "CONVENTIONS",
    "CPU_TOKENS_PER_PASS",
    "DEFAULT_COPYING_TOKENS",
    "DEFAULT_SEEDS",
    "INDUCTION_THRESHOLD",
    "SCORES",
    "ScanConfig",
    "ScanResult",
    "TL_SCORES",
    "auto_chunk",
    "check_scores",
    "copying_scores",
    "in_context_loss",
    "induction_scores",
    "model_device",
    "scan",
]
