"""``clawlog verify`` as a user runs it (a real subprocess on a real SQLite file): exit
status and one-line diagnosis, the head to anchor, signed checkpoints (keys made by the
command and by openssl), and a log from before the chain, which verify and the readers
never upgrade (SQLite, and PostgreSQL on the test server)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.cli.support import assert_user_error, clawlog, write_log
from tests.events.chain_logs import SqliteChainLog, postgres_tables, write_v1_postgres_log
from tests.events.test_chain import write_v1_log
from tests.support.postgres import database_url

EVENTS = 300


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "app.db"
    write_log(path, EVENTS)
    return path


def tamper(path: Path, how: str, *args: int) -> None:
    asyncio.run(getattr(SqliteChainLog(path), how)(*args))


def test_an_intact_log_exits_0_with_a_summary(log: Path) -> None:
    done = clawlog("verify", "--db", str(log))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        f"{log}: chain intact: {EVENTS} events checked (positions 1-{EVENTS}); head {EVENTS} "
        + done.stdout.split()[-1]
    ]


@pytest.mark.parametrize(
    ("how", "args", "expected"),
    [
        ("edit_payload_byte", (150,), "position 150: edited"),
        ("delete", (77,), "position 77: deleted"),
        ("swap", (10, 20), "position 10: reordered"),
        ("insert_at", (200,), "position 200: inserted"),
        ("truncate_after", (250,), "position 251: deleted"),
    ],
)
def test_a_break_exits_1_with_one_line_naming_position_and_kind(
    log: Path, how: str, args: tuple[int, ...], expected: str
) -> None:
    tamper(log, how, *args)
    done = clawlog("verify", "--db", str(log))
    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == 1
    assert f"chain broken at {expected}" in done.stdout
    assert done.stderr.startswith("clawlog verify: ") and len(done.stderr.splitlines()) == 1
    document = json.loads(clawlog("verify", "--db", str(log), "--json").stdout)
    assert document["intact"] is False
    position, kind = expected.removeprefix("position ").split(": ")
    assert document["broken"]["position"] == int(position)
    assert document["broken"]["kind"] == kind


def test_from_starts_the_check_later(log: Path) -> None:
    tamper(log, "edit_payload_byte", 5)
    assert clawlog("verify", "--db", str(log), "--from", "6").returncode == 0
    assert clawlog("verify", "--db", str(log), "--from", "5").returncode == 1
    assert_user_error(clawlog("verify", "--db", str(log), "--from", "0"), "not a log position")
    assert_user_error(clawlog("verify", "--db", str(log), "--from", "999"), "past the log's last")


def test_the_head_is_an_anchor_that_catches_a_rewritten_chain(log: Path, tmp_path: Path) -> None:
    text = clawlog("verify", "--db", str(log), "--head")
    assert text.returncode == 0
    head = clawlog("verify", "--db", str(log), "--head", "--json")
    anchor = json.loads(head.stdout)
    assert anchor["position"] == EVENTS
    assert text.stdout == f"{log}: head position {EVENTS} hash {anchor['hash']}\n"
    (tmp_path / "anchor.json").write_text(head.stdout)
    checked = clawlog("verify", "--db", str(log), "--checkpoint", str(tmp_path / "anchor.json"))
    assert checked.returncode == 0, checked.stderr
    assert "matches the checkpoint at position 300" in checked.stdout
    tamper(log, "rewrite_from", 120)
    assert clawlog("verify", "--db", str(log)).returncode == 0  # only the anchor can tell
    done = clawlog("verify", "--db", str(log), "--checkpoint", str(tmp_path / "anchor.json"))
    assert done.returncode == 1
    assert "chain broken at position 300: rewritten" in done.stdout


def test_a_signed_checkpoint_checks_with_its_public_key_only(log: Path, tmp_path: Path) -> None:
    key, other = tmp_path / "key.pem", tmp_path / "other.pem"
    made = clawlog("verify", "--new-key", str(key))
    assert made.returncode == 0, made.stderr
    assert key.stat().st_mode & 0o777 == 0o600
    assert clawlog("verify", "--new-key", str(other)).returncode == 0
    assert_user_error(clawlog("verify", "--new-key", str(key)), "exists")

    signed = clawlog("verify", "--db", str(log), "--sign", str(key))
    assert signed.returncode == 0, signed.stderr
    checkpoint = tmp_path / "checkpoint.json"
    checkpoint.write_text(signed.stdout)
    assert json.loads(signed.stdout)["signature"]

    good = clawlog(
        "verify", "--db", str(log), "--checkpoint", str(checkpoint), "--public-key", f"{key}.pub"
    )
    assert good.returncode == 0, good.stderr
    assert "matches the signed checkpoint at position 300" in good.stdout
    wrong = clawlog(
        "verify", "--db", str(log), "--checkpoint", str(checkpoint), "--public-key", f"{other}.pub"
    )
    assert wrong.returncode == 1
    assert "signature does not verify" in wrong.stdout
    assert_user_error(
        clawlog("verify", "--db", str(log), "--checkpoint", str(checkpoint)), "--public-key"
    )


def test_an_upper_case_checkpoint_is_the_same_checkpoint(log: Path, tmp_path: Path) -> None:
    anchor = json.loads(clawlog("verify", "--db", str(log), "--head", "--json").stdout)
    anchor["hash"] = anchor["hash"].upper()
    (tmp_path / "anchor.json").write_text(json.dumps(anchor))
    done = clawlog("verify", "--db", str(log), "--checkpoint", str(tmp_path / "anchor.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    anchor["hash"] = "g" * 64
    (tmp_path / "anchor.json").write_text(json.dumps(anchor))
    assert_user_error(
        clawlog("verify", "--db", str(log), "--checkpoint", str(tmp_path / "anchor.json")),
        "64 hex digits",
    )


def test_a_private_key_others_can_read_is_refused(log: Path, tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    assert clawlog("verify", "--new-key", str(key)).returncode == 0
    key.chmod(0o644)
    assert_user_error(clawlog("verify", "--db", str(log), "--sign", str(key)), "chmod 600")
    key.chmod(0o600)
    assert clawlog("verify", "--db", str(log), "--sign", str(key)).returncode == 0
    # The public half given by mistake: named, with what to give instead.
    assert_user_error(clawlog("verify", "--db", str(log), "--sign", f"{key}.pub"), "not FILE.pub")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_keys_and_signatures_interoperate_with_openssl(log: Path, tmp_path: Path) -> None:
    """The documented openssl commands make keys --sign takes, and check its signature."""
    key, public = tmp_path / "key.pem", tmp_path / "key.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", key], check=True)
    subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-out", public], check=True)
    signed = clawlog("verify", "--db", str(log), "--sign", str(key))
    assert signed.returncode == 0, signed.stderr
    checkpoint = json.loads(signed.stdout)
    message = tmp_path / "message"
    message.write_text(f"clawlog checkpoint v1\n{checkpoint['position']}\n{checkpoint['hash']}\n")
    signature = tmp_path / "signature"
    signature.write_bytes(bytes.fromhex(checkpoint["signature"]))
    checked = subprocess.run(
        ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", public, "-rawin", "-in", message,
         "-sigfile", signature],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_signing_a_broken_chain_is_refused(log: Path, tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    assert clawlog("verify", "--new-key", str(key)).returncode == 0
    tamper(log, "delete", 3)
    done = clawlog("verify", "--db", str(log), "--sign", str(key))
    assert done.returncode == 1
    assert "signature" not in done.stdout
    assert "position 3: deleted" in done.stdout


def test_bad_checkpoint_and_key_files_are_usage_errors(log: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    assert_user_error(
        clawlog("verify", "--db", str(log), "--checkpoint", str(junk)), "not a clawlog checkpoint"
    )
    assert_user_error(
        clawlog("verify", "--db", str(log), "--sign", str(junk)), "not a PEM private key"
    )
    assert_user_error(
        clawlog("verify", "--db", str(log), "--sign", str(tmp_path / "missing.pem")),
        "cannot read key",
    )


def test_an_old_log_has_no_chain_until_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    write_v1_log(path, 500)
    assert_user_error(clawlog("verify", "--db", str(path)), "no hash chain yet", "--upgrade")
    upgraded = clawlog("verify", "--db", str(path), "--upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert "chain intact: 500 events checked" in upgraded.stdout
    assert clawlog("verify", "--db", str(path)).returncode == 0


def test_rows_added_past_the_head_are_named_and_refuse_a_writer(log: Path) -> None:
    """A forged row with a fitting hash past the recorded head: verify names it; opening
    the log for writing (``--upgrade``) is refused, naming it and pointing at verify."""
    tamper(log, "append_fitting", EVENTS)
    done = clawlog("verify", "--db", str(log))
    assert done.returncode == 1
    assert f"chain broken at position {EVENTS + 1}: inserted" in done.stdout
    assert_user_error(
        clawlog("verify", "--db", str(log), "--upgrade"),
        f"damaged at position {EVENTS + 1}",
        f"row at position {EVENTS + 1} lies past the recorded head",
        "run `clawlog verify`",
    )


def test_a_lost_recorded_head_is_damage(log: Path) -> None:
    asyncio.run(SqliteChainLog(log).run(("DELETE FROM {chain_head}", ())))
    assert_user_error(
        clawlog("verify", "--db", str(log)), "chain_head table has lost its row", "backup"
    )


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """The URL of a fresh database on the test server (the CLI reads schema ``clawlog``),
    dropped afterwards."""
    asyncpg = pytest.importorskip("asyncpg")
    server = database_url()
    name = f"t_{uuid.uuid4().hex[:16]}"

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(server)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f"CREATE DATABASE {name}"))
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        asyncio.run(run(f"DROP DATABASE {name} WITH (FORCE)"))


@pytest.mark.postgres
def test_an_old_postgresql_log_is_upgraded_only_by_upgrade(postgres_database: str) -> None:
    """verify and the readers open it read-only: no DDL, no upgrade, "no chain yet"."""
    url = postgres_database
    asyncio.run(write_v1_postgres_log(url, "clawlog", 200))
    before = asyncio.run(postgres_tables(url, "clawlog"))
    assert_user_error(
        clawlog("verify", "--db", url),
        "no hash chain yet: positions 1-200 are unchained",
        "clawlog verify --upgrade",
    )
    assert_user_error(clawlog("verify", "--db", url, "--head"), "no hash chain yet")
    listed = clawlog("tail", "--db", url, "-n", "3")
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 3
    assert asyncio.run(postgres_tables(url, "clawlog")) == before
    upgraded = clawlog("verify", "--db", url, "--upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert "chain intact: 200 events checked" in upgraded.stdout
    assert "chain_head" in asyncio.run(postgres_tables(url, "clawlog"))
    assert clawlog("verify", "--db", url).returncode == 0


@pytest.mark.postgres
def test_a_postgresql_database_without_a_log_is_left_alone(postgres_database: str) -> None:
    assert_user_error(clawlog("verify", "--db", postgres_database), "holds no clawlog log yet")
    assert_user_error(clawlog("tail", "--db", postgres_database), "holds no clawlog log yet")
    assert asyncio.run(postgres_tables(postgres_database, "clawlog")) == {}
