"""``clawlog ui``: serve the web console (:mod:`clawlog.ui`) over a log, read-only.

The log and its read models are opened first, so a missing file or an unreachable
server is one line on stderr (exit status 2), not a server that fails at its first
request. The socket is bound here too, before the URL is printed: with ``--port 0`` the
URL names the port the system picked, and a busy port is a one-line error.

Loopback by default. Any other address needs a token (anyone who can reach the port
could otherwise read every event of the log): ``--token T`` or ``$CLAWLOG_UI_TOKEN`` fix
one; without either, a strong one is generated (:func:`secrets.token_urlsafe`, 256 bits)
for this run. The printed URL carries it (``?token=T``: the browser keeps it in a
cookie) and every request without it gets 401. On loopback a token is checked only when
one is given.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
from urllib.parse import quote

from .errors import CliError

__all__ = ["TOKEN_ENV", "choose_token", "serve", "url_of"]

#: The environment variable that fixes the console's token (as ``--token`` does).
TOKEN_ENV = "CLAWLOG_UI_TOKEN"


async def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from clawlog.ui import ConsoleConfig, ConsoleError, create_app
    from clawlog.ui.console import open_console

    token, generated = choose_token(args.host, args.token, os.environ.get(TOKEN_ENV))
    try:
        config = ConsoleConfig(db=args.db, host=args.host, port=args.port, token=token)
    except ConsoleError as exc:
        raise CliError(str(exc)) from exc
    listening = _bind(config.host, config.port)
    try:
        async with open_console(config) as console:
            app = create_app(config, console=console)
            level = "info" if args.verbose else "warning"
            server = uvicorn.Server(
                uvicorn.Config(app, log_level=level, lifespan="on", access_log=bool(args.verbose))
            )
            port = listening.getsockname()[1]
            print(url_of(config.host, port, config.token), flush=True)
            sys.stderr.write("clawlog ui: read-only console over the log; Ctrl-C stops it\n")
            if generated:
                sys.stderr.write(
                    f"clawlog ui: listening on {config.host}, not loopback: every request "
                    "needs the token generated for this run (in the URL above); --token or "
                    f"${TOKEN_ENV} fix one\n"
                )
            await server.serve(sockets=[listening])
    except ConsoleError as exc:
        raise CliError(str(exc)) from exc
    finally:
        listening.close()
    return 0


def choose_token(host: str, given: str | None, from_env: str | None) -> tuple[str | None, bool]:
    """The console's token and whether it was generated: ``--token`` first, then the
    environment's, else a new one for a non-loopback ``host`` (None on loopback)."""
    from clawlog.ui.config import is_loopback

    if given is not None:
        return given, False
    if from_env:
        return from_env, False
    if is_loopback(host):
        return None, False
    return secrets.token_urlsafe(32), True


def url_of(host: str, port: int, token: str | None) -> str:
    """The console's address to open in a browser (with the token when it needs one)."""
    shown = f"[{host}]" if ":" in host else host
    query = f"/?token={quote(token, safe='')}" if token else "/"
    return f"http://{shown}:{port}{query}"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=128)
    except OSError as exc:
        raise CliError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} (pick another --port, or "
            "--port 0 for any free one)"
        ) from exc
