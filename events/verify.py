"""Check the log's hash chain, and sign or check checkpoints of it.

``clawlog verify`` runs :func:`verify_chain`; an application can run it too::

    report = await verify_chain(store)
    if report.broken is not None:
        print(report.broken.line())      # "position 51: deleted: positions 51-100 are missing"

What is checked: every row's ``hash`` against the hash of the row before it and the row's
own columns (:mod:`.chain`), that positions follow each other without a gap, and that the
last row is the head its writer recorded. The walk stops at the first break and names
its position and kind:

- ``edited``: the row's content (or its hash) changed;
- ``deleted``: positions are missing, in the middle or at the tail;
- ``inserted``: a row was added (past the recorded head, or at a position whose rows were
  moved up to make room);
- ``reordered``: the event recorded at a position is now at another one;
- ``restarted``: a row in the middle starts a new chain (linked to the genesis value);
- ``rewritten``: every link holds, but the hash at a checkpoint's position differs from
  the checkpoint's (the chain was recomputed after the checkpoint was taken).

Memory stays bounded: the walk reads pages of ``page_size`` rows and keeps one hash.
Rows appended while it runs are left for the next run (it checks up to the head it read
at the start).

**What the chain proves.** An edit made with SQL (or a disk) breaks it. Whoever can write
the database can also recompute every hash after a change: against that, anchor the head
elsewhere (``clawlog verify --head``) or sign it (:func:`sign_checkpoint`), and check the
log against the anchor later (``checkpoint=``): the chain up to that position must
reproduce the anchored hash.

**Checkpoints** are JSON: ``{"position": P, "hash": HEX, "signature": HEX | null,
"public_key": HEX | null}``. The Ed25519 signature is over the UTF-8 bytes of
``"clawlog checkpoint v1\\n{position}\\n{hash}\\n"`` (the hash in lower-case hex), so
``openssl pkeyutl -verify -rawin`` can check one as well. Keys are PEM files as
``openssl genpkey -algorithm ed25519`` writes them (:func:`new_key_pair` makes a pair).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import msgspec

from .backends.base import ChainBackend
from .chain import GENESIS, HASH_SIZE, ChainedRow, ChainState, row_link
from .errors import InvalidCheckpoint, NoHashChain
from .store import EventStore

__all__ = [
    "BreakKind",
    "ChainBreak",
    "ChainReport",
    "Checkpoint",
    "chain_head",
    "check_signature",
    "checkpoint_json",
    "load_checkpoint",
    "new_key_pair",
    "sign_checkpoint",
    "verify_chain",
]

BreakKind = Literal["edited", "deleted", "inserted", "reordered", "restarted", "rewritten"]
#: Rows read past a break to find where a moved row went (the ``reordered`` diagnosis).
SEARCH_LIMIT = 100_000
_SIGNED_TEXT = "clawlog checkpoint v1\n{position}\n{hash}\n"
_HEX = "0123456789abcdef"


class ChainBreak(msgspec.Struct, frozen=True):
    """The first place where the log is not what its writer wrote."""

    position: int
    kind: BreakKind
    #: What was found there, for people.
    detail: str

    def line(self) -> str:
        return f"position {self.position}: {self.kind}: {self.detail}"


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """A position of the log and the chain's hash there; signed when ``signature`` is set."""

    position: int
    #: The hash at ``position``, lower-case hex.
    hash: str
    #: Ed25519 over :func:`signed_text`, hex.
    signature: str | None = None
    #: The raw 32-byte public key that signed it, hex (to tell keys apart; the check
    #: uses the key the operator gives, never this one).
    public_key: str | None = None

    def signed_text(self) -> bytes:
        return _SIGNED_TEXT.format(position=self.position, hash=self.hash).encode()


