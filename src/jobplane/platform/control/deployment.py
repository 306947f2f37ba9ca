"""Where a deployment is: moved to :mod:`jobplane.platform.deployment` (below the control plane,
so the platform context can be built on it without importing the plane); importable from here
as before."""

from __future__ import annotations

from jobplane.platform.deployment import Deployment, catalog_job, load_catalog

__all__ = ["Deployment", "catalog_job", "load_catalog"]
