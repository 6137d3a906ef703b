"""The Docker sandbox: one container per session, commands via ``docker exec``.

    async with SandboxManager(SandboxConfig(workspace_access="rw"), executor=hub_executor,
                              record=record) as sandbox:
        tools = exec_tools(ExecConfig(), workspace=env, sandbox=sandbox)

``release(sandbox_key)`` when a session ends; ``aclose()`` when the system closes.
"""

from .config import DEFAULT_IMAGE, SandboxConfig
from .manager import SandboxManager

__all__ = [
    "DEFAULT_IMAGE",
    "SandboxConfig",
    "SandboxManager",
]