class ChainReport(msgspec.Struct, kw_only=True):
    """What :func:`verify_chain` found."""

    #: The first position checked.
    start: int
    #: Rows whose link was checked and held.
    checked: int = 0
    #: The last position checked (``start - 1`` if none).
    last_position: int = 0
    #: The writer's recorded head when the walk began.
    head_position: int = 0
    head_hash: str = ""
    #: The checkpoint checked against, if any.
    checkpoint: Checkpoint | None = None
    #: The first break (None: intact).
    broken: ChainBreak | None = None

    @property
    def intact(self) -> bool:
        return self.broken is None

    def summary(self) -> str:
        if self.broken is not None:
            return f"chain broken at {self.broken.line()}"
        anchored = ""
        if self.checkpoint is not None:
            signed = "signed " if self.checkpoint.signature else ""
            anchored = f"; matches the {signed}checkpoint at position {self.checkpoint.position}"
        if not self.checked:
            return f"chain intact: no event to check from position {self.start}{anchored}"
        return (
            f"chain intact: {self.checked} events checked (positions {self.start}-"
            f"{self.last_position}); head {self.head_position} {self.head_hash}{anchored}"
        )

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = msgspec.to_builtins(self)
        document["intact"] = self.intact
        return document


async def verify_chain(
    store: EventStore,
    *,
    from_position: int = 1,
    checkpoint: Checkpoint | None = None,
    page_size: int = 2000,
) -> ChainReport:
    """Check the chain from ``from_position`` (trusting the stored hash of the row before
    it) up to the head recorded when the walk begins, and against ``checkpoint`` if given
    (its signature is not checked here: :func:`check_signature`). Raises
    :class:`NoHashChain` for a log without one; a damaged page raises the store's
    :class:`StoreDamaged`."""
    if type(from_position) is not int or from_position < 1:
        raise ValueError(f"from_position must be a position (an int >= 1), not {from_position!r}")
    if checkpoint is not None and checkpoint.position < from_position:
        raise ValueError(
            f"the checkpoint is at position {checkpoint.position}, before --from "
            f"{from_position}: check it from an earlier position"
        )
    backend, state = await _chain_of(store)
    end = max(state.recorded_position, state.last_position)
    if from_position > end + 1:
        raise ValueError(f"position {from_position} is past the log's last position ({end})")
    report = ChainReport(
        start=from_position,
        last_position=from_position - 1,
        head_position=state.recorded_position,
        head_hash=state.recorded_hash.hex(),
        checkpoint=checkpoint,
    )
    walk = _Walk(backend, state, report, page_size)
    report.broken = await walk.run(checkpoint)
    return report


async def chain_head(store: EventStore) -> Checkpoint:
    """The writer's recorded head as an (unsigned) checkpoint: what to anchor elsewhere."""
    _, state = await _chain_of(store)
    return Checkpoint(position=state.recorded_position, hash=state.recorded_hash.hex())


async def _chain_of(store: EventStore) -> tuple[ChainBackend, ChainState]:
    backend = store.backend
    if not isinstance(backend, ChainBackend):
        raise NoHashChain(f"the {type(backend).__name__} keeps no hash chain: nothing to verify")
    state = await backend.chain_state()
    if state is None:
        head = await store.head_position()
        unchained = f": positions 1-{head} are unchained" if head else ""
        raise NoHashChain(
            f"the log has no hash chain yet{unchained} (written before clawlog kept one); "
            "`clawlog verify --upgrade` hashes them in place, as does the first store "
            "that opens the log for writing"
        )
    return backend, state


