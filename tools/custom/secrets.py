"""Sealing custom tools' environment values: AES-256-GCM (seed 001 §13), key from the
environment.

The key is ``CLAWLOG_SECRET_KEY``: the base64 (standard or URL-safe alphabet) of 32
random bytes. Make one with::

    python -c "import base64, os; print(base64.b64encode(os.urandom(32)).decode())"

or :func:`generate_secret_key`. Each value is sealed on its own: a fresh 12-byte nonce,
then the ciphertext with its 16-byte tag, the associated data naming the tool's scope,
its name and the variable, so a sealed value decrypts only as that variable of that
tool. The events hold only sealed values and the key's fingerprint (:attr:`SecretBox.key_id`:
8 bytes of an HMAC of a fixed label under the key, which says nothing about the key), so
a process with another key can tell "wrong key" from "damaged value".

AES-GCM rather than Fernet because the seed says AES-256-GCM and because associated data
(the binding to the tool and variable) is part of the AEAD interface; ``cryptography``'s
``AESGCM`` is the maintained implementation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from clawlog.events.domain.custom_tool import SealedEnvValue

from ..errors import SecretKeyError

__all__ = ["SECRET_KEY_ENV", "SecretBox", "generate_secret_key"]

#: The environment variable holding the key.
SECRET_KEY_ENV = "CLAWLOG_SECRET_KEY"
_KEY_BYTES = 32
_NONCE_BYTES = 12
_TAG_BYTES = 16
_KEY_ID_LABEL = b"clawlog custom tool env key id"


def generate_secret_key() -> str:
    """A new key, as ``CLAWLOG_SECRET_KEY`` takes it (base64 of 32 random bytes)."""
    return base64.b64encode(os.urandom(_KEY_BYTES)).decode()


def _decode_key(text: str) -> bytes:
    cleaned = text.strip()
    padded = cleaned + "=" * (-len(cleaned) % 4)
    for altchars in (None, b"-_"):  # the standard alphabet, then the URL-safe one
        try:
            key = base64.b64decode(padded.encode("ascii"), altchars=altchars, validate=True)
        except (binascii.Error, ValueError, UnicodeEncodeError):
            continue
        if len(key) == _KEY_BYTES:
            return key
    raise SecretKeyError(
        "malformed",
        f"{SECRET_KEY_ENV} must be the base64 of {_KEY_BYTES} random bytes (44 characters); "
        f'make one with: python -c "import base64, os; '
        f'print(base64.b64encode(os.urandom(32)).decode())"',
    )


def _associated_data(agent: str, tool: str, variable: str) -> bytes:
    return b"\x00".join(
        (b"clawlog custom tool env", agent.encode(), tool.encode(), variable.encode())
    )


class SecretBox:
    """Seals and opens env values with one key. Its repr never shows the key."""

    __slots__ = ("_aead", "key_id")

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes) or len(key) != _KEY_BYTES:
            raise SecretKeyError("malformed", f"the key must be {_KEY_BYTES} bytes")
        self._aead = AESGCM(key)
        #: A fingerprint naming the key in events and errors (not the key).
        self.key_id = hmac.new(key, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SecretBox | None:
        """The box for ``CLAWLOG_SECRET_KEY``, or None when it is not set (or empty).

        Raises:
            SecretKeyError: (``reason="malformed"``) it is set but not the base64 of 32
                bytes.
        """
        text = (os.environ if environ is None else environ).get(SECRET_KEY_ENV, "")
        if not text.strip():
            return None
        return cls(_decode_key(text))

    def seal(self, agent: str, tool: str, variable: str, value: str) -> SealedEnvValue:
        """``value`` encrypted for ``variable`` of the tool ``tool`` (scope ``agent``)."""
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(
            nonce, value.encode("utf-8"), _associated_data(agent, tool, variable)
        )
        return SealedEnvValue(name=variable, sealed=nonce + sealed)

    def open(self, agent: str, tool: str, sealed: SealedEnvValue, key_id: str) -> str:
        """The value of one sealed variable.

        Raises:
            SecretKeyError: (``reason="wrong"``) another key sealed it, or it was altered;
                the message names the tool and the variable.
        """
        data = sealed.sealed
        where = f"custom tool {tool!r}" + (f" of agent {agent!r}" if agent else "")
        if key_id and key_id != self.key_id:
            raise SecretKeyError(
                "wrong",
                f"the env of {where} was sealed with another key (key id {key_id}); "
                f"{SECRET_KEY_ENV} holds key id {self.key_id}. Set the key it was defined "
                "with, or define the tool again with this one",
            )
        try:
            if len(data) < _NONCE_BYTES + _TAG_BYTES:
                raise InvalidTag
            plain = self._aead.decrypt(
                data[:_NONCE_BYTES],
                data[_NONCE_BYTES:],
                _associated_data(agent, tool, sealed.name),
            )
        except InvalidTag:
            raise SecretKeyError(
                "wrong",
                f"the value of {sealed.name} in the env of {where} cannot be decrypted with "
                f"{SECRET_KEY_ENV}: another key sealed it, or the log was altered. Define "
                "the tool again",
            ) from None
        return plain.decode("utf-8")

    def __repr__(self) -> str:
        return f"<SecretBox key_id={self.key_id}>"
