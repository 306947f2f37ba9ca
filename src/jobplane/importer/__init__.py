"""``jobplane import``: a team's existing schedules (crontab, Kubernetes CronJobs, EventBridge,
ecschedule, Celery beat) read as :mod:`entries`, mapped to job files (:mod:`schedules`,
:mod:`steps`, :mod:`naming`, :mod:`render`), validated with the repository and proved fire by
fire against the source (:mod:`verify`) before anything is written (:mod:`importing`).
It sits on the compiler (whose validation it runs) and is used by the CLI.
"""
