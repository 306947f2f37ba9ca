"""Where the compiled state machine keeps what it knows during a run (the state data), shared by
the ASL builder and the executors that compile a step's attempts.

``$.run.steps.<step_key>`` holds a step's attempt counter and, when its attempt ran to its end,
its result; ``$.run.error`` the latest failed attempt's error (one slot, so the state data cannot
grow with failed attempts toward the 256 KB limit); ``$.run.infra`` the infrastructure retries used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobplane.contract.items import Ref

if TYPE_CHECKING:
    from jobplane.compiler.model import Step

#: Seconds before each retry of an attempt whose task never ran the step (rc.INFRA_STOP_CODES);
#: one budget per run (per parallel branch), counted at $.run.infra.n.
INFRA_WAITS = (15, 60, 180)
INFRA = "$.run.infra"
#: The latest failed attempt's error ({Error, Cause}); a step's slot holds only a success.
ERROR = "$.run.error"
#: In a step's slot ($.run.steps.<key>): this attempt's result, when its task ran to its end;
#: the attempt number (only for a step that may be retried); its back-off seconds.
RESULT, ATTEMPT, BACKOFF = "result", "n", "wait"
# The step a timeout is recorded at: a workflow variable that the timed-out attempt's catcher
# assigns, so one Finish (timed out) per job records any step's timeout instead of a ~2 KB
# transaction per step (issue 19). Variables work in JSONPath states ("To reference a variable,
# prefix the name with a dollar sign": docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html;
# a Catcher's Assign runs when it matches). Read through States.Format, the form the ASL linter
# (statelint) accepts in a JSONPath state; it only allows Assign on catchers there, so a failure
# that the check decides (it can follow a Task that succeeded) keeps its per-step record.
FAILED_STEP_VAR = "failed_step"
FAILED_STEP = Ref(f"States.Format('{{}}', ${FAILED_STEP_VAR})")


def steps_slot(step: Step) -> str:
    return f"$.run.steps.{step.key}"
