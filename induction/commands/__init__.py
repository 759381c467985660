"""The ``induction`` command line: one module per command family, over the Python API.

The roof of the layering (docs/design.md): a command parses its options, calls the job's
Python function and prints or writes the result; the science lives in the packages below.
:mod:`induction.commands.main` assembles the app (``induction = induction.commands.main:main``)
and :mod:`induction.commands.options` declares the options several commands share.
"""
