package sql_test

// Loads (S85): the jobs of a bulk dispatch kept as chunks of pgq.loads until a reserve
// takes them. Each test checks that a load job behaves as the row it stands for would.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// dispatchMany dispatches n payloads {"n": from..from+n-1} with extra arguments and
// returns their uuids in payload order.
func dispatchMany(t *testing.T, db *pgqtest.DB, from, n int, extra string) []uuid.UUID {
	t.Helper()
	return pgqtest.Scalar[[]uuid.UUID](t, db, fmt.Sprintf(
		`SELECT array_agg(u) FROM pgq.dispatch_many('a', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(%d, %d) i)%s) u`,
		from, from+n-1, extra))
}

// reserveVia reserves up to max jobs of queue default on one connection (its marks are
// the connection's), returning the uuids of the jobs to run in the order given.
func reserveVia(t *testing.T, c *pgx.Conn, max int, at time.Time) []reserved {
	t.Helper()
	rows, err := c.Query(ctx,
		`SELECT uuid, lease_token, attempts, reserved_until FROM pgq.reserve('w', '{default}', $1, 1, $2) WHERE pickup IS NULL`, max, at)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (reserved, error) {
		var j reserved
		return j, r.Scan(&j.UUID, &j.Token, &j.Attempts, &j.Until)
	})
	require.NoError(t, err)
	return out
}

func uuidsOf(js []reserved) []uuid.UUID {
	out := make([]uuid.UUID, len(js))
	for i, j := range js {
		out[i] = j.UUID
	}
	return out
}

