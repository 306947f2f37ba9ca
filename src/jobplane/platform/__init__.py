"""The runtime contract shared by the compiler, runner, portal, CLI and the local engine.

Nothing here talks to AWS at import time; modules hold the vocabulary (statuses, policies),
the data model's keys, the runner's command/environment contract and schedule semantics.
"""
