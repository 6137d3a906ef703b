"""The custom tools of one System: defined and removed through the log, handed to agents.

    catalog = CustomToolCatalog(store)        # the System's, on its store
    await catalog.load()                      # fold ``tools/custom``
    catalog.attach("main", pipeline)          # main's registry gets its tools, now and later
    await catalog.define(name="dns_lookup", command="dig +short {{.domain}}", parameters=...)

Lifecycle (seed 001 §13): a global tool is offered to every agent, an agent's own only to
it, both in the ``custom`` policy group; a definition applies at once to the agents
already running (their registries are updated in place, as MCP tools are) and to those
registered later, and survives a restart because it is a ``tool.custom_defined`` event on
``tools/custom`` that :meth:`load` folds when the System opens. ``define`` appends with
the stream version it folded: a writer in another process makes it catch up and check
again rather than overwrite.

The key sealing env values comes from ``CLAWLOG_SECRET_KEY`` when the catalog is made
(:mod:`tools.custom.secrets`). A tool whose env this process cannot decrypt (no key,
another key) is still offered, and each call fails with a message naming the tool and
what is wrong; the System logs the same once, when it builds the tool.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from clawlog.events import Event, RecordedEvent, VersionConflict
from clawlog.events.domain.custom_tool import CustomToolDefined, CustomToolRemoved
from clawlog.events.folds.custom_tool import CustomToolDefinitions, CustomToolEntry
from clawlog.events.logging import get_logger
from clawlog.events.streams import custom_tools_stream

from ..errors import (
    CustomToolError,
    CustomToolTypeError,
    DuplicateTool,
    InvalidCustomTool,
    ProtectedName,
    SecretKeyError,
    UnknownTool,
)
from .definition import DEFAULT_TIMEOUT_S, build_definition
from .secrets import SecretBox
from .tool import CustomTool

if TYPE_CHECKING:
    from ..pipeline import ToolPipeline

__all__ = ["CustomToolCatalog", "CustomToolLog"]

_log = get_logger(__name__)
#: Appends tried before giving up when other writers keep moving the stream.
_ATTEMPTS = 5


class CustomToolLog(Protocol):
    """What the catalog needs of the event store (an ``EventStore`` or the System's
    ``HubStore``)."""

    async def append(
        self, stream: str, events: Sequence[Event], expected_version: int
    ) -> list[RecordedEvent]: ...

    async def read_stream(
        self, stream: str, from_version: int = 1, limit: int | None = None
    ) -> list[RecordedEvent]: ...


class _Attachment:
    """An agent's pipeline, and the custom tools the catalog registered in it."""

    __slots__ = ("agent", "names", "pipeline")

    def __init__(self, agent: str, pipeline: ToolPipeline) -> None:
        self.agent = agent
        self.pipeline: weakref.ref[ToolPipeline] = weakref.ref(pipeline)
        self.names: set[str] = set()


