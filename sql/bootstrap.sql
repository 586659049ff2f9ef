-- Run by pgq.Migrate before the goose migrations, under the migrate lock. goose keeps
-- its version table in schema pgq, as pgq.goose_version, so the schema exists before the
-- first migration (00007_baseline.sql accepts a schema holding only that table). An
-- installation whose version table is public.pgq_goose_version, where earlier releases
-- kept it, has it moved here with its history: goose then sees every migration it
-- applied.
DO $$
BEGIN
    IF to_regnamespace('pgq') IS NULL THEN
        CREATE SCHEMA pgq;
    END IF;
    IF to_regclass('public.pgq_goose_version') IS NOT NULL AND to_regclass('pgq.goose_version') IS NULL THEN
        ALTER TABLE public.pgq_goose_version SET SCHEMA pgq;
        ALTER TABLE pgq.pgq_goose_version RENAME TO goose_version;
        IF EXISTS (SELECT FROM pg_constraint WHERE conname = 'pgq_goose_version_pkey' AND conrelid = 'pgq.goose_version'::regclass) THEN
            ALTER TABLE pgq.goose_version RENAME CONSTRAINT pgq_goose_version_pkey TO goose_version_pkey;
        END IF;
        IF to_regclass('pgq.pgq_goose_version_id_seq') IS NOT NULL THEN
            ALTER SEQUENCE pgq.pgq_goose_version_id_seq RENAME TO goose_version_id_seq;
        END IF;
    END IF;
END
$$;
