// Package sql embeds pgq's goose migrations so the binary and the Go API carry them.
package sql

import "embed"

// Migrations holds sql/migrations/*.sql, the schema and state machine of pgq.
//
//go:embed migrations/*.sql
var Migrations embed.FS
