"""The PostgreSQL schema 2 of a clawlog log (before lease epochs), as clawlog created
it: ``events/backends/postgres_sql.py`` as of commit ef2dc08 (before issue 22), frozen
so a test can build a log exactly as that version left it (its tables, its append
functions) and watch the current writer upgrade it in place. Do not edit: it is history.
"""

from __future__ import annotations

__all__ = [
    "APPEND_KINDS",
    "LOST_HEAD_SQLSTATE",
    "PAST_HEAD_SQLSTATE",
    "SCHEMA_VERSION",
    "UPGRADE_BATCH",
    "append_known_sql",
    "append_sql",
    "chain_upgrade_sql",
    "ddl",
]

#: 2: the hash chain (``events.hash``, ``chain_head``); 1: before it.
SCHEMA_VERSION = 2
#: Rows ``chain_upgrade`` hashes per call (per transaction).
UPGRADE_BATCH = 10_000
#: The SQLSTATEs of an append refused because of the hash chain (:mod:`.chain_damage`):
#: rows past the recorded head (DETAIL: ``recorded first last``), or ``chain_head``
#: without its row. A class of their own: no PostgreSQL error uses ``CL``.
PAST_HEAD_SQLSTATE = "CL001"
LOST_HEAD_SQLSTATE = "CL002"
_GENESIS = "decode(repeat('00', 32), 'hex')"
APPEND_KINDS = {"appended": 0, "duplicate": 1, "conflict": 2, "key_reused": 3}


def ddl(schema: str) -> str:
    """Create (or bring up to date) every table and function of a log in ``schema``."""
    return f"""
    CREATE SCHEMA IF NOT EXISTS {schema};
    CREATE TABLE IF NOT EXISTS {schema}.clawlog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS {schema}.events (
        position BIGINT PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL,
        type TEXT NOT NULL, schema_version INTEGER NOT NULL, payload BYTEA NOT NULL,
        recorded_at DOUBLE PRECISION NOT NULL, correlation_id TEXT, causation_id TEXT,
        actor TEXT, idempotency_key TEXT, hash BYTEA, UNIQUE (stream, version));
    ALTER TABLE {schema}.events ADD COLUMN IF NOT EXISTS hash BYTEA;
    CREATE TABLE IF NOT EXISTS {schema}.chain_head (
        id INTEGER PRIMARY KEY CHECK (id = 1), position BIGINT NOT NULL, hash BYTEA NOT NULL,
        complete BOOLEAN NOT NULL);
    INSERT INTO {schema}.chain_head
        SELECT 1, 0, {_GENESIS}, NOT EXISTS (SELECT 1 FROM {schema}.events)
         WHERE NOT EXISTS (SELECT 1 FROM {schema}.events)
            OR coalesce((SELECT m.value::int FROM {schema}.clawlog_meta m
                          WHERE m.key = 'schema_version'), 1) < {SCHEMA_VERSION}
        ON CONFLICT (id) DO NOTHING;
    CREATE TABLE IF NOT EXISTS {schema}.idempotency_keys (
        key TEXT PRIMARY KEY, stream TEXT NOT NULL, first_position BIGINT NOT NULL,
        last_position BIGINT NOT NULL);
    CREATE TABLE IF NOT EXISTS {schema}.snapshots (
        stream TEXT PRIMARY KEY, version INTEGER NOT NULL, state_type TEXT NOT NULL,
        payload BYTEA NOT NULL, recorded_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE IF NOT EXISTS {schema}.stream_leases (
        stream TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL);
    INSERT INTO {schema}.clawlog_meta VALUES ('schema_version', '{SCHEMA_VERSION}')
        ON CONFLICT (key) DO NOTHING;
    {_chain_functions(schema)}
    {_append_function(schema)}
    {_append_known_function(schema)}
    """


def chain_upgrade_sql(schema: str) -> str:
    """Hash the next ``$1`` rows of a log from before the chain; True once all are."""
    return f"SELECT {schema}.chain_upgrade($1::int)"


