"""``clawlog verify``: check the log's hash chain; print, sign or check its head.

The checks are :mod:`clawlog.events.verify`'s; this module reads the files the operator
gives (checkpoints, keys), prints the outcome and chooses the exit status: 0 intact, 1 a
break found (or a checkpoint whose signature does not verify): the one-line diagnosis on
stdout, and on stderr as well, 2 a problem with the command or the log (one line on
stderr: no such file, no chain yet, an unreadable key).

For people: one line. With ``--json``: one document (the report; ``--head`` and
``--sign`` print a checkpoint, which ``--checkpoint`` reads back).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from clawlog.events import EventStoreError
from clawlog.events.verify import (
    ChainReport,
    Checkpoint,
    chain_head,
    check_signature,
    load_checkpoint,
    new_key_pair,
    sign_checkpoint,
    verify_chain,
)

from .errors import CliError
from .logfile import _redacted, describe, open_log
from .render import emit_json

__all__ = ["verify"]

T = TypeVar("T")


async def verify(args: argparse.Namespace) -> int:
    """Run ``clawlog verify`` as parsed; the exit status."""
    if args.new_key is not None:
        return _write_key_pair(Path(args.new_key))
    checkpoint = _read(load_checkpoint, args.checkpoint) if args.checkpoint else None
    public_key = _key_file(args.public_key) if args.public_key else None
    private_key = _key_file(args.sign, private=True) if args.sign else None
    if checkpoint is not None and checkpoint.signature and public_key is None:
        raise CliError(f"{args.checkpoint} is signed: give --public-key PUB to check its signature")
    if public_key is not None and checkpoint is None:
        raise CliError("--public-key checks a signed checkpoint: give --checkpoint FILE too")
    if private_key is not None and args.from_position != 1:
        raise CliError("--sign checks the whole chain before signing its head: drop --from")
    where = _redacted(args.db)
    async with open_log(args.db, read_only=not args.upgrade) as store:
        if args.head:
            head = await chain_head(store)
            if not head.position:
                raise CliError(f"{where}: the log has no event yet: no head to anchor")
            _print_head(where, head, as_json=args.json)
            return 0
        try:
            report = await verify_chain(
                store, from_position=args.from_position, checkpoint=checkpoint
            )
        except ValueError as exc:
            raise CliError(f"{where}: {exc}") from exc
        if (
            checkpoint is not None
            and public_key is not None
            and not _signature_holds(checkpoint, public_key, args.checkpoint, args.public_key)
        ):
            return 1
        if private_key is not None and report.intact:
            if not report.head_position:
                raise CliError(f"{where}: the log has no event yet: no head to sign")
            head = Checkpoint(position=report.head_position, hash=report.head_hash)
            signed = _read(sign_checkpoint, head, private_key, file=args.sign)
            emit_json(signed)
            return 0
    return _print_report(where, report, as_json=args.json)


def _print_report(where: str, report: ChainReport, *, as_json: bool) -> int:
    if as_json:
        emit_json({"log": where, **report.to_json()})
    else:
        sys.stdout.write(f"{where}: {report.summary()}\n")
    if report.intact:
        return 0
    sys.stderr.write(f"clawlog verify: {where}: {report.summary()}\n")
    return 1


def _print_head(where: str, head: Checkpoint, *, as_json: bool) -> None:
    if as_json:
        emit_json(head)
    else:
        sys.stdout.write(f"{where}: head position {head.position} hash {head.hash}\n")


def _signature_holds(checkpoint: Checkpoint, public_key: bytes, file: str, key: str) -> bool:
    if _read(check_signature, checkpoint, public_key, file=key):
        return True
    line = f"checkpoint {file}: its signature does not verify with {key}"
    sys.stdout.write(f"{line}\n")
    sys.stderr.write(f"clawlog verify: {line}\n")
    return False


def _key_file(path: str, *, private: bool = False) -> bytes:
    """The key file's bytes; a private key others may read is refused (as ssh does)."""
    try:
        mode = os.stat(path).st_mode
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read key {path}: {exc.strerror or exc}") from exc
    if private and os.name == "posix" and mode & 0o077 and b"PRIVATE KEY-----" in data:
        raise CliError(
            f"{path} is a private key others can read (mode {mode & 0o777:o}): "
            f"`chmod 600 {path}`, or sign with a key only you can read"
        )
    return data


def _read(function: Callable[..., T], *args: object, file: str | None = None) -> T:
    """Call ``function``; a bad checkpoint or key ``file`` is the user's error (exit 2)."""
    try:
        return function(*args)
    except EventStoreError as exc:
        if file is not None:
            raise CliError(f"{file}: {exc}") from exc
        raise CliError(describe("verify", exc)) from exc


def _write_key_pair(path: Path) -> int:
    """``--new-key FILE``: FILE (the private key, readable by this user only) and
    FILE.pub; never over an existing file."""
    public_path = path.with_name(path.name + ".pub")
    private, public = new_key_pair()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise CliError(f"{path} exists: choose another name (a key is never overwritten)") from exc
    except OSError as exc:
        raise CliError(f"cannot create {path}: {exc.strerror or exc}") from exc
    with os.fdopen(descriptor, "wb") as file:
        file.write(private)
    try:
        with public_path.open("xb") as file:
            file.write(public)
    except OSError as exc:
        path.unlink()
        raise CliError(f"cannot create {public_path}: {exc.strerror or exc}") from exc
    sys.stdout.write(
        f"wrote {path} (the private key: keep it away from the log's host) and {public_path}\n"
    )
    return 0