class _Walk:
    """One pass over the chain; ``prev`` is the stored hash of the last row checked."""

    def __init__(
        self, backend: ChainBackend, state: ChainState, report: ChainReport, page_size: int
    ) -> None:
        self._backend = backend
        self._state = state
        self._report = report
        self._page_size = page_size
        self._stop = max(state.recorded_position, state.last_position)
        self._prev = GENESIS
        self._checkpoint_hash: bytes | None = None

    async def run(self, checkpoint: Checkpoint | None) -> ChainBreak | None:
        report, start = self._report, self._report.start
        if start > 1:
            before = await self._backend.read_chain(start - 1, 1)
            if not before or before[0][0] != start - 1:
                return ChainBreak(start - 1, "deleted", "the row the check starts after is missing")
            self._prev = before[0][11]
        rows = self._rows(start)
        async for row in rows:
            position, stored = row[0], row[11]
            if position != report.last_position + 1:
                return self._gap(report.last_position + 1, position - 1)
            if row_link(self._prev, row) != stored:
                return await self._diagnose(row, rows)
            if position >= self._state.recorded_position:
                found = self._against_head(row)
                if found is not None:
                    return found
            self._prev = stored
            report.last_position = position
            report.checked += 1
            if checkpoint is not None and position == checkpoint.position:
                self._checkpoint_hash = stored
        return self._at_end(checkpoint)

    async def _rows(self, position: int) -> AsyncIterator[ChainedRow]:
        while position <= self._stop:
            page = await self._backend.read_chain(position, self._page_size)
            for row in page:
                if row[0] > self._stop:
                    return
                yield row
            if len(page) < self._page_size:
                return
            position = page[-1][0] + 1

    def _against_head(self, row: ChainedRow) -> ChainBreak | None:
        """A row that links, at or past the head its writer recorded: the writer records
        its head in the transaction that appends, so a row past it was added outside
        clawlog (with a hash computed to fit), and the row at it must carry its hash."""
        position, recorded = row[0], self._state.recorded_position
        if position > recorded:
            return ChainBreak(
                position,
                "inserted",
                f"past the head its writer recorded ({recorded}): added outside clawlog, "
                "with a hash computed to fit the chain",
            )
        if row[11] != self._state.recorded_hash:
            return ChainBreak(
                position,
                "edited",
                "its writer recorded this position as its head with another hash: the row "
                "and its hash, or the recorded head (table chain_head), were changed "
                "outside clawlog",
            )
        return None

    def _gap(self, first: int, last: int) -> ChainBreak:
        where = f"position {first} is" if first == last else f"positions {first}-{last} are"
        return ChainBreak(first, "deleted", f"{where} missing")

    def _at_end(self, checkpoint: Checkpoint | None) -> ChainBreak | None:
        """After the last row: the tail and the recorded head, then the checkpoint."""
        last, state = self._report.last_position, self._state
        if last < state.recorded_position:
            return ChainBreak(
                last + 1,
                "deleted",
                f"the log ends at position {last}, but its writer recorded events up to "
                f"{state.recorded_position}: positions {last + 1}-{state.recorded_position} "
                "are missing",
            )
        if last == state.recorded_position and last and self._prev != state.recorded_hash:
            # Reached when the walk started past the head (``--from``): its row unchecked.
            return ChainBreak(
                last, "edited", "the last event's hash differs from the one its writer recorded"
            )
        if checkpoint is None:
            return None
        if checkpoint.position > last:
            return ChainBreak(
                last + 1,
                "deleted",
                f"the log ends at position {last}, before the checkpoint's position "
                f"{checkpoint.position}",
            )
        if self._checkpoint_hash is None or self._checkpoint_hash.hex() != checkpoint.hash:
            return ChainBreak(
                checkpoint.position,
                "rewritten",
                "every link holds, but the hash here is not the checkpoint's: the log was "
                f"changed at or before position {checkpoint.position} and its hashes recomputed",
            )
        return None

    async def _diagnose(self, row: ChainedRow, rows: AsyncIterator[ChainedRow]) -> ChainBreak:
        """Why ``row`` does not link to the row before it (see the module's docstring)."""
        position, stored, prev = row[0], row[11], self._prev
        if position > self._state.recorded_position:
            return ChainBreak(
                position,
                "inserted",
                f"past the head its writer recorded ({self._state.recorded_position}): "
                "added outside clawlog",
            )
        if position > 1 and stored is not None and row_link(GENESIS, row) == stored:
            return ChainBreak(
                position, "restarted", "this row starts a new chain (its link is the genesis value)"
            )
        following = await anext(rows, None)
        if following is not None and following[0] == position + 1:
            found = _beside(row, following, prev)
            if found is not None:
                return found
            following = None  # searched below with the rest
        moved_to = await _search(prev, position, following, rows)
        if moved_to is not None:
            return ChainBreak(
                position,
                "reordered",
                f"the event recorded at position {position} is now at position {moved_to}",
            )
        if stored is None:
            return ChainBreak(position, "edited", "the row has no hash: changed outside clawlog")
        return ChainBreak(
            position,
            "edited",
            "the row does not match its recorded hash, and the chain does not resume after "
            "it: edited along with its hash, its event moved more than "
            f"{SEARCH_LIMIT:,} rows on, or the chain rewritten from here on",
        )