def _chain_functions(s: str) -> str:
    # chain_link is the encoding of clawlog.events.chain in SQL: int8send and float8send
    # are big-endian, int4send of a length below 2^31 equals its u32.
    return f"""
    CREATE OR REPLACE FUNCTION {s}.chain_field(value text) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT int4send(octet_length(convert_to(value, 'UTF8'))) || convert_to(value, 'UTF8')
    $fn$;
    CREATE OR REPLACE FUNCTION {s}.chain_option(value text) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT CASE WHEN value IS NULL THEN decode('00', 'hex')
                    ELSE decode('01', 'hex') || {s}.chain_field(value) END
    $fn$;
    CREATE OR REPLACE FUNCTION {s}.chain_link(
        prev bytea, pos bigint, stream text, version int, type text, schema_version int,
        payload bytea, at float8, corr text, caus text, actor text, key text)
    RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT sha256(prev || int8send(pos) || int8send(version::bigint)
                      || int8send(schema_version::bigint) || float8send(at)
                      || int4send(octet_length(payload)) || payload
                      || {s}.chain_field(type) || {s}.chain_field(stream)
                      || {s}.chain_option(corr) || {s}.chain_option(caus)
                      || {s}.chain_option(actor) || {s}.chain_option(key))
    $fn$;
    CREATE OR REPLACE FUNCTION {s}.chain_upgrade(batch int) RETURNS boolean
    LANGUAGE plpgsql AS $fn$
    DECLARE
        c_pos bigint;
        prev bytea;
        done boolean;
        r record;
        n int := 0;
    BEGIN
        LOCK TABLE {s}.events IN EXCLUSIVE MODE;
        SELECT h.position, h.hash, h.complete INTO c_pos, prev, done
          FROM {s}.chain_head h WHERE h.id = 1;
        IF NOT FOUND THEN  -- a lost head: nothing to hash; chain_start refuses appends
            RETURN true;
        END IF;
        IF NOT done THEN
            FOR r IN SELECT * FROM {s}.events e WHERE e.position > c_pos
                     ORDER BY e.position LIMIT batch LOOP
                IF r.hash IS NOT NULL THEN  -- hashed already: kept, never re-hashed
                    prev := r.hash;
                ELSE
                    prev := {s}.chain_link(prev, r.position, r.stream, r.version, r.type,
                        r.schema_version, r.payload, r.recorded_at, r.correlation_id,
                        r.causation_id, r.actor, r.idempotency_key);
                    UPDATE {s}.events SET hash = prev WHERE position = r.position;
                END IF;
                c_pos := r.position;
                n := n + 1;
            END LOOP;
            done := batch IS NULL OR n < batch;
            UPDATE {s}.chain_head SET position = c_pos, hash = prev, complete = done
             WHERE id = 1;
        END IF;
        IF done THEN
            UPDATE {s}.clawlog_meta SET value = '{SCHEMA_VERSION}'
             WHERE key = 'schema_version' AND value::int < {SCHEMA_VERSION};
        END IF;
        RETURN done;
    END
    $fn$;
    CREATE OR REPLACE FUNCTION {s}.chain_start(INOUT head bigint, OUT prev bytea)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        c_pos bigint;
        done boolean;
        first bigint;
    BEGIN
        SELECT h.position, h.hash, h.complete INTO c_pos, prev, done
          FROM {s}.chain_head h WHERE h.id = 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = '{LOST_HEAD_SQLSTATE}',
                MESSAGE = 'the chain_head table of {s} has lost its row: nothing is appended';
        END IF;
        IF NOT done THEN
            PERFORM {s}.chain_upgrade(NULL);
            SELECT h.position, h.hash INTO c_pos, prev FROM {s}.chain_head h WHERE h.id = 1;
        END IF;
        IF c_pos < head THEN
            first := (SELECT min(e.position) FROM {s}.events e WHERE e.position > c_pos);
            RAISE EXCEPTION USING ERRCODE = '{PAST_HEAD_SQLSTATE}',
                MESSAGE = format('rows %s-%s of {s}.events lie past the recorded head of its '
                                 'hash chain (%s): nothing is appended', first, head, c_pos),
                DETAIL = format('%s %s %s', c_pos, first, head);
        END IF;
        head := c_pos;
    END
    $fn$;
    """