// A dispatch of pgq.load_min payloads or more of plain jobs is written as chunks of up
// to 1,024 jobs, with the uuids it returns; the views list and count its jobs as
// waiting ones, in payload order, with their payloads and settings (S1). Fewer
// payloads, a delay, a unique key or middleware keep the row path; pgq.load_min 0
// turns loads off, and it is 1,000 when not set.
func TestS85S1BulkDispatchIsKeptAsLoads(t *testing.T) {
	db := pgqtest.NewWithLoads(t, 100)
	got := dispatchMany(t, db, 1, 2500, `, tries => 4, priority => 2`)
	require.Len(t, got, 2500)
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`), "no row per job")
	require.Equal(t, []int{1024, 1024, 452}, pgqtest.Scalar[[]int](t, db, `SELECT array_agg(n ORDER BY first_id) FROM pgq.loads`))

	listed := pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(uuid ORDER BY available_at, id) FROM pgq.ready`)
	require.Equal(t, got, listed, "pgq.ready lists the jobs with the uuids returned, in dispatch order")
	require.Equal(t, 2500, pgqtest.Scalar[int](t, db, `SELECT count(DISTINCT id)::int FROM pgq.ready`), "each job has its own id")
	require.Equal(t, 2500, pgqtest.Scalar[int](t, db,
		`SELECT count(*)::int FROM pgq.ready r WHERE (r.payload->>'n')::int = (SELECT count(*) FROM pgq.ready x WHERE x.id <= r.id)`),
		"the i-th job by id has the i-th payload")
	require.Equal(t, "ready 2500 running 0", pgqtest.Scalar[string](t, db,
		`SELECT format('ready %s running %s', ready, running) FROM pgq.queue_stats WHERE queue = 'default'`))
	require.Equal(t, int64(2500), pgqtest.Scalar[int64](t, db, `SELECT ready FROM pgq.queue_overview WHERE queue = 'default'`))
	require.Equal(t, "ready a 4 2 0", pgqtest.Scalar[string](t, db,
		`SELECT format('%s %s %s %s %s', state, job, tries, priority, attempts) FROM pgq.job_settings WHERE uuid = $1`, got[1700]))

	for _, extra := range []string{``, `, delay => '1 minute'`, `, unique_key => 'k'`,
		`, middleware => '[{"without_overlapping": {"key": "x"}}]'`} {
		n := 150
		if extra == `` {
			n = 99
		}
		before := pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`)
		dispatchMany(t, db, 1, n, extra)
		after := pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs`)
		require.Greater(t, after, before, "rows for %q", extra)
	}
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads`), "no more chunks")

	off := pgqtest.NewWithLoads(t, 0)
	dispatchMany(t, off, 1, 2000, ``)
	require.Equal(t, 0, pgqtest.Scalar[int](t, off, `SELECT count(*)::int FROM pgq.loads`), "pgq.load_min 0: never")
	require.Equal(t, 2000, pgqtest.Scalar[int](t, off, `SELECT count(*)::int FROM pgq.jobs`))
	if _, set := os.LookupEnv("PGQ_TEST_LOAD_MIN"); !set {
		def := pgqtest.New(t)
		require.Equal(t, 1000, pgqtest.Scalar[int](t, def, `SELECT pgq._load_min()`), "1,000 when not set")
	}
	c, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	_, err = c.Exec(ctx, `SET pgq.load_min = 'many'`)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `SELECT pgq.dispatch_many('a', ARRAY['{}'::jsonb])`)
	require.Equal(t, "22023", pgCode(err), "a bad setting is named")
	_, err = c.Exec(ctx, `RESET pgq.load_min`)
	require.NoError(t, err)
}

// Rows and chunks are reserved in one order (S30): priority, then available_at, then
// id, whatever mix of rows and loads a queue holds, through a session's first reserve
// and the ones after it (its marks, S77), in reserves of any size; each job once, with
// its attempt counted and a lease token of its own (S5, S14); and the worker protocol
// completes them (S15).
func TestS85S5S14S15S30S77RowsAndLoadsComeInQueueOrder(t *testing.T) {
	db := pgqtest.NewWithLoads(t, 100)
	var want []uuid.UUID
	// Dispatched one after the other: a row, a load, a row, a load of priority 1, a
	// row of priority 1, another load.
	a := dispatch(t, db, `'a', '{"n": 0}'`)
	l1 := dispatchMany(t, db, 1, 300, ``)
	b := dispatch(t, db, `'a', '{"n": 301}'`)
	l2 := dispatchMany(t, db, 302, 1500, `, priority => 1`)
	c := dispatch(t, db, `'a', '{"n": 9999}', priority => 1`)
	l3 := dispatchMany(t, db, 1802, 200, ``)
	want = append(want, l2...)
	want = append(want, c, a)
	want = append(want, l1...)
	want = append(want, b)
	want = append(want, l3...)

	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	at := clock()
	var got []reserved
	for _, max := range []int{1, 7, 700, 1000, 2, 333, 1000} {
		got = append(got, reserveVia(t, conn, max, at)...)
	}
	require.Equal(t, want, uuidsOf(got))
	require.Empty(t, reserveVia(t, conn, 100, at))
	require.Equal(t, 0, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads`), "every chunk taken")
	tokens := map[uuid.UUID]bool{}
	for _, j := range got {
		require.Equal(t, 1, j.Attempts, "the attempt is counted (S5)")
		require.WithinDuration(t, at.Add(90*time.Second), j.Until, time.Second, "the queue's lease (S14)")
		tokens[j.Token] = true
	}
	require.Len(t, tokens, len(got), "one lease token each")
	for _, j := range got[:50] {
		require.True(t, complete(t, db, j))
	}
	require.False(t, complete(t, db, reserved{UUID: got[60].UUID, Token: got[50].Token}), "another job's token completes nothing (S15)")
	require.Equal(t, len(got)-50, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.running`))

	// A load dispatched later, behind rows that a session's marks already passed.
	d := dispatch(t, db, `'a', '{}'`)
	l4 := dispatchMany(t, db, 1, 150, ``)
	e := dispatch(t, db, `'a', '{}'`)
	got = reserveVia(t, conn, 1000, clock()) // at may be past by now on a busy machine: these are later
	require.Equal(t, append(append([]uuid.UUID{d}, l4...), e), uuidsOf(got))
}

// Concurrent reserves take every job of a load once: a chunk one reserve holds is
// skipped by the others, as a locked row is (FOR UPDATE SKIP LOCKED).
func TestS85ConcurrentReservesTakeEachLoadJobOnce(t *testing.T) {
	db := pgqtest.NewWithLoads(t, 100)
	var all []uuid.UUID
	for i := range 6 {
		all = append(all, dispatchMany(t, db, i*2000, 2000, ``)...)
	}
	at := clock()
	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, db.WorkerURL)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			for {
				var got []uuid.UUID
				rows, err := conn.Query(ctx, `SELECT uuid FROM pgq.reserve($1, '{default}', $2, 1, $3)`, fmt.Sprint("w", w), 300+w*211, at)
				if err == nil {
					got, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
				}
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, u := range got {
					seen[u]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, len(all))
	for _, u := range all {
		require.Equal(t, 1, seen[u], "job %s", u)
	}
}

// pgq.cancel and pgq.run_now act on one job of a load as on a row (S20, S40): the job
// leaves its chunk, the others keep their place, and a job a reserve took already is
// the row it became (a running job: cancelling). A load job whose deadline passed
// before any reserve reached it fails at pickup, not run (S12).
func TestS85S12S20S40OneJobOfALoad(t *testing.T) {
	db := pgqtest.NewWithLoads(t, 100)
	jobs := dispatchMany(t, db, 1, 2000, ``)
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, jobs[1500]))
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, jobs[0]))
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, jobs[1999]))
	require.Nil(t, pgqtest.Scalar[*string](t, db, `SELECT pgq.cancel($1)`, jobs[1500]), "cancelled already")
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.run_now($1)`, jobs[700]))
	require.Equal(t, []string{"cancelled"}, outcomes(t, db, jobs[1500]))
	require.Equal(t, 1997, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.ready`))

	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	at := clock()
	first := reserveVia(t, conn, 600, at)
	require.Equal(t, jobs[1:601], uuidsOf(first))
	require.Equal(t, "cancelling", pgqtest.Scalar[string](t, db, `SELECT pgq.cancel($1)`, jobs[10]), "a reserved job is a running row")
	rest := uuidsOf(reserveVia(t, conn, 2000, at))
	want := append(append([]uuid.UUID{}, jobs[601:1500]...), jobs[1501:1999]...)
	require.Equal(t, want, rest, "the cancelled jobs are gone, the others in order, the one run_now kept its place")

	// A deadline passed before the reserve came.
	late := dispatchMany(t, db, 1, 300, `, retry_until => now() + interval '5 seconds'`)
	rows, err := conn.Query(ctx, `SELECT uuid, pickup::text FROM pgq.reserve('w', '{default}', 1000, 1, now() + interval '30 seconds')`)
	require.NoError(t, err)
	type picked struct {
		UUID   uuid.UUID
		Pickup *string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[picked])
	require.NoError(t, err)
	require.Len(t, got, 300)
	for i, p := range got {
		require.Equal(t, late[i], p.UUID)
		require.NotNil(t, p.Pickup)
		require.Equal(t, "exhausted", *p.Pickup, "S12")
	}
	require.Equal(t, 300, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
}

// The chunks live in the slots of pgq.jobs (S80): a draining slot is not truncated
// while a chunk of it holds a job, and is truncated, chunks and all, once none does;
// the jobs a reserve took from it are rows of the current slot.
func TestS85S80LoadsAreTruncatedWithTheirSlot(t *testing.T) {
	db := pgqtest.NewWithLoads(t, 100)
	dispatchMany(t, db, 1, 3000, ``)
	require.Len(t, rotate(t, db, 65536), 1, "slot 0 holds the chunks: new jobs go to slot 1")
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads WHERE slot = 0`))
	for _, d := range rotate(t, db, 1<<30) {
		require.NotContains(t, d, "truncated", "the chunks' jobs wait")
	}
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	got := reserveVia(t, conn, 3000, clock())
	require.Len(t, got, 3000)
	require.Equal(t, 3000, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE slot = 1`), "rows of the current slot")
	require.Greater(t, pgqtest.Scalar[int64](t, db, `SELECT pg_relation_size('pgq.loads_0')`), int64(0), "the chunks' dead versions")
	require.Contains(t, strings.Join(rotate(t, db, 1<<30), "\n"), "slot 0 truncated", "no job is left in slot 0")
	require.Equal(t, int64(0), pgqtest.Scalar[int64](t, db, `SELECT pg_relation_size('pgq.loads_0')`), "its chunks went with it")
	require.Equal(t, 3000, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.running`))
}

