"""Training the embedded zoo: dense, LIDAS-grown and looped tiny Llama models.

An application of lineage's growth operators (:mod:`lineage.growth`) to the zoo's data
(:mod:`induction.zoo.corpus`), so it sits above both. ``induction zoo train`` is its command;
the trained models are shipped under ``induction/zoo/models`` and loaded by name.
"""
