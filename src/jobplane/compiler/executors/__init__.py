"""Where a step's attempts run, one class each (ECS on Fargate, Lambda): the Task state and its
check, its retries, and what the state machine's role may call for it. After Dagster's executors:
the job's graph (compiler/asl.py) is the same whichever runs an attempt."""
