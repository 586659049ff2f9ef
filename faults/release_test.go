package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// A worker built from the previous release tag, run against a database migrated by this
// tree (migrate first, then roll the workers: docs/deploy.md), either drains SQL jobs as
// before or stops at once with a message that says why. Skipped when the checkout has no
// release tags (a shallow clone, say).
func TestPreviousReleaseWorkerOnNewSchema(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("git", "tag", "--list", "v*", "--sort=-v:refname").Output()
	tags := strings.Fields(string(out))
	if err != nil || len(tags) == 0 {
		t.Skipf("no release tags in this checkout (git tag --list 'v*': %v): nothing to build the previous worker from", err)
	}
	tag := tags[0]
	src := t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git archive %s | tar -x -C %s", tag, src))
	archive.Dir = ".." // the repository root: git archive in faults/ would take only faults/
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", tag, err, out)
	}
	bin := filepath.Join(src, "pgq-worker-"+tag)
	build := exec.Command("go", "build", "-o", bin, "./cmd/pgq-worker")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pgq-worker of %s: %v\n%s", tag, err, out)
	}

	c := pgcluster.Start(t)
	db := c.CreateDB(t, "faults")
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_job('effect', handler => 'app.effect');`)
	jobs := 50
	dispatchEffects(t, db, "effect", jobs, 0)

	cmd := exec.Command(bin, "work", "--database-url", db.URL, "--stop-when-empty", "--sleep", "1")
	done := make(chan struct{})
	var run []byte
	go func() { run, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the %s worker neither drained nor stopped in 2 minutes:\n%s", tag, tail(string(run), 30))
	}
	ran := effectsCount(db)
	t.Logf("FIGURES %s: tag=%s exit_err=%v ran=%d of %d", t.Name(), tag, err, ran, jobs)
	if err == nil {
		require.Equal(t, jobs, ran, "the %s worker stopped cleanly: every job ran once\n%s", tag, tail(string(run), 30))
		require.True(t, drained(db))
		return
	}
	// Stopped: the last line says why, in words an operator can act on.
	last := lastLine(string(run))
	require.Regexp(t, `(?i)schema|migrat|version|upgrade`, last, "the %s worker stopped with a clear message", tag)
}
