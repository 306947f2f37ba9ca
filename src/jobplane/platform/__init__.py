"""The runtime beside the compiled state machines: what the portal and the CLI do (control
plane, repository, timeline, logs) and the Lambdas (reconciler, notifier, slow-run check), the
same code on AWS and on the embedded local AWS (:mod:`jobplane.platform.local`).

Built on :mod:`jobplane.contract` only; it never imports the compiler, the portal or the CLI.
"""
