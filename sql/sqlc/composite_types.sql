-- Read by sqlc only, never applied to a database. sqlc does not read composite types
-- (CREATE TYPE ... AS (...)): a function returning SETOF one would come out untyped.
-- So each composite type a query reads is restated here as a table of the same name and
-- columns, which sqlc does read. NOT NULL marks columns that are never NULL in what the
-- functions return, so the Go fields are values. TestSQLCTypesMatchCompositeTypes
-- (sql/layout_test.go) fails when a type and its stand-in here differ.

CREATE TABLE pgq.reservation (
    uuid              uuid NOT NULL,
    job               text NOT NULL,
    queue             text NOT NULL,
    payload           jsonb NOT NULL,
    priority          int NOT NULL,
    attempts          int NOT NULL,
    tries             int,
    handler           text,
    timeout           int,
    lease_token       uuid NOT NULL,
    reserved_at       timestamptz NOT NULL,
    reserved_until    timestamptz NOT NULL,
    overlap_keys      text[],
    dispatched_at     timestamptz NOT NULL,
    pickup            pgq.pickup,
    pickup_note       text,
    pickup_middleware text,
    overlap_expire_after int,
    traceparent       text,
    tracestate        text
);

CREATE TABLE pgq.check_finding (
    object text NOT NULL,
    rule   text NOT NULL,
    detail text NOT NULL,
    fix    text NOT NULL,
    queue  text
);
