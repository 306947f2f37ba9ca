"""AWS's documented size and count limits our compiled resources approach, in one table: each
with its value, the error AWS answers on excess and the page that says so. The local engine
enforces each (docs/local-engine.md "Limits and faults"), so a run that passes locally cannot
exceed one on AWS; contract/quotas.py holds the account quotas `jobplane plan` counts, and the
count limits here take their values from it.
"""

from __future__ import annotations

#: The local AWS's fault profiles (jobplane.platform.local.faults; `jobplane dev --faults`, [dev] faults).
FAULT_PROFILES = ("none", "aws-typical", "storm")
