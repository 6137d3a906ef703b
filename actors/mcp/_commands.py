"""Operators' commands to the McpConnection actor: reconnect, reconfigure, enable or
disable, remove. Each records what it changed before the connection is touched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawlog.events import Event
from clawlog.events.domain.mcp import McpServerEnabledChanged, McpServerRemoved
from clawlog.tools import Scrubber

from ..errors import McpConfigError, McpUnavailable
from .config import McpServerConfig

if TYPE_CHECKING:
    from .directory import McpDirectory
    from .state import McpServerState

__all__ = ["OperatorCommands"]


class OperatorCommands:
    """Mixed into the McpConnection actor."""

    state: McpServerState
    config: McpServerConfig
    directory: McpDirectory
    source: str
    _removed: bool
    _generation: int
    _failed_in_row: int
    _scrubber: Scrubber

    if TYPE_CHECKING:  # provided by the actor

        def emit(self, events: Sequence[Event], **kwargs: Any) -> Any: ...
        def _connect(self, attempt: int) -> None: ...
        def _close_link(self) -> None: ...
        def _publish(self) -> None: ...
        def _record_config(self) -> None: ...
        def _disconnect_events(self, cause: str, error: Any = None) -> list[Event]: ...

    def _reconnect(self, cause: str) -> bool:
        if self._removed:
            raise McpUnavailable(f"MCP server {self.config.name!r} was removed")
        events = self._disconnect_events(cause)
        if not self.state.enabled:
            events.append(McpServerEnabledChanged(server=self.config.name, enabled=True))
        if events:
            self.emit(events)
        self._failed_in_row = 0
        self._connect(1)
        return True

    def _reconfigure(self, config: McpServerConfig, source: str) -> bool:
        if config.name != self.config.name:
            raise McpConfigError("an MCP server's name cannot change; remove it and add another")
        if config == self.config and source == self.source:
            return False
        self._stop_connection("reconfigured")  # the old connection, under the old config
        self.config, self.source = config, source
        self._scrubber = Scrubber(config.secrets())
        self._record_config()
        if self.state.enabled:
            self._failed_in_row = 0
            self._connect(1)
        else:
            self._publish()
        return True

    def _set_enabled(self, enabled: bool, by: str) -> bool:
        if enabled == self.state.enabled:
            return False
        if enabled:
            self.emit([McpServerEnabledChanged(server=self.config.name, enabled=True, by=by)])
            self._failed_in_row = 0
            self._connect(1)
        else:
            self._stop_connection(
                "disabled", McpServerEnabledChanged(server=self.config.name, enabled=False, by=by)
            )
        return True

    def _remove(self, by: str) -> bool:
        self._stop_connection("removed", McpServerRemoved(server=self.config.name, by=by))
        self._removed = True
        self.directory.withdraw(self.config.name)
        return True

    def _stop_connection(self, cause: str, last: Event | None = None) -> None:
        self._close_link()
        self._generation += 1  # timers and results of the old connection are stale now
        events = self._disconnect_events(cause) + ([last] if last is not None else [])
        if events:
            self.emit(events)
        self._publish()
