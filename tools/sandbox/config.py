"""Settings of the Docker sandbox (seed 002 §8, seed 004 §9)."""

from __future__ import annotations

import msgspec

from clawlog.events.domain.workspace import WorkspaceAccess

__all__ = ["DEFAULT_IMAGE", "SandboxConfig"]

#: Imported from a busybox rootfs by scripts/docker.sh (no registry is reachable).
DEFAULT_IMAGE = "localhost/clawlog-sandbox:latest"


class SandboxConfig(msgspec.Struct, frozen=True, kw_only=True):
    image: str = DEFAULT_IMAGE
    #: The engine; None: ``DOCKER_HOST`` from the environment.
    docker_host: str | None = None
    #: How the workspace is mounted at /workspace (seed 004 SANDBOX_POLICY readonly).
    workspace_access: WorkspaceAccess = "ro"
    #: ``none`` unless network access is allowed (then e.g. ``bridge``).
    network: str = "none"
    memory: str = "512m"
    pids_limit: int = 128
    #: CPUs the container may use, and its relative weight (seed 004 SANDBOX_CPU_SHARES).
    cpus: float = 1.0
    cpu_shares: int = 1024
    tmpfs_size: str = "64m"
    #: ``uid:gid`` inside the container; None: the owner of the workspace directory, so a
    #: ``rw`` mount is writable without extra privileges.
    user: str | None = None
    read_only_root: bool = True
    #: Seconds one Docker API call may take.
    api_timeout_s: float = 60.0
    container_prefix: str = "clawlog-sbx"
    #: Where the workspace appears inside the container.
    container_root: str = "/workspace"
