// Package sql embeds pgq's SQL so the binary and the Go API carry it: the goose
// migrations (DDL), the definitions of every function and view, and the privileges.
package sql

import "embed"

// Files holds bootstrap.sql, run before the migrations (goose's version table in schema
// pgq); migrations/*.sql, applied by goose in version order; functions/*.sql, applied
// after them in file-name order on every migrate; and privileges.sql, the roles,
// ownership and grants, a template of the role names (pgq.Migrate).
//
//go:embed migrations/*.sql functions/*.sql privileges.sql bootstrap.sql
var Files embed.FS
