"""The parts a turn's message brought (``System.send(..., parts=[...])``), as its
``session.turn_started`` records them.

The System's boundary checked their types and sizes (:func:`actors.boundary.check_parts`);
the Session, which knows its model, checks the rest before anything is recorded, so a
part that could never be sent fails the sender's call and leaves the session as it was
(recorded, it would stay in the conversation and fail every later request):

- the model must take each part's kind (:func:`actors.providers.base.refused_part`);
- a URL holding a secret the scrubber knows is refused: the URL is sent as it is, so it
  cannot be recorded scrubbed, and the log never holds a secret.

Text parts are scrubbed like the message's text. Images and documents are data: they are
recorded as given (scrubbing base64 would corrupt them, and no pattern is meant for it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from clawlog.events.domain.session import ContentPart, TextPart

from ..errors import InvalidArgument
from ..providers.base import part_kind, refused_part

__all__ = ["recorded_parts"]


def recorded_parts(
    parts: Sequence[ContentPart], model: object, scrub: Callable[[str], str]
) -> list[ContentPart]:
    """``parts`` as the turn's start records them; ``InvalidArgument`` (naming
    ``parts``) for one ``model`` cannot take or whose URL holds a secret."""
    recorded: list[ContentPart] = []
    for index, part in enumerate(parts):
        refusal = refused_part(model, part)
        if refusal is not None:
            raise InvalidArgument("parts", f"parts[{index}]: {refusal}")
        if isinstance(part, TextPart):
            recorded.append(msgspec.structs.replace(part, text=scrub(part.text)))
            continue
        if part.url and scrub(part.url) != part.url:
            raise InvalidArgument(
                "parts",
                f"parts[{index}]: the URL of {part_kind(part)} holds a secret, and the log "
                "never records one; pass the content as data= instead",
            )
        recorded.append(part)
    return recorded
