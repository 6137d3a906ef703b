"""Jinja2 for the console's pages: autoescape always on, a few filters, one render call.

Every value a template prints is escaped (an agent's output holding ``<script>`` shows
as text); nothing in the console marks event text as safe.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse

__all__ = ["TEMPLATES", "environment", "render"]

TEMPLATES = Path(__file__).parent / "templates"


def _when(epoch: float | None) -> str:
    if not epoch:
        return ""
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _short(text: object, width: int = 160) -> str:
    value = "" if text is None else str(text)
    return value if len(value) <= width else value[: width - 1] + "…"


def _quoted(value: object) -> str:
    """``value`` quoted for one path segment or query value (a ``/`` too)."""
    return quote(str(value), safe="")


def _as_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def environment() -> jinja2.Environment:
    """The templates' environment (autoescape on for every template)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["short"] = _short
    env.filters["as_json"] = _as_json
    env.filters["q"] = _quoted
    return env


_ENV = environment()


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """``template`` rendered with ``context`` (plus ``request``, the console's ``behind``
    note when the page's read models had not caught up, and ``live_after``: the head the
    page shows, after which ``live.js`` follows the log; None for a page that does not)."""
    page = _ENV.get_template(template)
    context.setdefault("behind", False)
    context.setdefault("failures", [])
    context.setdefault("live_after", None)  # a page that follows the log sets its head
    return HTMLResponse(page.render(request=request, **context), status_code=status_code)
