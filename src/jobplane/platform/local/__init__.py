"""The embedded local AWS: moto with the fixes our compiled state machines need.

Production runs the same ASL on AWS; locally (``jobplane dev`` and the tests) it runs on moto's
Step Functions interpreter. Each divergence from AWS that matters to us is corrected in
:mod:`jobplane.platform.local.moto_patches`, pinned to the moto version it was written against.
"""
