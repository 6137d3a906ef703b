"""The PostgreSQL schema of a clawlog log, and the functions that append a batch.

``append_known`` is the fast path: the writer gives each event's version (guessed from
what it saw committed); it locks, inserts with positions from the head and notifies, and
fails whole on a wrong guess (UNIQUE (stream, version) or an idempotency key exists).

``append_batch`` takes a whole group commit in ONE round trip (an autocommit statement):
it locks the events table (so positions become visible in order, as the ``eventsourcing``
library does), checks each request's expected version in request order (a conflict fails
that request only), resolves idempotency keys (a repeat returns the original span and
writes nothing), inserts every accepted event with one statement, and notifies the channel
with the new head. It returns one row per request:

====  ==============================  ===================
kind  meaning                         a, b / detail
====  ==============================  ===================
0     appended                        first position, first version
1     duplicate of an earlier append  first and last position of the original
2     version conflict                b = the stream's actual version
3     key used for another stream     detail = that stream
====  ==============================  ===================
"""

from __future__ import annotations

__all__ = ["APPEND_KINDS", "SCHEMA_VERSION", "append_known_sql", "append_sql", "ddl"]

SCHEMA_VERSION = 1
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
        actor TEXT, idempotency_key TEXT, UNIQUE (stream, version));
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
    {_append_function(schema)}
    {_append_known_function(schema)}
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
    BEGIN
        LOCK TABLE {s}.events IN EXCLUSIVE MODE;
        SELECT coalesce(max(position), 0) INTO head FROM {s}.events;
        INSERT INTO {s}.events (position, stream, version, type, schema_version, payload,
            recorded_at, correlation_id, causation_id, actor, idempotency_key)
        SELECT head + t.n, t.stream, t.version, t.type, t.schema_version, t.payload, at,
               t.corr, t.caus, t.actor, t.key
          FROM unnest(e_stream, e_version, e_type, e_schema, e_payload, e_corr, e_caus,
                      e_actor, e_key)
               WITH ORDINALITY AS t(stream, version, type, schema_version, payload, corr,
                                    caus, actor, key, n);
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
    BEGIN
        LOCK TABLE {s}.events IN EXCLUSIVE MODE;
        SELECT coalesce(max(position), 0) INTO head FROM {s}.events;
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
            INSERT INTO {s}.events (position, stream, version, type, schema_version, payload,
                recorded_at, correlation_id, causation_id, actor, idempotency_key)
            SELECT head + row_number() OVER (ORDER BY t.n), t.stream, t.version, t.type,
                   t.schema_version, t.payload, at, t.corr, t.caus, t.actor, t.key
              FROM unnest(e_stream, e_version, e_type, e_schema, e_payload, e_corr, e_caus,
                          e_actor, e_key, keep)
                   WITH ORDINALITY AS t(stream, version, type, schema_version, payload, corr,
                                        caus, actor, key, keep, n)
             WHERE t.keep;
            PERFORM pg_notify(channel, (head + accepted)::text);
        END IF;
        RETURN QUERY SELECT * FROM unnest(o_kind, o_a, o_b, o_detail);
    END
    $fn$;
    """
