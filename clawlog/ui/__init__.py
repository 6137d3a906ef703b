"""``clawlog ui``: a read-only web console over a clawlog log.

Server-rendered pages (Starlette + Jinja2, autoescaped) over the projections' readers:
an overview, the swimlane timeline, sessions (with a re-run under a policy change),
task boards, handoff routes, delegations with their lineage, MCP health and the tool
audit. Pages follow the log as it grows through server-sent events fed by the store's
subscription. Every asset is served by clawlog itself (no CDN: it works offline).

Safe by default: it binds loopback; any other address needs a token, checked on every
request; it never writes the log (the re-run replays into a scratch store).

    app = create_app(ConsoleConfig(db="clawlog.db"))      # an ASGI app: run it with uvicorn
"""

from .app import create_app
from .config import ConsoleConfig
from .errors import ConsoleError

__all__ = ["ConsoleConfig", "ConsoleError", "create_app"]
