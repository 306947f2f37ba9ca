"""The moto patch ``aws_limits``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_aws_limits`` says what upstream moto does and what AWS does instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_aws_limits() -> None:
    """AWS refuses a call past its documented limits (contract/limits.py: RunTask's overrides
    over 8,192 characters, a Lambda environment over 4 KB, a synchronous invoke's payload over
    6 MB, an SNS message over 256 KB in bytes, a schedule or event rule past the account's
    quota); moto 5.2.5 takes them all (it counts an SNS message in characters). Every request of
    the wrapped services passes the ``fault_injection`` wrapper, which asks the limits first,
    whether or not a fault injector is installed (moto_patches/limits.py ``excess``)."""
    from jobplane.platform.local.moto_patches.limits import excess
    from jobplane.platform.local.moto_patches import fault_injection

    fault_injection.LIMITS = excess
