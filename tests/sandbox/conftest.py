"""A real Docker engine for the sandbox tests.

``DOCKER_HOST`` from the environment when set (scripts/test.sh starts one); otherwise the
session starts its own with scripts/docker.sh and stops it at the end. With ``CI`` set, an
engine that cannot be had fails these tests; locally they are skipped, saying why.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clawlog.tools.sandbox import DEFAULT_IMAGE

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "docker.sh"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"no Docker engine for the sandbox tests: {reason}", pytrace=False)
    pytest.skip(f"no Docker engine ({reason}); run scripts/test.sh, or set DOCKER_HOST")


def _check(host: str) -> None:
    import docker

    if host.startswith("unix://"):  # docker-py leaks the socket of a refused connection
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(host.removeprefix("unix://"))
        finally:
            probe.close()
    client = docker.DockerClient(base_url=host, timeout=30)
    try:
        client.ping()
        client.images.get(DEFAULT_IMAGE)
    finally:
        client.close()


@pytest.fixture(scope="session")
def docker_host() -> Iterator[str]:
    given = os.environ.get("DOCKER_HOST")
    if given:
        try:
            _check(given)
        except Exception as exc:
            _unavailable(f"DOCKER_HOST={given} does not answer or lacks {DEFAULT_IMAGE}: {exc}")
        yield given
        return
    directory = tempfile.mkdtemp(prefix="clawlog-docker-")
    try:
        started = subprocess.run(
            ["bash", str(SCRIPT), "start", directory], capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(directory, ignore_errors=True)
        _unavailable(f"scripts/docker.sh could not run: {exc}")
    lines = [ln for ln in started.stdout.splitlines() if ln.startswith("DOCKER_HOST=")]
    if started.returncode != 0 or not lines:
        subprocess.run(["bash", str(SCRIPT), "stop", directory], capture_output=True, timeout=120)
        shutil.rmtree(directory, ignore_errors=True)
        _unavailable(f"scripts/docker.sh start failed: {started.stderr.strip()[-500:]}")
    try:
        yield lines[0].removeprefix("DOCKER_HOST=")
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", directory], capture_output=True, timeout=120)
        shutil.rmtree(directory, ignore_errors=True)
