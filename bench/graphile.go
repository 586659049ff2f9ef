package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// graphileEnv is graphile-worker's database and the Node project that drives it
// (graphile/drain.js). skip says why graphile-worker does not run, if it does not.
type graphileEnv struct {
	skip        string
	dir         string
	node        nodePath
	url         string
	pool        *pgxpool.Pool
	version     string
	nodeVersion string
}

// setupGraphile finds Node and the project, installs its locked dependencies when
// node_modules is missing (npm ci), creates the database and migrates it. Any failure
// becomes a skip reason, not an error.
func setupGraphile(ctx context.Context, o options) *graphileEnv {
	g := &graphileEnv{}
	dir := o.graphileDir
	if dir == "" {
		for _, d := range []string{"graphile", filepath.Join("bench", "graphile")} {
			if _, err := os.Stat(filepath.Join(d, "drain.js")); err == nil {
				dir = d
				break
			}
		}
	}
	if dir == "" {
		g.skip = "graphile/drain.js not found; run from bench/ or set -graphile-dir"
		return g
	}
	if _, err := os.Stat(filepath.Join(dir, "drain.js")); err != nil {
		g.skip = "no drain.js in -graphile-dir " + dir
		return g
	}
	g.dir = dir
	node, err := exec.LookPath("node")
	if err != nil {
		g.skip = "node not found in PATH"
		return g
	}
	g.node = nodePath(node)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "graphile-worker")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			g.skip = "node_modules missing and npm not found in PATH"
			return g
		}
		fmt.Printf("graphile-worker: running npm ci in %s\n", dir)
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			g.skip = "npm ci failed: " + err.Error()
			return g
		}
	}
	cfg, err := createDatabase(ctx, o, o.graphileDB)
	if err != nil {
		g.skip = err.Error()
		return g
	}
	g.url, err = withDatabase(o.adminURL, o.graphileDB)
	if err != nil {
		g.skip = err.Error()
		return g
	}
	var out struct {
		Version string `json:"version"`
		Node    string `json:"node"`
	}
	if _, err := g.node.run(ctx, g, time.Minute, &out, "setup", "--url", g.url); err != nil {
		g.skip = "graphile-worker migrations failed: " + err.Error()
		return g
	}
	g.version, g.nodeVersion = out.Version, out.Node
	if g.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		g.skip = err.Error()
		return g
	}
	fmt.Printf("graphile-worker %s on Node %s (%s)\n", g.version, g.nodeVersion, dir)
	return g
}

func (g *graphileEnv) close(ctx context.Context, o options) {
	if g.pool != nil {
		g.pool.Close()
	}
	if !o.keepDB {
		if err := dropDatabase(ctx, o, o.graphileDB); err != nil {
			fmt.Fprintln(os.Stderr, "bench: drop", o.graphileDB+":", err)
		}
	}
}

// withDatabase returns the connection URL u with its database replaced by db.
func withDatabase(u, db string) (string, error) {
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return "", err
	}
	c := cfg.ConnConfig
	host := c.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	user := c.User
	if c.Password != "" {
		user += ":" + c.Password
	}
	s := fmt.Sprintf("postgres://%s@%s:%d/%s", user, host, c.Port, db)
	if c.TLSConfig == nil {
		s += "?sslmode=disable"
	}
	return s, nil
}

type nodePath string

// run runs drain.js with args, decodes the last stdout line into out and returns the
// child's CPU time.
func (n nodePath) run(ctx context.Context, g *graphileEnv, timeout time.Duration, out any, args ...string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, string(n), append([]string{"drain.js"}, args...)...)
	cmd.Dir = g.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := lines[len(lines)-1]
	if jerr := json.Unmarshal([]byte(last), out); jerr != nil && err == nil {
		err = fmt.Errorf("decode %q: %w", last, jerr)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		return cpu, fmt.Errorf("node drain.js %s: %w: %s", args[0], err, msg)
	}
	return cpu, nil
}

