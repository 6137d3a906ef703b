"""The Tool protocol (seed 004 §2, seed 002 §1) and two ways to implement it.

Besides the protocol's members a tool may declare its side effects (``side_effects``,
and ``side_effects_for(args)`` when the arguments decide): what running a call again
after a restart would do (:mod:`.side_effects`). They are optional, so a tool written
before them keeps working, and counts as ``external`` (never run twice)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

from clawlog.events.domain.tool import ToolDomain

from .context import ToolContext
from .result import ToolResult
from .side_effects import SideEffects, check_side_effects

__all__ = ["BaseTool", "FunctionTool", "SideEffects", "Tool", "ToolDomain"]

DEFAULT_TIMEOUT_S = 60.0
EMPTY_OBJECT_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


@runtime_checkable
class Tool(Protocol):
    """A capability the model can call. One instance serves every concurrent call: all
    per-call values come in ``ctx``, never from mutable fields.

    ``execute`` returns a :class:`ToolResult` or raises a :class:`tools.ToolCallError`
    whose message tells the model what to do differently. It may assume ``args`` passed
    the JSON Schema in ``parameters`` (defaults filled in).

    Optional (read by :func:`tools.side_effects.side_effects_of`; ``external`` without
    them): ``side_effects: SideEffects`` and ``side_effects_for(args) -> SideEffects``.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """JSON Schema of the arguments object."""
        ...

    @property
    def group(self) -> str:
        """Policy group (``fs``, ``runtime``, ``mcp:github``…); ``""`` for none."""
        ...

    @property
    def timeout(self) -> float:
        """Seconds before the call is cancelled and fails with ``timeout``."""
        ...

    @property
    def domain(self) -> ToolDomain: ...

    @property
    def owner_only(self) -> bool:
        """Only the owner (``ToolContext.is_owner``) may use it."""
        ...

    @property
    def requires_sanitization(self) -> bool:
        """Output comes from outside (web, files, MCP): neutralize it for the model."""
        ...

    @property
    def requires_approval(self) -> bool:
        """Every call waits for a person's approval (unless allowlisted)."""
        ...

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        """True when these arguments are dangerous: always ask, never auto-approve."""
        ...

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult: ...


class BaseTool:
    """Defaults for the protocol; subclass and set the class attributes."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    parameters: ClassVar[Mapping[str, Any]] = EMPTY_OBJECT_SCHEMA
    group: ClassVar[str] = ""
    timeout: ClassVar[float] = DEFAULT_TIMEOUT_S
    domain: ClassVar[ToolDomain] = "orchestrator"
    owner_only: ClassVar[bool] = False
    requires_sanitization: ClassVar[bool] = True
    requires_approval: ClassVar[bool] = False
    #: What running a call again would do; ``external`` (the safe default): never twice.
    side_effects: ClassVar[SideEffects] = "external"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_side_effects(cls.side_effects, getattr(cls, "name", cls.__name__))

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        return False

    def side_effects_for(self, args: Mapping[str, Any]) -> SideEffects:
        """What running again a call with these arguments would do; override when the
        arguments decide (an HTTP method)."""
        return self.side_effects

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


Handler = Callable[[ToolContext, dict[str, Any]], Awaitable[ToolResult | str]]


class FunctionTool:
    """A tool made from an async function ``(ctx, args) -> ToolResult | str``."""

    def __init__(
        self,
        name: str,
        handler: Handler,
        *,
        description: str = "",
        parameters: Mapping[str, Any] = EMPTY_OBJECT_SCHEMA,
        group: str = "",
        timeout: float = DEFAULT_TIMEOUT_S,
        domain: ToolDomain = "orchestrator",
        owner_only: bool = False,
        requires_sanitization: bool = True,
        requires_approval: bool = False,
        approval_for: Callable[[Mapping[str, Any]], bool] | None = None,
        side_effects: SideEffects = "external",
    ) -> None:
        """``side_effects``: ``none`` when the handler only reads, ``idempotent`` when
        it dedupes on ``ctx.idempotency_key`` (or repeats harmlessly); ValueError for
        another value."""
        self.side_effects: SideEffects = check_side_effects(side_effects, name)
        self.name = name
        self.description = description or name
        self.parameters = parameters
        self.group = group
        self.timeout = timeout
        self.domain: ToolDomain = domain
        self.owner_only = owner_only
        self.requires_sanitization = requires_sanitization
        self.requires_approval = requires_approval
        self._handler = handler
        self._approval_for = approval_for

    def requires_approval_for(self, args: Mapping[str, Any]) -> bool:
        return self._approval_for is not None and self._approval_for(args)

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        value = await self._handler(ctx, args)
        return value if isinstance(value, ToolResult) else ToolResult.text(str(value))

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name!r}>"
