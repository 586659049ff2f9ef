package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func notQuiet(b bool) string {
	if b {
		return " (gave up: NOT QUIET)"
	}
	return ""
}

// waitQuiet waits until the processes other than this one use fewer than cores cores
// over 3 s, or until limit has passed (then it reports false for quiet).
func waitQuiet(cores float64, limit time.Duration) (waited time.Duration, gaveUp bool) {
	start := time.Now()
	for {
		m0, c0 := readMachineCPU(), selfCPU()
		time.Sleep(3 * time.Second)
		m1, c1 := readMachineCPU(), selfCPU()
		busy := m1.busyCores(m0) - (c1-c0).Seconds()/3
		if busy < cores {
			return time.Since(start) - 3*time.Second, false
		}
		if time.Since(start) > limit {
			fmt.Printf("(machine still busy: %.2f cores used by other processes after waiting %s; draining anyway)\n",
				busy, time.Since(start).Round(time.Second))
			return time.Since(start), true
		}
	}
}

// startVacuumer does for a peer's jobs table what pgq's worker does for pgq.jobs
// (worker.WithVacuumAfter): each second, once the statistics count after dead rows, a
// VACUUM with the worker's options. Autovacuum is off on the benchmark's server, and
// without it River's fetch walks ever more dead index entries during a 30 s run. It uses
// its own connection; after 0 turns it off. A failure is printed, since the settings
// notes claim the vacuum. stop waits for a vacuum under way.
func startVacuumer(ctx context.Context, pool *pgxpool.Pool, table string, after int) (stop func()) {
	if after <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	report := func(err error) {
		if ctx.Err() == nil {
			fmt.Printf("(vacuum of %s failed: %v)\n", table, err)
		}
	}
	go func() {
		defer close(done)
		conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
		if err != nil {
			report(err)
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		every(ctx, time.Second, func() {
			var due bool
			if err := conn.QueryRow(ctx, "SELECT coalesce(n_dead_tup >= $1, false) FROM pg_stat_user_tables WHERE relid = $2::regclass",
				after, table).Scan(&due); err != nil || !due {
				if err != nil {
					report(err)
				}
				return
			}
			if _, err := conn.Exec(ctx, "VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false, PARALLEL 0) "+pgx.Identifier{table}.Sanitize()); err != nil {
				report(err)
			}
		})
	}()
	return func() { cancel(); <-done }
}

// every calls fn each period until ctx is done.
func every(ctx context.Context, period time.Duration, fn func()) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fn()
		}
	}
}

// sampler watches a drain every two seconds: how many jobs are finished (countSQL, for
// the first-half and second-half rates) and how many sessions of other databases are
// active: a benchmark sharing the server with other work is not measuring one queue alone.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	start  time.Time
	jobs   int

	mu        sync.Mutex
	times     []time.Duration
	finished  []int
	samples   int
	busy      int
	othersMax int
}

func startSampler(ctx context.Context, pool *pgxpool.Pool, start time.Time, jobs int, countSQL string) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{}), start: start, jobs: jobs}
	go func() {
		defer close(s.done)
		every(ctx, 2*time.Second, func() {
			var finished, others int
			err := pool.QueryRow(ctx, `SELECT (`+countSQL+`),
				(SELECT count(*) FROM pg_stat_activity
				 WHERE backend_type = 'client backend' AND state <> 'idle'
				   AND datname IS DISTINCT FROM current_database())`).Scan(&finished, &others)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.times = append(s.times, time.Since(s.start))
			s.finished = append(s.finished, finished)
			s.samples++
			if others > 0 {
				s.busy++
			}
			s.othersMax = max(s.othersMax, others)
			s.mu.Unlock()
		})
	}()
	return s
}

func (s *sampler) stop() { s.cancel(); <-s.done }

func (s *sampler) others() (int, float64) {
	if s.samples == 0 {
		return 0, 0
	}
	return s.othersMax, 100 * float64(s.busy) / float64(s.samples)
}

// halves returns the drain rate over the first and the second half of the backlog,
// interpolating when the half was crossed between two samples; 0s without samples.
func (s *sampler) halves(drain time.Duration) (float64, float64) {
	half := s.jobs / 2
	prevT, prevN := time.Duration(0), 0
	for i, n := range s.finished {
		if n >= half {
			t := prevT + time.Duration(float64(s.times[i]-prevT)*float64(half-prevN)/float64(max(1, n-prevN)))
			if t <= 0 || t >= drain {
				return 0, 0
			}
			return float64(half) / t.Seconds(), float64(s.jobs-half) / (drain - t).Seconds()
		}
		prevT, prevN = s.times[i], n
	}
	return 0, 0
}

// procCPU is the CPU time of each process named postgres, by pid.
type procCPU map[int]time.Duration

// postgresCPU reads /proc/[pid]/stat of every postgres process (this benchmark assumes
// the server runs on the same machine; elsewhere it reports 0).
func postgresCPU() procCPU {
	out := procCPU{}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || closing < open || string(b[open+1:closing]) != "postgres" {
			continue
		}
		f := strings.Fields(string(b[closing+1:])) // f[0] is field 3 (state)
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)               // field 14
		stime, _ := strconv.ParseInt(f[12], 10, 64)               // field 15
		out[pid] = time.Duration(utime+stime) * time.Second / 100 // USER_HZ
	}
	return out
}

