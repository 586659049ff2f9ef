-- name: SchemaExists :one
-- Whether the pgq schema exists: commands check it before they start, so an unmigrated
-- database is reported once as such instead of as a failing query (or a worker retrying
-- one forever).
SELECT (to_regnamespace('pgq') IS NOT NULL)::boolean AS migrated;
