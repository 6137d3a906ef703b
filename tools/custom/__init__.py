"""Custom tools (seed 001 §13): shell-command templates defined at run time, recorded as
events, with their environment encrypted at rest.

    async with System.open("app.db") as system:          # CLAWLOG_SECRET_KEY set
        await system.define_tool(
            "dns_lookup",
            command="dig +short {{.record_type}} {{.domain}}",
            parameters={
                "type": "object",
                "properties": {
                    "domain": {"type": "string"},
                    "record_type": {"type": "string", "enum": ["A", "AAAA", "MX", "TXT"]},
                },
                "required": ["domain"],
            },
            env={"DNS_TOKEN": "…"},                        # sealed with AES-256-GCM
        )

Each argument reaches the command as exactly one literal word (:mod:`.template`); the
rendered command goes through exec's deny table and approval rules; env values are
decrypted only into the child's environment and scrubbed from everything else
(:mod:`.secrets`, :mod:`.tool`). The System keeps them in a :class:`CustomToolCatalog`
(:mod:`.catalog`) folded from ``tools/custom``; ``clawlog tools`` lists them.

``System.define_tool`` raises :class:`SecretKeyError` when ``env`` has values and
``CLAWLOG_SECRET_KEY`` is missing or malformed (``generate_secret_key()`` makes one), and
:class:`CustomToolError` (their root) when other processes kept changing the definitions.
"""

from clawlog.events.folds.custom_tool import CustomToolEntry

from ..errors import CustomToolError, SecretKeyError
from .catalog import CustomToolCatalog, CustomToolLog
from .definition import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, build_definition
from .secrets import SECRET_KEY_ENV, SecretBox, generate_secret_key
from .template import CommandTemplate, Rendering
from .tool import CustomTool, argument_text

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_TIMEOUT_S",
    "SECRET_KEY_ENV",
    "CommandTemplate",
    "CustomTool",
    "CustomToolCatalog",
    "CustomToolEntry",
    "CustomToolError",
    "CustomToolLog",
    "Rendering",
    "SecretBox",
    "SecretKeyError",
    "argument_text",
    "build_definition",
    "generate_secret_key",
]
