"""Training dynamics at scale: sweeps over checkpoints and models, formation timelines.

- :mod:`induction.dynamics.sweep`: ``induction sweep``, the scan (and optionally the in-context
loss,
  depth angles, lineage and the ablation) over many models or checkpoints into a Parquet
  dataset, resumable and safe against concurrent writers.
- :mod:`induction.dynamics.dataset`: the dataset's schema, reader and writer.
- :mod:`induction.dynamics.timeline`: ``induction timeline``, per-head formation steps, growth
events and
  the in-context loss curve from a sweep dataset.

It sits above ``lineage`` and ``ablation`` (docs/design.md); methods in docs/dynamics.md.
"""
