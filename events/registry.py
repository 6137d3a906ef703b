"""The event registry: one decoder over every domain's union, and the upcasters.

Decoding looks at the stored tag first: a tag nobody registered becomes an
:class:`UnknownEvent` holding the raw payload (an older reader never crashes on a newer
log). A row written with an older ``schema_version`` than its class declares is decoded
to plain values, passed through the registered upcasters in order, then converted. A
retired tag needs no class of its own: an upcaster registered for it (typically one that
moves the payload to a new tag) is enough.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Union

import msgspec

from .base import Event, UnknownEvent, event_tag
from .errors import UnknownEventClass

__all__ = ["EventRegistry", "Upcaster"]

#: Turns the plain-value payload of version ``n`` into the payload of version ``n + 1``.
#: It may change ``payload["type"]`` to move the event to a new tag.
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class EventRegistry:
    """Maps stable tags to event classes, encodes events and decodes rows."""

    def __init__(self, classes: Iterable[type[Event]] = ()) -> None:
        self._lock = threading.Lock()
        self._classes: dict[str, type[Event]] = {}
        self._tags: dict[type[Event], str] = {}  # the reverse, for encoding
        self._upcasters: dict[tuple[str, int], Upcaster] = {}
        self._decoder: msgspec.msgpack.Decoder[Any] | None = None
        self._encoder = msgspec.msgpack.Encoder()
        self.register(*classes)

    # -- registration -------------------------------------------------------------------
    def register(self, *classes: type[Event]) -> None:
        """Register event classes. A tag may name only one class."""
        with self._lock:
            for cls in classes:
                tag = event_tag(cls)
                known = self._classes.get(tag)
                if known is not None and known is not cls:
                    raise ValueError(f"tag {tag!r} is taken by {known.__qualname__}")
                self._classes[tag] = cls
                self._tags[cls] = tag
            self._decoder = None

    def register_upcaster(self, tag: str, from_version: int, upcaster: Upcaster) -> None:
        """Register the step that lifts ``tag`` payloads from ``from_version`` by one."""
        with self._lock:
            self._upcasters[(tag, from_version)] = upcaster

    def tags(self) -> frozenset[str]:
        return frozenset(self._classes)

    def expand(self, types: Iterable[str]) -> list[str]:
        """The tags ``types`` name, sorted: each is a tag, or a domain's glob (``"tool.*"``:
        every registered tag of the ``tool`` domain)."""
        known = self.tags()
        tags: set[str] = set()
        for tag in types:
            if tag.endswith(".*"):
                tags.update(t for t in known if t.startswith(tag[:-1]))
            else:
                tags.add(tag)
        return sorted(tags)

    def class_for(self, tag: str) -> type[Event] | None:
        return self._classes.get(tag)

    # -- encoding -----------------------------------------------------------------------
    def encode(self, event: Event) -> tuple[str, int, bytes]:
        """Return ``(tag, schema_version, payload)`` for a registered event instance."""
        cls = type(event)
        tag = self._tags.get(cls)
        if tag is None:
            raise UnknownEventClass(
                f"{cls.__qualname__} is not a registered event class; subclass events.Event "
                "with an explicit tag and register it"
            )
        return tag, cls.schema_version, self._encoder.encode(event)

    # -- decoding -----------------------------------------------------------------------
    def current_decoding(self) -> tuple[dict[str, type[Event]], Callable[[bytes], Any]]:
        """For bulk reads: the classes by tag and the one union decoder's ``decode``.

        A row whose tag maps to a class and whose schema version is at least the class's
        decodes with it directly; the caller checks the decoded type against the tag and
        sends any other row through :meth:`decode`.
        """
        decoder = self._decoder or self._build_decoder()
        return self._classes, decoder.decode

    def decode(self, tag: str, schema_version: int, payload: bytes) -> Event | UnknownEvent:
        """Decode one stored payload. Raises ``msgspec.DecodeError`` on a corrupt payload."""
        cls = self._classes.get(tag)
        if cls is None:
            if (tag, schema_version) in self._upcasters:  # a retired tag moved elsewhere
                return self._upcast(tag, schema_version, payload)
            return UnknownEvent(type=tag, schema_version=schema_version, payload=payload)
        if schema_version >= cls.schema_version:
            decoder = self._decoder or self._build_decoder()
            event = decoder.decode(payload)
            if type(event) is not cls:
                raise msgspec.ValidationError(
                    f"payload is tagged {event_tag(type(event))!r}, row says {tag!r}"
                )
            return event  # type: ignore[no-any-return]
        return self._upcast(tag, schema_version, payload)

    def _upcast(self, tag: str, schema_version: int, payload: bytes) -> Event | UnknownEvent:
        data = msgspec.msgpack.decode(payload)
        if not isinstance(data, dict):
            raise msgspec.ValidationError("payload is not a map")
        version = schema_version
        while True:
            cls = self._classes.get(tag)
            if cls is None and (tag, version) not in self._upcasters:
                encoded = msgspec.msgpack.encode(data)
                return UnknownEvent(type=tag, schema_version=version, payload=encoded)
            if cls is not None and version >= cls.schema_version:
                return msgspec.convert(data, cls)  # type: ignore[no-any-return]
            upcaster = self._upcasters.get((tag, version))
            if upcaster is None:
                raise msgspec.ValidationError(
                    f"no upcaster for {tag!r} from schema version {version}"
                )
            data = upcaster(dict(data))
            new_tag = data.get("type", tag)
            if new_tag != tag:  # moved to another tag: that class's versions start at 1
                tag, version = new_tag, 1
            else:
                version += 1

    def _build_decoder(self) -> msgspec.msgpack.Decoder[Any]:
        with self._lock:
            if self._decoder is None:
                classes = tuple(self._classes.values())
                union: Any = classes[0] if len(classes) == 1 else Union[classes]  # noqa: UP007
                self._decoder = msgspec.msgpack.Decoder(union)
            return self._decoder