class CustomToolCatalog:
    """Every custom tool in force, and the agents' pipelines they are registered in.
    Thread-safe: agents attach from their threads, definitions come from any loop."""

    def __init__(self, store: CustomToolLog, *, box: SecretBox | None = None) -> None:
        """``box``: the key sealing env values; default: from ``CLAWLOG_SECRET_KEY``."""
        self.store = store
        self.stream = custom_tools_stream()
        self._key_problem = ""
        if box is None:
            try:
                box = SecretBox.from_environment()
            except SecretKeyError as exc:
                self._key_problem = str(exc)
        self._box = box
        self._lock = threading.Lock()
        self._definitions = CustomToolDefinitions()
        self._tools: dict[tuple[str, str], CustomTool] = {}
        self._attached: list[_Attachment] = []

    # -- the log ------------------------------------------------------------------------
    async def load(self) -> None:
        """Fold ``tools/custom`` from where this catalog is (all of it the first time).

        Raises:
            EventStoreError: the stream could not be read.
        """
        with self._lock:
            start = self._definitions.version + 1
        recorded = await self.store.read_stream(self.stream, start)
        with self._lock:
            for item in recorded:
                if item.version > self._definitions.version:
                    self._apply(item)
            self._sync_all()

    async def define(
        self,
        *,
        name: str,
        command: str,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        working_dir: str = "",
        env: Mapping[str, str] | None = None,
        enabled: bool = True,
        agent: str = "",
        by: str = "",
    ) -> CustomToolEntry:
        """Define (or redefine) a tool; recorded, then offered to the agents it is for.

        Raises:
            InvalidCustomTool: a field that cannot be used, or a name another scope's tool
                or one of the agents' own tools already has (``.parameter`` names it);
                ``CustomToolTypeError`` (also a TypeError) for a wrong type.
            SecretKeyError: ``env`` has values and ``CLAWLOG_SECRET_KEY`` is missing or
                malformed.
            CustomToolError: other processes kept changing the definitions meanwhile.
            EventStoreError: the definition could not be recorded.
        """
        event = build_definition(
            name=name,
            command=command,
            description=description,
            parameters=parameters,
            timeout_s=timeout_s,
            working_dir=working_dir,
            env=env,
            enabled=enabled,
            agent=agent,
            by=by,
            box=self._box,
            key_problem=self._key_problem,
        )
        if env:  # the values are secrets from now on, even if recording fails
            self._share(CustomTool(event, env=env))
        await self._append(event, self._check_scope)
        with self._lock:
            entry = self._definitions.get(event.name, event.agent)
        if entry is None:  # removed by another process at once
            raise CustomToolError(f"custom tool {event.name!r} was removed meanwhile")
        return entry

    async def remove(self, name: str, *, agent: str = "", by: str = "") -> bool:
        """Remove a tool from every agent; False if there was none of that name and scope.

        Raises:
            CustomToolTypeError: (an InvalidCustomTool, also a TypeError) ``name``,
                ``agent`` or ``by`` is not a str.
            CustomToolError: other processes kept changing the definitions meanwhile.
            EventStoreError: the removal could not be recorded.
        """
        for parameter, value in (("name", name), ("agent", agent), ("by", by)):
            if not isinstance(value, str):
                raise CustomToolTypeError(parameter, f"must be a str, not {type(value).__name__}")

        def present(event: Event) -> bool:
            return self._definitions.get(name, agent) is not None

        recorded = await self._append(CustomToolRemoved(name=name, agent=agent, by=by), present)
        return recorded is not None

    async def _append(
        self, event: Event, check: Callable[[Event], bool | None]
    ) -> RecordedEvent | None:
        """Append ``event`` at the folded version once ``check(event)`` passes against the
        folded state (it raises, or returns False: nothing to append, None returned);
        catch up and check again when another writer got there first."""
        for _ in range(_ATTEMPTS):
            with self._lock:
                if check(event) is False:
                    return None
                version = self._definitions.version
            try:
                [recorded] = await self.store.append(self.stream, [event], version)
            except VersionConflict:
                await self.load()
                continue
            with self._lock:
                caught_up = recorded.version == self._definitions.version + 1
                if caught_up:
                    self._apply(recorded)
                    self._sync_all()
            if not caught_up:  # a load ran meanwhile and may have folded it already
                await self.load()
            return recorded
        raise CustomToolError(
            f"{self.stream} kept changing while this definition was being recorded "
            f"({_ATTEMPTS} attempts): another process is defining tools; try again"
        )

    # -- state (under the lock) ---------------------------------------------------------
    def _apply(self, recorded: RecordedEvent) -> None:
        self._definitions.apply(recorded)
        event = recorded.event
        if isinstance(event, CustomToolDefined | CustomToolRemoved):
            key = (event.agent, event.name)
            self._tools.pop(key, None)
            entry = self._definitions.get(event.name, event.agent)
            if entry is not None and entry.enabled:
                self._tools[key] = self._build(entry.definition)

    def _build(self, definition: CustomToolDefined) -> CustomTool:
        if not definition.env:
            return CustomTool(definition)
        where = f"custom tool {definition.name!r}" + (
            f" of agent {definition.agent!r}" if definition.agent else ""
        )
        if self._box is None:
            problem = self._key_problem or "CLAWLOG_SECRET_KEY is not set in this process"
            unavailable = (
                f"{where} was not run: its env values are encrypted and this process cannot "
                f"decrypt them ({problem}). Tell the user: an operator must set the key the "
                "tool was defined with."
            )
        else:
            try:
                env = {
                    sealed.name: self._box.open(
                        definition.agent, definition.name, sealed, definition.key_id
                    )
                    for sealed in definition.env
                }
            except SecretKeyError as exc:
                unavailable = f"{where} was not run: {exc}. Tell the user."
            else:
                return CustomTool(definition, env=env)
        _log.warning(
            "custom tool env cannot be decrypted",
            tool=definition.name,
            agent=definition.agent,
            problem=unavailable,
        )
        return CustomTool(definition, unavailable=unavailable)

    def _check_scope(self, event: Event) -> None:
        """A name is one tool per agent: a global tool and an agent's own cannot share it,
        nor can a custom tool take a name one of the agents' other tools has."""
        assert isinstance(event, CustomToolDefined)
        name, agent = event.name, event.agent
        for entry in self._definitions.named(name):
            if entry.agent == agent:
                continue  # a redefinition
            if agent:
                raise InvalidCustomTool(
                    "name",
                    f"a global custom tool {name!r} exists, which an agent's own tool cannot "
                    "shadow; choose another name, or remove the global one first",
                )
            raise InvalidCustomTool(
                "name",
                f"agent {entry.agent!r} has its own custom tool {name!r}; remove it first "
                f"(remove_tool({name!r}, agent={entry.agent!r})) or choose another name",
            )
        for attachment in self._attached:
            pipeline = attachment.pipeline()
            if pipeline is None or (agent and attachment.agent != agent):
                continue
            if name in pipeline.registry and name not in attachment.names:
                kind = (
                    "built-in (protected)"
                    if pipeline.registry.is_protected(name)
                    else "an MCP or application"
                )
                raise InvalidCustomTool(
                    "name",
                    f"agent {attachment.agent!r} already has a tool named {name!r} "
                    f"({kind} tool); choose another name",
                )

    # -- agents -------------------------------------------------------------------------
    def attach(self, agent: str, pipeline: ToolPipeline) -> None:
        """Give ``agent``'s pipeline its custom tools (global and its own), and keep them
        in step from now on. The catalog holds the pipeline weakly. Never raises."""
        attachment = _Attachment(agent, pipeline)
        with self._lock:
            self._attached = [a for a in self._attached if a.pipeline() is not None]
            self._attached.append(attachment)
            self._sync(attachment)

    def _sync_all(self) -> None:
        for attachment in self._attached:
            self._sync(attachment)

    def _sync(self, attachment: _Attachment) -> None:
        pipeline = attachment.pipeline()
        if pipeline is None:
            return
        registry = pipeline.registry
        wanted = {n: t for (a, n), t in self._tools.items() if a in ("", attachment.agent)}
        for name, tool in wanted.items():
            if registry.get(name) is tool:
                continue
            if name in registry and name not in attachment.names:
                _log.warning(
                    "custom tool not offered: the name is taken", tool=name, agent=attachment.agent
                )
                continue
            try:
                registry.register(tool, replace=True)
            except (ProtectedName, DuplicateTool) as exc:
                _log.warning(
                    "custom tool not offered", tool=name, agent=attachment.agent, error=str(exc)
                )
                continue
            attachment.names.add(name)
            tool.share_secrets(pipeline.scrubber)
        for name in sorted(attachment.names - wanted.keys()):
            attachment.names.discard(name)
            with contextlib.suppress(UnknownTool, ProtectedName):
                registry.unregister(name)

    def _share(self, tool: CustomTool) -> None:
        with self._lock:
            for attachment in self._attached:
                pipeline = attachment.pipeline()
                if pipeline is not None:
                    tool.share_secrets(pipeline.scrubber)

    # -- reading ------------------------------------------------------------------------
    def entries(self, agent: str | None = None) -> list[CustomToolEntry]:
        """The tools in force (env names only): all, or those ``agent`` gets. Never raises."""
        with self._lock:
            if agent is None:
                return self._definitions.entries()
            return self._definitions.visible_to(agent)

    def tools_for(self, agent: str) -> list[CustomTool]:
        """The enabled tools ``agent`` is offered, as Tools. Never raises."""
        with self._lock:
            return [t for (a, _), t in sorted(self._tools.items()) if a in ("", agent)]