// drain inserts a backlog of o.jobs no-op jobs with addJobs and times runOnce working
// it off, in a Node process.
func (g *graphileEnv) drain(ctx context.Context, o options) runOut {
	d := drainResult{jobs: o.jobs, client: "node"}
	fail := func(err error) runOut {
		r := d.out("drain", "drain-insert")
		r.figs, r.err = nil, err
		return r
	}
	if _, err := g.pool.Exec(ctx, "TRUNCATE graphile_worker._private_jobs"); err != nil {
		return fail(fmt.Errorf("truncate: %w", err))
	}
	var ins struct {
		InsertMS float64 `json:"insert_ms"`
	}
	if _, err := g.node.run(ctx, g, o.timeout, &ins, "insert", "--url", g.url,
		"--jobs", strconv.Itoa(o.jobs), "--batch", strconv.Itoa(o.batch)); err != nil {
		return fail(err)
	}
	d.insert = time.Duration(ins.InsertMS * float64(time.Millisecond))
	var err error
	if d.note, err = prepare(ctx, o, g.pool, "graphile_worker._private_jobs"); err != nil {
		return fail(err)
	}

	var res struct {
		DrainMS         float64  `json:"drain_ms"`
		CPUMS           float64  `json:"cpu_ms"`
		Calls           int      `json:"calls"`
		Distinct        int      `json:"distinct"`
		Duplicates      int      `json:"duplicates"`
		NotFirstAttempt int      `json:"not_first_attempt"`
		Warnings        int      `json:"warnings"`
		FirstWarnings   []string `json:"first_warnings"`
	}
	m, err := startTrackingMeter(ctx, g.pool)
	if err != nil {
		return fail(err)
	}
	smp := startSampler(ctx, g.pool, m.start, o.jobs, "SELECT 0")
	childCPU, runErr := g.node.run(ctx, g, o.timeout, &res, "drain", "--url", g.url,
		"--jobs", strconv.Itoa(o.jobs), "--concurrency", strconv.Itoa(o.graphileConc),
		"--pool", strconv.Itoa(o.poolSize), "--local-queue", strconv.Itoa(o.graphileLocalQueue),
		"--batch-delay", strconv.Itoa(o.graphileBatchDelay))
	// Cores are measured over the whole Node process (startup included); the drain time
	// is runOnce's, measured inside it.
	d.u, err = m.stopWith(ctx, childCPU)
	smp.stop()
	d.drain = time.Duration(res.DrainMS * float64(time.Millisecond))
	d.warnings = res.Warnings
	d.othersMax, d.othersPct = smp.others()
	if err != nil {
		return fail(err)
	}
	if runErr != nil {
		return fail(runErr)
	}
	if d.drain <= 0 {
		return fail(errors.New("drain.js reported no drain time"))
	}
	if res.Calls != o.jobs || res.Distinct != o.jobs || res.Duplicates != 0 || res.NotFirstAttempt != 0 {
		return fail(fmt.Errorf("verify: want %d jobs run once each on attempt 1, got %d handler calls for %d distinct jobs, %d duplicates, %d not on attempt 1",
			o.jobs, res.Calls, res.Distinct, res.Duplicates, res.NotFirstAttempt))
	}
	var left, lockedOrFailed int
	if err := g.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE locked_at IS NOT NULL OR last_error IS NOT NULL)
		FROM graphile_worker._private_jobs`).Scan(&left, &lockedOrFailed); err != nil {
		return fail(fmt.Errorf("verify: %w", err))
	}
	if left != 0 {
		return fail(fmt.Errorf("verify: %d jobs left in graphile_worker._private_jobs (%d locked or failed) after the drain", left, lockedOrFailed))
	}
	out := d.out("drain", "drain-insert")
	if len(res.FirstWarnings) > 0 {
		out.line += " (first: " + strings.Join(res.FirstWarnings, " | ") + ")"
	}
	out.line += fmt.Sprintf(" | node CPU in runOnce %.2f cores", res.CPUMS/res.DrainMS)
	return out
}
