package pgcluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PgBouncer is a PgBouncer in front of a cluster, on a free port, stopped at cleanup.
type PgBouncer struct {
	Port int
	Mode string // pool_mode: session or transaction
	c    *Cluster
	log  string
}

// PgBouncerBin returns the path of the pgbouncer binary: $PGBOUNCER, else pgbouncer on
// $PATH, else /usr/sbin/pgbouncer (Debian's package).
func PgBouncerBin() (string, error) {
	if p := os.Getenv("PGBOUNCER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", fmt.Errorf("no pgbouncer on $PATH or in /usr/sbin (install Debian's pgbouncer, as .ci/run does)")
}

// StartPgBouncer starts a PgBouncer in pool_mode mode ("session" or "transaction") that
// passes every database of c on, with trust authentication for Superuser and
// WorkerLogin and the given other roles. It skips t when pgbouncer is not installed.
func (c *Cluster) StartPgBouncer(t testing.TB, mode string, roles ...string) *PgBouncer {
	t.Helper()
	bin, err := PgBouncerBin()
	if err != nil {
		t.Skipf("pgcluster: %v", err)
	}
	b := &PgBouncer{Mode: mode, c: c, log: filepath.Join(c.Dir, "pgbouncer-"+mode+".log")}
	users := ""
	for _, r := range append([]string{Superuser, WorkerLogin}, roles...) {
		users += fmt.Sprintf("%q \"\"\n", r)
	}
	auth := filepath.Join(c.Dir, "pgbouncer-users.txt")
	if err := os.WriteFile(auth, []byte(users), 0o644); err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	for i := 0; ; i++ {
		b.Port = freePort(t)
		ini := filepath.Join(c.Dir, "pgbouncer-"+mode+".ini")
		conf := strings.Join([]string{
			"[databases]",
			fmt.Sprintf("* = host=127.0.0.1 port=%d", c.Port),
			"[pgbouncer]",
			"listen_addr = 127.0.0.1",
			fmt.Sprintf("listen_port = %d", b.Port),
			"unix_socket_dir =",
			"auth_type = trust",
			"auth_file = " + auth,
			"pool_mode = " + mode,
			"max_client_conn = 500",
			"default_pool_size = 20",
			"ignore_startup_parameters = extra_float_digits",
		}, "\n") + "\n"
		if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
			t.Fatalf("pgcluster: %v", err)
		}
		logf, err := os.OpenFile(b.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			t.Fatalf("pgcluster: %v", err)
		}
		cmd := exec.Command(bin, ini)
		cmd.Dir = c.Dir
		cmd.Stdout, cmd.Stderr = logf, logf
		if c.cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		}
		if err := cmd.Start(); err != nil {
			logf.Close()
			t.Fatalf("pgcluster: start pgbouncer: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("pgcluster: pgbouncer log:\n%s", tail(b.Log(), 3000))
			}
		})
		if b.waitListening(exited) {
			return b
		}
		if i < 4 && strings.Contains(b.Log(), "bind") {
			continue
		}
		t.Fatalf("pgcluster: pgbouncer did not start:\n%s", b.Log())
	}
}

// waitListening waits up to 10 s until the port accepts connections; false when the
// process exited first.
func (b *PgBouncer) waitListening(exited chan struct{}) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", b.Port), time.Second); err == nil {
			conn.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Log returns PgBouncer's log so far.
func (b *PgBouncer) Log() string {
	s, _ := os.ReadFile(b.log)
	return string(s)
}

// URL returns the URL of database db as role user through the pooler.
func (b *PgBouncer) URL(user, db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", user, b.Port, db)
}