// With no slot empty, the chunks of a draining slot move to the current one with its
// waiting rows (S80): as they were, so their jobs keep their uuids and their order.
func TestS80S85ChunksMoveWhenNoSlotIsEmpty(t *testing.T) {
	db := pgqtest.NewWithLoads(t, 100)
	db.Exec(t, `SELECT pgq.define_queue('held', paused => true)`)
	held := dispatchMany(t, db, 1, 150, `, queue => 'held'`)
	for range 3 {
		dispatch(t, db, `'later', '{}', delay => '1 hour'`) // keeps each slot from being truncated
		rotate(t, db, 65536)
	}
	require.Equal(t, []string{"draining", "draining", "draining", "current"}, slotStates(t, db))
	dispatch(t, db, `'now', '{}'`) // fills slot 3 past 64 kB
	require.Contains(t, strings.Join(rotate(t, db, 65536), "\n"), "151 waiting jobs moved from slot 0 to slot 3")
	require.Equal(t, []int16{3}, pgqtest.Scalar[[]int16](t, db, `SELECT array_agg(slot) FROM pgq.loads`))
	require.Contains(t, strings.Join(rotate(t, db, 65536), "\n"), "slot 0 truncated")

	db.Exec(t, `SELECT pgq.resume_queue('held')`)
	got := append(reserve(t, db, "w", clock(), "held"), reserve(t, db, "w", clock(), "held")...)
	require.Equal(t, held, uuidsOf(got))
}

