// Command loadsketch measures the load design of docs/design/loads.md before it is
// built: a bulk dispatch that writes one row per call (the payloads as one jsonb[])
// against pgq.dispatch_many, and a reserve that turns a load into reserved job rows
// against pgq.reserve. Five alternating rounds of 100 calls of 1,000 jobs each, from
// Go, each call its own transaction, as the benchmark's bulk scenario and the worker
// send them; it prints the median of each.
//
//	go run ./loadsketch 'postgres://postgres@127.0.0.1:5432/bench_pgq?sslmode=disable'
//
// The database must be a migrated pgq database the benchmark owns (bench_pgq after a
// run of the benchmark): the sketch truncates pgq.jobs, and makes and drops the table
// pgq.probe_loads. The load's statements are sketches: they check what dispatch checks
// of a plain job's payloads (not NULL, an object, the size), but not the rest of a
// real load (ids, marks, slots; see the design).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	ctx := context.Background()
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: loadsketch DATABASE_URL")
		os.Exit(2)
	}
	pool, err := pgxpool.New(ctx, os.Args[1])
	if err != nil {
		panic(err)
	}
	must := func(sql string, args ...any) {
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			panic(fmt.Sprint(sql, ": ", err))
		}
	}
	must(`CREATE TABLE pgq.probe_loads (id bigint PRIMARY KEY DEFAULT nextval('pgq.jobs_id_seq'), queue text NOT NULL,
		job text NOT NULL, priority int NOT NULL, available_at timestamptz NOT NULL, first_uuid uuid NOT NULL,
		n int NOT NULL, taken int NOT NULL DEFAULT 0, payloads jsonb[] NOT NULL)`)
	defer must(`DROP TABLE pgq.probe_loads`)
	must(`CREATE INDEX ON pgq.probe_loads (first_uuid)`)
	must(`SELECT pgq.define_job('noop')`)
	payloads := make([]json.RawMessage, 1000)
	for i := range payloads {
		payloads[i] = json.RawMessage(`{}`)
	}
	// timed sends 100 calls of sql and returns jobs/s, checking that each returned 1,000.
	timed := func(sql string, args ...any) float64 {
		start := time.Now()
		for range 100 {
			rows, err := pool.Query(ctx, sql, args...)
			if err != nil {
				panic(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if rows.Err() != nil || n != 1000 {
				panic(fmt.Sprint(sql, ": ", rows.Err(), ", rows ", n))
			}
		}
		return 100000 / time.Since(start).Seconds()
	}
	dispatch := map[string]string{
		"dispatch_many": `SELECT pgq.dispatch_many(job => 'noop', payloads => $1::jsonb[])`,
		// one row per call, with the checks a plain dispatch makes of its payloads
		"load": `WITH c AS (SELECT pgq._check_dispatch_limits(NULL, 0, $1::jsonb[])
		                    WHERE array_position($1::jsonb[], NULL) IS NULL),
		              u AS MATERIALIZED (SELECT pgq._uuid7s(cardinality($1::jsonb[])) AS ids FROM c),
		              ins AS (INSERT INTO pgq.probe_loads (queue, job, priority, available_at, first_uuid, n, payloads)
		                      SELECT 'default', 'noop', 0, now(), ids[1], cardinality($1::jsonb[]), $1::jsonb[] FROM u)
		         SELECT unnest(ids) FROM u`,
	}
	reserve := map[string]string{
		"reserve": `SELECT uuid FROM pgq.reserve(worker => 'w', queues => '{default}', max => 1000, call => gen_random_uuid())`,
		// the oldest load's next 1,000 jobs inserted as reserved rows, the payloads unnested from one slice
		"expand": `WITH l AS (SELECT * FROM pgq.probe_loads WHERE queue = 'default' AND taken < n
		                      ORDER BY priority DESC, available_at, id LIMIT 1 FOR UPDATE SKIP LOCKED),
		              k AS (SELECT l.*, least(1000, l.n - l.taken) AS want, now() AS t, pgq._slot() AS slot,
		                           pgq._uuid7s(least(1000, l.n - l.taken)) AS tokens FROM l),
		              ins AS (INSERT INTO pgq.jobs (uuid, job, queue, payload, priority, available_at, attempts, reserved_at,
		                                            reserved_until, reserved_by, lease_token, started_at, slot)
		                      SELECT (left(k.first_uuid::text, 24) || lpad(to_hex(('x' || right(k.first_uuid::text, 12))::bit(48)::bigint
		                                                                   + k.taken + p.i - 1), 12, '0'))::uuid,
		                             k.job, k.queue, p.payload, k.priority, k.available_at, 1, k.t, k.t + interval '60 s',
		                             'w', k.tokens[p.i], k.t, k.slot
		                      FROM k, unnest(k.payloads[k.taken + 1 : k.taken + k.want]) WITH ORDINALITY p(payload, i)
		                      RETURNING uuid, job, queue, payload, attempts, handler, timeout, lease_token, reserved_at, reserved_until),
		              upd AS (UPDATE pgq.probe_loads p SET taken = p.taken + k.want FROM k WHERE p.id = k.id)
		         SELECT uuid FROM ins`,
	}
	res := map[string][]float64{}
	for round := range 5 {
		// The dispatch side: 100 calls of 1,000 payloads into an empty table.
		for _, mode := range []string{"dispatch_many", "load"} {
			must(`TRUNCATE pgq.jobs, pgq.probe_loads`)
			must(`CHECKPOINT`)
			res[mode] = append(res[mode], timed(dispatch[mode], payloads))
		}
		// The reserve side: 100 calls of 1,000 from a backlog of 100,000, dispatched untimed.
		for mode, fill := range map[string]string{"reserve": "dispatch_many", "expand": "load"} {
			must(`TRUNCATE pgq.jobs, pgq.probe_loads`)
			for range 100 {
				must(dispatch[fill], payloads)
			}
			must(`VACUUM ANALYZE pgq.jobs`)
			must(`CHECKPOINT`)
			res[mode] = append(res[mode], timed(reserve[mode]))
		}
		fmt.Printf("round %d done\n", round+1)
	}
	must(`TRUNCATE pgq.jobs`)
	report(res, "dispatch_many", "load", "reserve", "expand")
}

// report prints the median and the range of each mode's rates.
func report(res map[string][]float64, modes ...string) {
	for _, m := range modes {
		v := res[m]
		sort.Float64s(v)
		fmt.Printf("%-14s median %8.0f jobs/s [%.0f–%.0f]\n", m, v[len(v)/2], v[0], v[len(v)-1])
	}
}