def _beside(row: ChainedRow, following: ChainedRow, prev: bytes) -> ChainBreak | None:
    """The break at ``row`` judged by the row after it, if that tells."""
    position, stored = row[0], row[11]
    if stored is not None and row_link(stored, following) == following[11]:
        # The hashes cannot tell this row edited from the row before it edited along with
        # its own hash (this row's link then reads a new value): both are named.
        before = (
            f", or the row before it (position {position - 1}) was changed along with its hash"
            if position > 1
            else ""
        )
        return ChainBreak(
            position,
            "edited",
            f"the row no longer matches the hash recorded for it{before} (the chain "
            "resumes after it)",
        )
    if row_link(prev, following, position) == following[11]:
        if stored is not None and row_link(following[11], row, position + 1) == stored:
            return ChainBreak(
                position, "reordered", f"positions {position} and {position + 1} were swapped"
            )
        return ChainBreak(
            position,
            "inserted",
            f"the row after it holds the event recorded at {position}: the rows from here "
            "on were moved up to make room",
        )
    return None


async def _search(
    prev: bytes, position: int, first: ChainedRow | None, rows: AsyncIterator[ChainedRow]
) -> int | None:
    """Where the event recorded at ``position`` went: the later row that links to
    ``prev`` as if it stood at ``position`` (None if none within :data:`SEARCH_LIMIT`)."""
    searched = 0
    candidate = first
    while searched < SEARCH_LIMIT:
        if candidate is None:
            candidate = await anext(rows, None)
            if candidate is None:
                return None
        if row_link(prev, candidate, position) == candidate[11]:
            return int(candidate[0])
        candidate = None
        searched += 1
    return None


# -- checkpoints --------------------------------------------------------------------------
def load_checkpoint(path: str | Path) -> Checkpoint:
    """Read a checkpoint file (``clawlog verify --head --json`` or ``--sign`` output)."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidCheckpoint(f"cannot read checkpoint {path}: {exc.strerror or exc}") from exc
    try:
        checkpoint = msgspec.json.decode(text, type=Checkpoint)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidCheckpoint(
            f"{path} is not a clawlog checkpoint ({exc}): expected JSON with position and "
            "hash, as `clawlog verify --head --json` or `--sign` prints it"
        ) from exc
    digest = checkpoint.hash.lower()
    if checkpoint.position < 1 or len(digest) != 2 * HASH_SIZE or digest.strip(_HEX):
        raise InvalidCheckpoint(
            f"{path}: position must be 1 or more and hash {2 * HASH_SIZE} hex digits, not "
            f"position {checkpoint.position} and hash {checkpoint.hash!r}: give the file "
            "`clawlog verify --head --json` or `--sign` printed"
        )
    # Hex is compared as text: an upper-case copy of the hash is the same checkpoint.
    return msgspec.structs.replace(checkpoint, hash=digest)


def sign_checkpoint(checkpoint: Checkpoint, private_key_pem: bytes) -> Checkpoint:
    """``checkpoint`` signed with an Ed25519 private key (PEM, unencrypted PKCS #8)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(private_key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise InvalidCheckpoint(
            f"not a PEM private key without a password ({exc}): give the private key "
            "`clawlog verify --new-key FILE` wrote (FILE, not FILE.pub), or one made by "
            "`openssl genpkey -algorithm ed25519 -out key.pem`"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidCheckpoint(
            f"the key is {type(key).__name__}, not Ed25519 "
            "(make one: openssl genpkey -algorithm ed25519 -out key.pem)"
        )
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return msgspec.structs.replace(
        checkpoint,
        signature=key.sign(checkpoint.signed_text()).hex(),
        public_key=public.hex(),
    )


def check_signature(checkpoint: Checkpoint, public_key_pem: bytes) -> bool:
    """Whether ``checkpoint`` carries a valid signature by this Ed25519 public key (PEM)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(public_key_pem)
    except (ValueError, TypeError) as exc:
        raise InvalidCheckpoint(
            f"not a PEM public key ({exc}): give the FILE.pub `clawlog verify --new-key "
            "FILE` wrote, or `openssl pkey -in key.pem -pubout` output"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidCheckpoint(
            f"the public key is {type(key).__name__}, not Ed25519: give the public half of "
            "the Ed25519 key that signed the checkpoint"
        )
    if checkpoint.signature is None:
        return False
    try:
        key.verify(bytes.fromhex(checkpoint.signature), checkpoint.signed_text())
    except (InvalidSignature, ValueError):
        return False
    return True


def new_key_pair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair: ``(private PEM, public PEM)``, as openssl writes them."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


def checkpoint_json(checkpoint: Checkpoint) -> str:
    """A checkpoint as the JSON document ``load_checkpoint`` reads."""
    return msgspec.json.encode(checkpoint).decode()
