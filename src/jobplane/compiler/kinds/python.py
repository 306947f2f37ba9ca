"""``jp.python(name, 'package.module:function', kwargs)``: a function called inline by the runner."""

from __future__ import annotations

import re

from jobplane.compiler.fields import FieldSpec, Nullable, Str
from jobplane.compiler.kinds.base import EcsKind
from jobplane.compiler.kinds.checks import matches

PYTHON_TARGET_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
PYTHON_TARGET = FieldSpec(Nullable(Str()), "'package.module:function', called with kwargs.",
                          matches(PYTHON_TARGET_RE, "{value} is not of the form 'package.module:function'"))


class PythonKind(EcsKind):
    name = "python"
    spec = PYTHON_TARGET
    takes_kwargs = True
    helper = "python(name, target, kwargs={}, opts={})"