def append_sql(schema: str) -> str:
    """The statement the writer runs per batch (asyncpg prepares it once per connection)."""
    return (
        f"SELECT kind, a, b, detail FROM {schema}.append_batch("
        "$1::text[], $2::int[], $3::int[], $4::text[], $5::text[], $6::int[], $7::bytea[], "
        "$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::float8, $14::text)"
    )


def append_known_sql(schema: str) -> str:
    """The fast path: versions (and key spans, as offsets from the head) computed by the
    writer from what it knows; returns the head before the insert."""
    return (
        f"SELECT {schema}.append_known($1::text[], $2::int[], $3::text[], $4::int[], "
        "$5::bytea[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], "
        "$11::text[], $12::int[], $13::int[], $14::float8, $15::text)"
    )


def _append_known_function(s: str) -> str:
    # A stale guess (another process wrote a stream, a key exists) breaks UNIQUE (stream,
    # version) or the key's primary key: the statement fails whole and the writer sends
    # the batch again through append_batch, which checks everything.
    return f"""
    CREATE OR REPLACE FUNCTION {s}.append_known(
        e_stream text[], e_version int[], e_type text[], e_schema int[], e_payload bytea[],
        e_corr text[], e_caus text[], e_actor text[], e_key text[],
        k_key text[], k_stream text[], k_first int[], k_last int[], at float8, channel text)
    RETURNS bigint
    LANGUAGE plpgsql AS $fn$
    DECLARE
        head bigint;
        prev bytea;
        e_hash bytea[] := '{{}}';
    BEGIN
        LOCK TABLE {s}.events IN EXCLUSIVE MODE;
        SELECT coalesce(max(position), 0) INTO head FROM {s}.events;
        SELECT c.head, c.prev INTO head, prev FROM {s}.chain_start(head) c;
        FOR i IN 1 .. cardinality(e_stream) LOOP
            prev := {s}.chain_link(prev, head + i, e_stream[i], e_version[i], e_type[i],
                e_schema[i], e_payload[i], at, e_corr[i], e_caus[i], e_actor[i], e_key[i]);
            e_hash[i] := prev;
        END LOOP;
        INSERT INTO {s}.events (position, stream, version, type, schema_version, payload,
            recorded_at, correlation_id, causation_id, actor, idempotency_key, hash)
        SELECT head + t.n, t.stream, t.version, t.type, t.schema_version, t.payload, at,
               t.corr, t.caus, t.actor, t.key, t.hash
          FROM unnest(e_stream, e_version, e_type, e_schema, e_payload, e_corr, e_caus,
                      e_actor, e_key, e_hash)
               WITH ORDINALITY AS t(stream, version, type, schema_version, payload, corr,
                                    caus, actor, key, hash, n);
        UPDATE {s}.chain_head SET position = head + cardinality(e_stream), hash = prev
         WHERE id = 1;
        IF cardinality(k_key) > 0 THEN
            INSERT INTO {s}.idempotency_keys
            SELECT t.key, t.stream, head + t.first, head + t.last
              FROM unnest(k_key, k_stream, k_first, k_last) AS t(key, stream, first, last);
        END IF;
        PERFORM pg_notify(channel, (head + cardinality(e_stream))::text);
        RETURN head;
    END
    $fn$;
    """