// pgq.ready, read in the queue's order (S30) as queue, priority DESC, available_at,
// sort_id, id, lists the jobs of loads where a reserve takes them, and reads the
// chunks through loads_queue_idx: a page expands only the chunks it shows, not the
// sixty there are. pgq.live_job(uuid) expands one chunk at most. Both hold after a
// reserve took the front of a chunk and a job left the middle of another as a row
// (pgq.run_now).
func TestS85S30ReadyReadsLoadsInQueueOrder(t *testing.T) {
	db := pgqtest.NewWithLoads(t, 100)
	a := dispatch(t, db, `'a', '{"n": 0}'`)
	l1 := dispatchMany(t, db, 1, 60*1024, ``)
	b := dispatch(t, db, `'a', '{"n": -1}'`)
	l2 := dispatchMany(t, db, 1, 1500, `, priority => 1`)
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	at := clock()
	require.Equal(t, l2[:7], uuidsOf(reserveVia(t, conn, 7, at)))
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT pgq.run_now($1)`, l1[5000]))
	require.Equal(t, "(2,0)", pgqtest.Scalar[string](t, db,
		`SELECT (count(*), count(*) FILTER (WHERE chunk IS NOT NULL))::text FROM pgq.live_jobs WHERE uuid IN ($1, $2)`, l1[5000], a),
		"the job run_now took out of its chunk is a row")
	want := append(append(append(append([]uuid.UUID{}, l2[7:]...), a), l1...), b)
	require.Equal(t, want, pgqtest.Scalar[[]uuid.UUID](t, db,
		`SELECT array_agg(uuid ORDER BY queue, priority DESC, available_at, sort_id, id) FROM pgq.ready`))
	require.Equal(t, want, pgqtest.Scalar[[]uuid.UUID](t, db,
		`SELECT array_agg(uuid ORDER BY queue, priority DESC, available_at, id) FROM pgq.ready`), "the same order")

	db.Exec(t, `ANALYZE pgq.loads, pgq.jobs`)
	page := `SELECT uuid FROM pgq.ready ORDER BY queue, priority DESC, available_at, sort_id, id LIMIT 51 OFFSET 1500`
	require.Equal(t, want[1500:1551], pgqtest.Scalar[[]uuid.UUID](t, db, `SELECT array_agg(uuid) FROM (`+page+`) p`))
	n := chunksExpanded(t, db, page)
	require.True(t, n >= 3 && n <= 4,
		"l2's two chunks and l1's first, and perhaps the next one, whose first job ends the sort's last group: %d", n)

	for _, j := range []struct {
		uuid  uuid.UUID
		n     int
		chunk bool
	}{{l1[30000], 30001, true}, {l1[5000], 5001, false}, {a, 0, false}, {l2[1499], 1500, true}} {
		require.Equal(t, j.n, pgqtest.Scalar[int](t, db, `SELECT (payload->>'n')::int FROM pgq.live_job($1)`, j.uuid))
		require.Equal(t, j.chunk, pgqtest.Scalar[bool](t, db, `SELECT chunk IS NOT NULL FROM pgq.live_job($1)`, j.uuid))
		require.Equal(t, "ready", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.live_job($1)`, j.uuid))
		calls := 0
		if j.chunk {
			calls = 1
		}
		require.Equal(t, calls, payloadCalls(t, db, `SELECT * FROM pgq.live_job($1)`, j.uuid), "chunks expanded to find %s (job %d)", j.uuid, j.n)
	}
	require.Equal(t, "running", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.live_job($1)`, l2[3]),
		"a reserved job is running, not in its chunk")

	var got []uuid.UUID
	for js := reserveVia(t, conn, 1000, at); len(js) > 0; js = reserveVia(t, conn, 1000, at) {
		got = append(got, uuidsOf(js)...)
	}
	require.Equal(t, want, got, "the order the reserves take them")
}

// payloadCalls runs query and returns how many chunks of pgq.loads it expanded: the
// calls of pgq._load_payloads (pgq.load_jobs), counted by the session's function
// statistics, which see into the functions a query calls (the counts not yet flushed,
// so the difference is taken in one transaction).
func payloadCalls(t *testing.T, db *pgqtest.DB, query string, args ...any) int {
	t.Helper()
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SET LOCAL track_functions = 'all'`)
	require.NoError(t, err)
	calls := func() (n int) {
		require.NoError(t, tx.QueryRow(ctx, `SELECT coalesce(pg_stat_get_xact_function_calls('pgq._load_payloads'::regproc), 0)::int`).Scan(&n))
		return n
	}
	before := calls()
	_, err = tx.Exec(ctx, query, args...)
	require.NoError(t, err)
	return calls() - before
}

