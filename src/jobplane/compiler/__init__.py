"""Jsonnet definitions -> validated model -> ASL + Terraform JSON + catalog.

Data flows one way: :mod:`loader` evaluates files, :mod:`validate` builds the model and collects
every problem, :mod:`asl`, :mod:`terraform` and :mod:`catalog` render outputs, and
:mod:`output` writes them all or nothing.
"""
