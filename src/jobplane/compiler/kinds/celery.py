"""``jp.celery(name, 'app.tasks.name', args, kwargs)``: a registered Celery task executed inline
(no broker: the runner calls it in its own process)."""

from __future__ import annotations

import re

from jobplane.compiler.fields import FieldSpec, Nullable, Str
from jobplane.compiler.kinds.base import EcsKind
from jobplane.compiler.kinds.checks import matches

CELERY_TASK_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


class CeleryKind(EcsKind):
    name = "celery"
    spec = FieldSpec(Nullable(Str()), "Registered Celery task name, executed inline.",
                     matches(CELERY_TASK_RE, "{value} is not a Celery task name such as 'billing.tasks.close_month'"))
    takes_args = True
    takes_kwargs = True
    helper = "celery(name, task, args=[], kwargs={}, opts={})"
