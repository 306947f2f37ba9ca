"""The moto patch ``ec2_no_default_images``, registered in :data:`jobplane.platform.local.moto_patches.PATCHES`;
``fix_ec2_no_default_images`` says what upstream moto does and what the local AWS must do instead.

Untyped: it reaches into moto 5.2.5 internals, so pyproject.toml excludes it from mypy by name;
its stock-vs-fixed probe (tests/moto_probe.py, run by tests/test_moto_fixes.py) holds it instead.
"""

from __future__ import annotations


def fix_ec2_no_default_images() -> None:
    """moto's EC2 backend of a region starts by making 1,301 public AMIs (moto's list of
    Amazon's), each with a snapshot and a volume of random ids: ~0.2 s of CPU at every
    `jobplane dev` start (its first EC2 call, provision's CreateVpc). The local AWS launches no
    instance and nothing of jobplane reads an image (Fargate tasks, runner processes), so none
    are made, with moto's own setting (``MOTO_EC2_LOAD_DEFAULT_AMIS``), read when a backend is
    made; set here, not in the environment, which the runner's processes would inherit."""
    from moto import settings

    settings.ec2_load_default_amis = lambda: False