def _append_function(s: str) -> str:
    # r_*: one entry per request; e_*: one per event, requests' events in request order.
    return f"""
    CREATE OR REPLACE FUNCTION {s}.append_batch(
        r_stream text[], r_expected int[], r_count int[], r_key text[],
        e_type text[], e_schema int[], e_payload bytea[], e_stream text[],
        e_corr text[], e_caus text[], e_actor text[], e_key text[], at float8, channel text)
    RETURNS TABLE (kind int, a bigint, b bigint, detail text)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        head bigint;
        streams text[];
        versions int[];
        keep boolean[] := array_fill(false, ARRAY[cardinality(e_type)]);
        e_version int[] := array_fill(0, ARRAY[cardinality(e_type)]);
        o_kind int[] := '{{}}';
        o_a bigint[] := '{{}}';
        o_b bigint[] := '{{}}';
        o_detail text[] := '{{}}';
        accepted bigint := 0;
        src int := 0;
        i int;
        j int;
        m int;
        cur int;
        k_stream text;
        k_first bigint;
        k_last bigint;
        prev bytea;
        e_hash bytea[] := array_fill(NULL::bytea, ARRAY[cardinality(e_type)]);
    BEGIN
        LOCK TABLE {s}.events IN EXCLUSIVE MODE;
        SELECT coalesce(max(position), 0) INTO head FROM {s}.events;
        SELECT c.head, c.prev INTO head, prev FROM {s}.chain_start(head) c;
        SELECT array_agg(d.stream),
               array_agg(coalesce((SELECT e.version FROM {s}.events e WHERE e.stream = d.stream
                                   ORDER BY e.version DESC LIMIT 1), 0))
          INTO streams, versions
          FROM (SELECT DISTINCT unnest(r_stream) AS stream) d;
        FOR i IN 1 .. cardinality(r_stream) LOOP
            IF r_key[i] IS NOT NULL THEN
                SELECT k.stream, k.first_position, k.last_position
                  INTO k_stream, k_first, k_last
                  FROM {s}.idempotency_keys k WHERE k.key = r_key[i];
                IF FOUND THEN
                    IF k_stream <> r_stream[i] THEN
                        o_kind := o_kind || 3; o_a := o_a || 0::bigint;
                        o_b := o_b || 0::bigint; o_detail := o_detail || k_stream;
                    ELSE
                        o_kind := o_kind || 1; o_a := o_a || k_first;
                        o_b := o_b || k_last; o_detail := o_detail || NULL::text;
                    END IF;
                    src := src + r_count[i];
                    CONTINUE;
                END IF;
            END IF;
            j := array_position(streams, r_stream[i]);
            cur := versions[j];
            IF r_expected[i] <> -1 AND r_expected[i] <> cur THEN
                o_kind := o_kind || 2; o_a := o_a || 0::bigint;
                o_b := o_b || cur::bigint; o_detail := o_detail || NULL::text;
                src := src + r_count[i];
                CONTINUE;
            END IF;
            o_kind := o_kind || 0; o_a := o_a || (head + accepted + 1);
            o_b := o_b || (cur + 1)::bigint; o_detail := o_detail || NULL::text;
            FOR m IN 1 .. r_count[i] LOOP
                keep[src + m] := true;
                e_version[src + m] := cur + m;
            END LOOP;
            IF r_key[i] IS NOT NULL THEN
                INSERT INTO {s}.idempotency_keys
                    VALUES (r_key[i], r_stream[i], head + accepted + 1,
                            head + accepted + r_count[i]);
            END IF;
            versions[j] := cur + r_count[i];
            accepted := accepted + r_count[i];
            src := src + r_count[i];
        END LOOP;
        IF accepted > 0 THEN
            m := 0;
            FOR i IN 1 .. cardinality(e_type) LOOP
                IF keep[i] THEN
                    m := m + 1;
                    prev := {s}.chain_link(prev, head + m, e_stream[i], e_version[i],
                        e_type[i], e_schema[i], e_payload[i], at, e_corr[i], e_caus[i],
                        e_actor[i], e_key[i]);
                    e_hash[i] := prev;
                END IF;
            END LOOP;
            INSERT INTO {s}.events (position, stream, version, type, schema_version, payload,
                recorded_at, correlation_id, causation_id, actor, idempotency_key, hash)
            SELECT head + row_number() OVER (ORDER BY t.n), t.stream, t.version, t.type,
                   t.schema_version, t.payload, at, t.corr, t.caus, t.actor, t.key, t.hash
              FROM unnest(e_stream, e_version, e_type, e_schema, e_payload, e_corr, e_caus,
                          e_actor, e_key, keep, e_hash)
                   WITH ORDINALITY AS t(stream, version, type, schema_version, payload, corr,
                                        caus, actor, key, keep, hash, n)
             WHERE t.keep;
            UPDATE {s}.chain_head SET position = head + accepted, hash = prev WHERE id = 1;
            PERFORM pg_notify(channel, (head + accepted)::text);
        END IF;
        RETURN QUERY SELECT * FROM unnest(o_kind, o_a, o_b, o_detail);
    END
    $fn$;
    """
