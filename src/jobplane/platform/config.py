"""Platform configuration (``jobplane.toml`` at the repository root).

Defaults a platform team picks once: the AWS name prefix, the default timezone, the teams that
may own jobs and their Slack channels, and where definitions and compiled output live.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CONFIG_FILE = "jobplane.toml"


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Team:
    name: str
    channel: str | None = None
    admins: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlatformConfig:
    root: Path
    name_prefix: str = "jobplane"
    default_timezone: str = "UTC"
    default_channel: str | None = None
    jobs_dir: str = "jobs"
    output_dir: str = "terraform/jobs"
    platform_module: str = "../platform"
    teams: dict[str, Team] = field(default_factory=dict)

    @property
    def jobs_path(self) -> Path:
        return self.root / self.jobs_dir

    @property
    def output_path(self) -> Path:
        return self.root / self.output_dir

    @property
    def library_path(self) -> Path:
        """Where ``import 'jobplane.libsonnet'`` resolves (the compiler sets it as a jpath)."""
        return self.jobs_path / "lib"


def load_config(root: Path | str = ".") -> PlatformConfig:
    root = Path(root).resolve()
    path = root / CONFIG_FILE
    if not path.exists():
        return PlatformConfig(root=root)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from None
    plat = data.get("platform", {})
    known = {"name_prefix", "default_timezone", "default_channel", "jobs_dir", "output_dir", "platform_module"}
    unknown = set(plat) - known
    if unknown:
        raise ConfigError(f"{path}: [platform] has unknown keys: {', '.join(sorted(unknown))}")
    teams = {}
    for name, t in data.get("teams", {}).items():
        teams[name] = Team(name=name, channel=t.get("channel"), admins=tuple(t.get("admins", ())))
    return PlatformConfig(root=root, teams=teams, **plat)
