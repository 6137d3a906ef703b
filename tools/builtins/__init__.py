"""Built-in utility tools (seed 004 §4.1-4.3): echo, time, json."""

from __future__ import annotations

from ..base import Tool
from .echo_tool import EchoTool
from .json_tool import JsonTool
from .time_tool import TimeTool

__all__ = ["EchoTool", "JsonTool", "TimeTool", "builtin_tools"]


def builtin_tools() -> list[Tool]:
    """A fresh instance of every built-in utility tool."""
    return [EchoTool(), TimeTool(), JsonTool()]
