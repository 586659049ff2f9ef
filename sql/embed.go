// Package sql embeds pgq's SQL so the binary and the Go API carry it: the goose
// migrations (DDL) and the definitions of every function and view.
package sql

import "embed"

// Files holds migrations/*.sql, applied by goose in version order, and functions/*.sql,
// applied after them in file-name order on every migrate (pgq.Migrate).
//
//go:embed migrations/*.sql functions/*.sql
var Files embed.FS
