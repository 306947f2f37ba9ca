"""``jp.django(name, 'command', args)``: a Django management command run inline."""

from __future__ import annotations

import re

from jobplane.compiler.fields import FieldSpec, Nullable, Str
from jobplane.compiler.kinds.base import EcsKind
from jobplane.compiler.kinds.checks import matches

DJANGO_COMMAND_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


class DjangoKind(EcsKind):
    name = "django"
    spec = FieldSpec(Nullable(Str()), "Django management command name, run with args.",
                     matches(DJANGO_COMMAND_RE, "{value} is not a management command name such as 'clearsessions'"))
    takes_args = True
    helper = "django(name, command, args=[], opts={})"