// since is the CPU the postgres processes alive now used after before was read
// (processes started since count from zero; those that ended are missed).
func (p procCPU) since(before procCPU) time.Duration {
	var d time.Duration
	for pid, t := range p {
		d += t - before[pid]
	}
	return d
}

// stats returns median, min and max of vs, or -1s when vs is empty.
func stats(vs []float64) (median, lo, hi float64) {
	if len(vs) == 0 {
		return -1, -1, -1
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return median, s[0], s[n-1]
}

// selfCPU is the user+system CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineCPU is the first line of /proc/stat: jiffies busy and in total, all CPUs.
type machineCPU struct{ busy, total int64 }

func readMachineCPU() machineCPU {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return machineCPU{}
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return machineCPU{}
	}
	var m machineCPU
	for i, s := range fields[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		if i >= 8 { // guest and guest_nice are already counted in user and nice
			break
		}
		m.total += v
		if i != 3 && i != 4 { // idle, iowait
			m.busy += v
		}
	}
	return m
}

// busyCores is how many cores were busy on average between before and m.
func (m machineCPU) busyCores(before machineCPU) float64 {
	total := m.total - before.total
	if total <= 0 {
		return 0
	}
	return float64(m.busy-before.busy) / float64(total) * float64(runtime.NumCPU())
}

// logCounter counts the worker's log records (at Warn and above) and keeps the first.
type logCounter struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func (l *logCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if len(l.lines) < 3 {
		l.lines = append(l.lines, strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (l *logCounter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *logCounter) first() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return "none"
	}
	return strings.Join(l.lines, " | ")
}

var _ io.Writer = (*logCounter)(nil)

// meter measures one timed phase: the cores used by this process (or by a child
// process, see stopChild), by PostgreSQL and by everything else, and the WAL written.
type meter struct {
	pool  *pgxpool.Pool
	start time.Time
	cpu0  time.Duration
	mach0 machineCPU
	pg0   procCPU
	lsn0  string

	// With tracking, postgres processes are read every 100 ms, so that the CPU of
	// backends that exit before the phase ends (a child process's connections) counts.
	trackStop chan struct{}
	trackDone chan struct{}
	seen      procCPU // last CPU read of every postgres process seen during the phase
}

// usage is what a meter measured.
type usage struct {
	elapsed     time.Duration
	clientCores float64 // this process (or the child process) during the phase
	pgCores     float64 // every postgres process (all databases)
	otherCores  float64 // everything else on the machine
	walBytes    int64
}

func startMeter(ctx context.Context, pool *pgxpool.Pool) (*meter, error) {
	m := &meter{pool: pool}
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&m.lsn0); err != nil {
		return nil, fmt.Errorf("read WAL position: %w", err)
	}
	m.cpu0, m.mach0, m.pg0 = selfCPU(), readMachineCPU(), postgresCPU()
	m.start = time.Now()
	return m, nil
}

// startTrackingMeter is startMeter for phases whose postgres backends may exit before
// the phase ends.
func startTrackingMeter(ctx context.Context, pool *pgxpool.Pool) (*meter, error) {
	m, err := startMeter(ctx, pool)
	if err != nil {
		return nil, err
	}
	m.seen = procCPU{}
	maps.Copy(m.seen, m.pg0)
	m.trackStop, m.trackDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.trackDone)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.trackStop:
				return
			case <-t.C:
				maps.Copy(m.seen, postgresCPU())
			}
		}
	}()
	return m, nil
}

// stop ends the phase; client CPU is this process's.
func (m *meter) stop(ctx context.Context) (usage, error) {
	return m.stopWith(ctx, selfCPU()-m.cpu0)
}

// stopWith ends the phase with clientCPU as the client's CPU time (for a child process).
func (m *meter) stopWith(ctx context.Context, clientCPU time.Duration) (usage, error) {
	u := usage{elapsed: time.Since(m.start)}
	mach1, pg1 := readMachineCPU(), postgresCPU()
	if m.trackStop != nil {
		close(m.trackStop)
		<-m.trackDone
		maps.Copy(m.seen, pg1)
		pg1 = m.seen
	}
	secs := u.elapsed.Seconds()
	u.clientCores = clientCPU.Seconds() / secs
	u.pgCores = pg1.since(m.pg0).Seconds() / secs
	u.otherCores = max(0, mach1.busyCores(m.mach0)-u.clientCores-u.pgCores)
	if err := m.pool.QueryRow(ctx, "SELECT pg_current_wal_lsn() - $1::pg_lsn", m.lsn0).Scan(&u.walBytes); err != nil {
		return u, fmt.Errorf("read WAL position: %w", err)
	}
	return u, nil
}

// cores formats a usage for a run line.
func (u usage) cores(client string, jobs int64) string {
	s := fmt.Sprintf("cores busy: %s %.2f, postgres %.2f, other %.2f of %d", client, u.clientCores, u.pgCores,
		u.otherCores, runtime.NumCPU())
	if jobs > 0 {
		s += fmt.Sprintf(" | WAL %.0f B/job", float64(u.walBytes)/float64(jobs))
	}
	return s
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of sorted.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// waitFor polls cond every interval until it is true, fails or timeout passes.
func waitFor(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