// chunksExpanded runs query under EXPLAIN ANALYZE and returns how many chunks of
// pgq.loads it expanded: the calls of pgq._load_payloads (pgq.load_jobs).
func chunksExpanded(t *testing.T, db *pgqtest.DB, query string, args ...any) int {
	t.Helper()
	var plan []struct{ Plan map[string]any }
	require.NoError(t, json.Unmarshal(pgqtest.Scalar[[]byte](t, db, `EXPLAIN (ANALYZE, FORMAT JSON) `+query, args...), &plan))
	var walk func(n map[string]any) int
	walk = func(n map[string]any) int {
		loops := 0
		if n["Function Name"] == "_load_payloads" {
			loops += int(n["Actual Loops"].(float64))
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			loops += walk(c.(map[string]any))
		}
		return loops
	}
	return walk(plan[0].Plan)
}

// Operations on single jobs of one chunk, from many sessions at once, each take its job
// out of the chunk however often the others split it meanwhile (S85): every cancel of
// a waiting job is honoured ('cancelled', S40) and every run_now finds its job (S20),
// and no cancelled job is reserved afterwards.
func TestS20S40S85ConcurrentCancelsOfOneChunk(t *testing.T) {
	t.Parallel()
	db := pgqtest.NewWithLoads(t, 100)
	jobs := dispatchMany(t, db, 1, 1024, ``)
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads`), "one chunk")

	const sessions, each = 10, 100 // session s cancels jobs s, s+10, s+20, ...: their splits interleave
	results := make(chan string, sessions*each+24)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, db.URL)
			if err != nil {
				results <- err.Error()
				return
			}
			defer c.Close(ctx)
			for i := s; i < sessions*each; i += sessions {
				var r *string
				if err := c.QueryRow(ctx, `SELECT pgq.cancel($1)`, jobs[i]).Scan(&r); err != nil {
					results <- err.Error()
				} else if r == nil {
					results <- "cancel found no job"
				} else {
					results <- *r
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // and run_now on the jobs after them, meanwhile
		defer wg.Done()
		for _, id := range jobs[sessions*each:] {
			var ok bool
			if err := db.Pool.QueryRow(ctx, `SELECT pgq.run_now($1)`, id).Scan(&ok); err != nil {
				results <- err.Error()
			} else if ok {
				results <- "run_now"
			} else {
				results <- "run_now found no job"
			}
		}
	}()
	wg.Wait()
	close(results)
	counts := map[string]int{}
	for r := range results {
		counts[r]++
	}
	require.Equal(t, map[string]int{"cancelled": sessions * each, "run_now": 24}, counts)

	got := reserve(t, db, "w", clock())
	require.ElementsMatch(t, jobs[sessions*each:], uuidsOf(got), "only the jobs not cancelled are reserved")
	require.Equal(t, sessions*each, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'cancelled'`))
	require.Zero(t, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs WHERE state <> 'running'`))
}

// A dispatch staged by COPY is read a range of the staging table at a time and queued
// in calls of thousands of payloads (S68), each kept as a load (S85) with none of the
// rows left over, in the order the rows were written.
func TestS68S85StagedDispatchInBatches(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT pgq.stage_dispatch()`)
	require.NoError(t, err)
	const n = 20000 // about 2,700 pages of 1 KiB payloads: three ranges of the table
	pad := strings.Repeat("x", 1000)
	i := 0
	copied, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", "pgq_staged_payloads"}, []string{"payload"},
		pgx.CopyFromFunc(func() ([]any, error) {
			if i++; i > n {
				return nil, nil
			}
			return []any{fmt.Sprintf(`{"n": %d, "pad": "%s"}`, i, pad)}, nil
		}))
	require.NoError(t, err)
	require.EqualValues(t, n, copied)
	require.Greater(t, scalarTx[int64](t, tx, `SELECT pg_relation_size('pg_temp.pgq_staged_payloads') / 8192`), int64(2048), "more than two ranges of pages")

	ids := scalarTx[[]uuid.UUID](t, tx, `SELECT pgq.dispatch_staged('a')`)
	require.Len(t, ids, n)
	require.Zero(t, scalarTx[int](t, tx, `SELECT count(*)::int FROM pgq.jobs`), "every call was large enough for a load")
	require.Equal(t, ids, scalarTx[[]uuid.UUID](t, tx, `SELECT array_agg(uuid ORDER BY id) FROM pgq.live_jobs`), "in row order")
	require.Equal(t, n, scalarTx[int](t, tx, `SELECT count(*)::int FROM unnest($1::uuid[]) WITH ORDINALITY u(id, k)
		JOIN pgq.live_jobs l ON l.uuid = u.id AND (l.payload ->> 'n')::int = u.k`, ids), "each uuid with its payload")
}

func scalarTx[T any](t *testing.T, tx pgx.Tx, query string, args ...any) T {
	t.Helper()
	var v T
	require.NoError(t, tx.QueryRow(ctx, query, args...).Scan(&v), query)
	return v
}
