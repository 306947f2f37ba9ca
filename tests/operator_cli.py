"""`jobplane ARGS` as an operator's shell on AWS runs it: a deployment file (what `terraform output
-json` prints) and boto3's standard environment, never the dev server's data directory; and the
portal as it is served on AWS behind its proxy (trusted-header sign-in). Shared by the tests that
drive the CLI or the portal against a ControlPlane of the local engine (test_map, test_progress,
test_approvals)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jobplane.platform.control import ControlPlane
from jobplane.platform.local.engine import LocalAWS


def operator_cli(aws: LocalAWS, control: ControlPlane, tmp_path: Path, root: Path, *args: str) -> Any:
    from click.testing import CliRunner

    from jobplane.cli import main

    d = control.deployment
    deployment = tmp_path / "deployment.json"
    deployment.write_text(json.dumps({"jobplane": {"sensitive": False, "type": ["object", {}], "value": {
        "table": d.table, "topic_arn": d.topic_arn, "region": aws.region, "account_id": d.account_id,
        "name_prefix": d.name_prefix, "catalog_uri": str(d.catalog_path), "log_group": aws.log_group}}}))
    env = {"JOBPLANE_DEPLOYMENT": str(deployment), "AWS_ENDPOINT_URL": aws.endpoint_url,
           "AWS_ACCESS_KEY_ID": aws.credentials.access_key_id, "AWS_SECRET_ACCESS_KEY": aws.credentials.secret_access_key,
           "AWS_DEFAULT_REGION": aws.region, "JOBPLANE_DATA_DIR": str(tmp_path / "no-dev-here")}
    return CliRunner().invoke(main, ["--root", str(root), *args], env=env, catch_exceptions=False)


def operator_portal(control: ControlPlane) -> Any:
    """The portal app of ``control``'s deployment, signed in by the proxy's header
    (X-Forwarded-Email, with its shared secret), for a TestClient at http://testserver."""
    from dataclasses import replace

    from jobplane.contract.config import load_config
    from jobplane.portal.app import create_app
    from jobplane.portal.settings import AuthSettings, PortalSettings

    config = load_config(Path(str(control.deployment.catalog_path)).parent)
    settings = PortalSettings.from_config(config, control.deployment, AuthSettings(
        mode="trusted-header", header="X-Forwarded-Email", proxy_secret="proxy-secret-for-tests-0123456789"),
        base_url="http://testserver")
    return create_app(replace(settings, allowed_hosts=frozenset({"testserver"})), control)
