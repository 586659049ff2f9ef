package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// pgbenchInsert runs pgbench against pgq's bench database with the INSERT of
// bench.insert_row, one transaction per row, with as many clients as the worker of
// drain-sql-insert has SQL connections (the pool less the worker's three), and as many
// transactions in all as that drain has jobs: the rate of plain one-commit-per-row work
// on the same server, the reference of drain-sql-insert.
func (e *pgqEnv) pgbenchInsert(ctx context.Context, o options) runOut {
	var r runOut
	r.rows = []string{"pgbench-insert"}
	if _, err := e.pool.Exec(ctx, "TRUNCATE bench.sql_rows"); err != nil {
		r.err = err
		return r
	}
	clients := max(1, o.poolSize-3)
	script := filepath.Join(os.TempDir(), fmt.Sprintf("pgq-bench-insert-%d.sql", os.Getpid()))
	if err := os.WriteFile(script, []byte("INSERT INTO bench.sql_rows (payload) VALUES ('{}'::jsonb);\n"), 0o600); err != nil {
		r.err = err
		return r
	}
	defer os.Remove(script)
	c := e.cfg.ConnConfig
	cmd := exec.CommandContext(ctx, o.pgbench, "-n", "-M", "prepared", "-f", script,
		"-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)), "-t", strconv.Itoa(max(1, o.sqlJobs/clients)),
		"-h", c.Host, "-p", strconv.Itoa(int(c.Port)), "-U", c.User, c.Database)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		r.err = fmt.Errorf("pgbench: %w: %s", err, out)
		return r
	}
	m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out)
	if m == nil {
		r.err = fmt.Errorf("pgbench: no tps in its output: %s", out)
		return r
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	r.add("pgbench-insert", tps)
	r.line = fmt.Sprintf("pgbench -c %d -t %d: %.0f tps (%s in all)", clients, max(1, o.sqlJobs/clients), tps, took.Round(time.Millisecond))
	return r
}
