"""One Docker container per session, reused across calls (seed 002 §8, seed 004 §9).

The container of a sandbox key is created on first use: workspace bind-mounted at
/workspace (``ro`` or ``rw``), ``network_mode=none`` unless configured, memory / pids /
CPU limits, every capability dropped, ``no-new-privileges``, a read-only root with a
tmpfs /tmp, an init process, and nothing of the host's environment. Commands run in it
with ``docker exec`` (:class:`SandboxProcess`). :meth:`SandboxManager.release` removes a
session's container when the session ends; :meth:`SandboxManager.aclose` removes all of
this manager's containers.

No container outlives the manager: each carries the label ``clawlog.manager=<id>``; a
container whose start fails is removed at once; :meth:`~SandboxManager.aclose` waits for
creations under way (a container created after the close began is removed by its
creator), removes the containers it knows, then every other container its label finds (a
create whose answer was lost), and from then on refuses new sessions.

docker-py blocks: every call runs in ``executor`` (the I/O hub's), never on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import secrets
import socket
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any, NamedTuple, TypeVar

from clawlog.events import Event
from clawlog.events.domain.workspace import (
    ContainerRemovalReason,
    SandboxContainerRemoved,
    SandboxContainerStarted,
)
from clawlog.events.logging import get_logger
from clawlog.events.streams import session_stream

from ..errors import SandboxClosed, SandboxUnavailable
from ..workspace.stores import Recorder
from .config import SandboxConfig
from .process import SandboxProcess, wrapped_command

__all__ = ["SandboxManager"]

_log = get_logger(__name__)
T = TypeVar("T")
LABEL_KEY = "clawlog.sandbox"
LABEL_MANAGER = "clawlog.manager"
_DEFAULT_SOCKET = "unix:///var/run/docker.sock"


def _session_of(key: str) -> str:
    """A manager on its own records on the stream of the key's session: sandbox keys
    default to the session id, ``{agent}/{session_key}``."""
    agent, slash, session_key = key.partition("/")
    if not slash:  # a one-segment key (``ToolContext.sandbox_key``): ``session/{key}``
        return session_stream(key, "").removesuffix("/")
    return session_stream(agent, session_key)


class _Container(NamedTuple):
    id: str
    workspace: str


class SandboxManager:
    """The sandbox containers of one clawlog system (implements ``SandboxRunner``)."""

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        executor: Executor | None = None,
        record: Recorder | None = None,
        stream_for: Callable[[str], str] = _session_of,
        client_factory: Callable[[], Any] | None = None,
    ) -> None:
        self.config = config or SandboxConfig()
        self.container_root = self.config.container_root
        self.workspace_access = self.config.workspace_access
        self.manager_id = secrets.token_hex(6)
        self._executor = executor
        self._record = record
        self._stream_for = stream_for
        self._client_factory = client_factory or self._default_client
        self._client: Any = None
        self._containers: dict[str, _Container] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        #: ensure() calls under way: aclose waits for them.
        self._pending: set[asyncio.Future[str]] = set()
        self._closed = False
        self._closing: asyncio.Future[None] | None = None

    # -- docker calls, off the loop -----------------------------------------------------
    def _default_client(self) -> Any:
        import docker

        base_url = self.config.docker_host or os.environ.get("DOCKER_HOST") or _DEFAULT_SOCKET
        if base_url.startswith("unix://"):
            _check_socket(base_url.removeprefix("unix://"), self.config.api_timeout_s)
        if self.config.docker_host:
            return docker.DockerClient(base_url=base_url, timeout=int(self.config.api_timeout_s))
        return docker.from_env(timeout=int(self.config.api_timeout_s))

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._executor, functools.partial(fn, *args, **kwargs)
            )
        except SandboxUnavailable:
            raise
        except Exception as exc:
            raise SandboxUnavailable(_describe(exc)) from exc

    def _docker(self) -> Any:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    async def ping(self) -> bool:
        """True when the engine answers."""
        try:
            return bool(await self._call(lambda: self._docker().ping()))
        except SandboxUnavailable:
            return False

    # -- containers ---------------------------------------------------------------------
    def container_id(self, key: str) -> str | None:
        found = self._containers.get(key)
        return None if found is None else found.id

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosed("the sandbox manager is closed; no new sandbox session starts")

    async def ensure(self, key: str, workspace: str) -> str:
        """The id of ``key``'s running container, created if needed. Raises
        :class:`SandboxClosed` once the manager is closing, also when it closed while the
        container was being created (which is then removed)."""
        self._check_open()
        # a task awaited shielded: a caller cancelled mid-creation leaves the container
        # tracked (or removed), never running unknown to the manager; aclose waits for it
        task = asyncio.ensure_future(self._ensure(key, os.path.realpath(workspace)))
        self._pending.add(task)
        task.add_done_callback(self._settled)
        return await asyncio.shield(task)

    def _settled(self, task: asyncio.Future[str]) -> None:
        self._pending.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a caller cancelled meanwhile never will

    async def _ensure(self, key: str, workspace: str) -> str:
        async with self._locks.setdefault(key, asyncio.Lock()):
            self._check_open()
            found = self._containers.get(key)
            if (
                found is not None
                and found.workspace == workspace
                and await self._call(self._is_running, found.id)
            ):
                return found.id
            if found is not None:
                await self._remove(key, "recreate")
            container_id = await self._call(self._create, key, workspace)
            if self._closed:
                with contextlib.suppress(SandboxUnavailable):
                    await self._call(self._remove_container, container_id)
                raise SandboxClosed(
                    "the sandbox manager closed while this session's container was being "
                    "created; the container was removed"
                )
            self._containers[key] = _Container(container_id, workspace)
        await self._emit(
            key,
            SandboxContainerStarted(
                sandbox_key=key,
                container_id=container_id,
                image=self.config.image,
                workspace_access=self.config.workspace_access,
                network=self.config.network,
            ),
        )
        return container_id

    def _is_running(self, container_id: str) -> bool:
        try:
            container = self._docker().containers.get(container_id)
        except Exception:
            return False
        return bool(container.status == "running")

    def _create(self, key: str, workspace: str) -> str:
        """Create and start ``key``'s container; one that cannot start is removed."""
        import docker.errors

        containers = self._docker().containers
        options = self._options(key, workspace)
        with contextlib.suppress(Exception):
            containers.get(options["name"]).remove(force=True)
        command = ["sleep", "infinity"]
        try:
            container = containers.create(self.config.image, command, **options)
        except docker.errors.ImageNotFound:  # as ``containers.run`` does: pull, then retry
            self._docker().images.pull(self.config.image)
            container = containers.create(self.config.image, command, **options)
        try:
            container.start()
        except BaseException:
            with contextlib.suppress(Exception):
                container.remove(force=True)
            raise
        return str(container.id)

    def _options(self, key: str, workspace: str) -> dict[str, Any]:
        config = self.config
        digest = hashlib.sha256(key.encode()).hexdigest()[:12]
        info = os.stat(workspace)
        return dict(
            name=f"{config.container_prefix}-{self.manager_id}-{digest}",
            detach=True,
            init=True,
            labels={LABEL_KEY: key, LABEL_MANAGER: self.manager_id},
            network_mode=config.network,
            mem_limit=config.memory,
            memswap_limit=config.memory,
            pids_limit=config.pids_limit,
            nano_cpus=int(config.cpus * 1_000_000_000),
            cpu_shares=config.cpu_shares,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            read_only=config.read_only_root,
            tmpfs={"/tmp": f"size={config.tmpfs_size},mode=1777"},
            volumes={workspace: {"bind": config.container_root, "mode": config.workspace_access}},
            working_dir=config.container_root,
            user=config.user or f"{info.st_uid}:{info.st_gid}",
            environment={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        )

    async def release(self, key: str, reason: ContainerRemovalReason = "session_end") -> None:
        """Remove ``key``'s container (the session ended). Nothing to do if it has none."""
        async with self._locks.setdefault(key, asyncio.Lock()):
            await self._remove(key, reason)

    async def _remove(self, key: str, reason: ContainerRemovalReason) -> None:
        found = self._containers.pop(key, None)
        if found is None:
            return
        with contextlib.suppress(SandboxUnavailable):
            await self._call(self._remove_container, found.id)
        await self._emit(
            key, SandboxContainerRemoved(sandbox_key=key, container_id=found.id, reason=reason)
        )

    def _remove_container(self, container_id: str) -> None:
        import docker.errors

        with contextlib.suppress(docker.errors.NotFound):
            self._docker().containers.get(container_id).remove(force=True)

    async def remove_orphans(self) -> int:
        """Remove every clawlog sandbox container not made by this manager (left over by
        a process that crashed). Call at startup."""

        def remove() -> int:
            found = self._docker().containers.list(all=True, filters={"label": LABEL_KEY})
            orphans = [c for c in found if c.labels.get(LABEL_MANAGER) != self.manager_id]
            for container in orphans:
                with contextlib.suppress(Exception):
                    container.remove(force=True)
            return len(orphans)

        return await self._call(remove)

    async def aclose(self) -> None:
        """Remove every container of this manager and refuse new sessions. Safe to call
        twice (a second call waits for the first) and under cancellation (the close goes
        on)."""
        if self._closing is None:
            self._closed = True
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        if self._pending:
            await asyncio.wait(set(self._pending))
        for key in list(self._containers):
            await self._remove(key, "close")
        if self._client is None:
            return  # never talked to the engine: it holds no container of ours
        try:
            stray = await self._call(self._remove_labelled)
        except SandboxUnavailable as exc:
            _log.warning("sandbox containers not listed at close", error=str(exc))
        else:
            if stray:
                _log.warning("removed untracked sandbox containers", count=stray)
        with contextlib.suppress(Exception):
            await self._call(self._client.close)

    def _remove_labelled(self) -> int:
        """Force-remove every container labelled with this manager's id."""
        label = f"{LABEL_MANAGER}={self.manager_id}"
        found = self._docker().containers.list(all=True, filters={"label": label})
        for container in found:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        return len(found)

    async def __aenter__(self) -> SandboxManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- running ------------------------------------------------------------------------
    async def start(
        self,
        key: str,
        workspace: str,
        command: str,
        *,
        workdir: str,
        env: Mapping[str, str],
        stdin: bool = False,
    ) -> SandboxProcess:
        container_id = await self.ensure(key, workspace)
        argv, pidfile, marker = wrapped_command(command)

        def launch() -> tuple[str, Any]:
            api = self._docker().api
            created = api.exec_create(
                container_id, argv, stdin=stdin, workdir=workdir, environment=dict(env)
            )
            return created["Id"], api.exec_start(created["Id"], socket=True)

        exec_id, sock = await self._call(launch)
        return SandboxProcess(
            sock=sock,
            marker=marker,
            pidfile=pidfile,
            loop=asyncio.get_running_loop(),
            exit_code=lambda: self._exec_exit_code(exec_id),
            run_in_container=lambda argv: self._call(self._run_short, container_id, argv),
            kill_container=lambda: self._kill(key, container_id),
            stdin=stdin,
        )

    def _run_short(self, container_id: str, argv: list[str]) -> Any:
        return self._docker().containers.get(container_id).exec_run(argv)

    def _exec_exit_code(self, exec_id: str) -> int | None:
        info = self._docker().api.exec_inspect(exec_id)
        return None if info.get("Running") else info.get("ExitCode")

    async def _kill(self, key: str, container_id: str) -> None:
        """Last resort when a group cannot be signalled: the whole container goes."""
        _log.warning("killing sandbox container", sandbox_key=key, container_id=container_id)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if self.container_id(key) == container_id:
                await self._remove(key, "timeout_kill")

    async def _emit(self, key: str, event: Event) -> None:
        if self._record is None:
            return
        try:
            await self._record(self._stream_for(key), [event])
        except Exception as exc:
            _log.warning("sandbox event not recorded", sandbox_key=key, error=repr(exc)[:300])


def _check_socket(path: str, timeout: float) -> None:
    """Fail fast, and without leaking the socket as docker-py does, when nothing listens."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(timeout)
        probe.connect(path)
    except OSError as exc:
        raise SandboxUnavailable(
            f"the Docker engine is not reachable at unix://{path} ({exc.strerror or exc})"
        ) from exc
    finally:
        probe.close()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if "No such image" in text or ("not found" in text.lower() and "image" in text.lower()):
        return f"the sandbox image is missing ({text[:300]})"
    if "Connection" in type(exc).__name__ or "connection" in text.lower():
        return f"the Docker engine is not reachable ({text[:300]})"
    return f"{type(exc).__name__}: {text[:300]}"
