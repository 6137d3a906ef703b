"""Child process for the kill-mid-write test: writes a large file with write_file.

    python -m tests.workspace.atomic_child WORKSPACE MODE

MODE ``before-rename``: stop (print "paused", wait on stdin) once the new content is in
the temporary file but not yet renamed over the target; ``before-create``: as the
temporary file is about to be created; ``loop``: write two contents in turn
forever, printing after each write.
"""

from __future__ import annotations

import asyncio
import sys

from clawlog.tools import ToolContext
from clawlog.tools.workspace import WorkspaceEnv
from clawlog.tools.workspace.write_tools import WriteFileTool

SIZE = 4 * 1024 * 1024
NEW = "N" * SIZE
OTHER = "M" * SIZE


def pause_at(event_name: str, match: str) -> None:
    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == event_name and match in str(args[0]):
            print("paused", flush=True)
            sys.stdin.readline()  # the parent kills us here

    sys.addaudithook(hook)


async def main(workspace: str, mode: str) -> None:
    tool = WriteFileTool(WorkspaceEnv())
    ctx = ToolContext(agent="a", session_key="s", workspace=workspace)
    if mode == "before-rename":
        pause_at("os.rename", ".clawlog-tmp")
    elif mode == "before-create":
        pause_at("open", ".clawlog-tmp")
    count = 0
    while True:
        await tool.execute(ctx, {"path": "big.txt", "content": NEW if count % 2 == 0 else OTHER})
        count += 1
        print(f"wrote {count}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
