package docs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// The manual's examples run. Every ```sql and ```sh block of README.md and of docs/*.md
// is run, in the order it appears, against a database of its own per file: README.md's
// from an empty database (its Quick start migrates it), each file of docs/ from a freshly
// migrated one, as its reader has it. A block can opt out with the line
//
//	<!-- not run: REASON -->
//
// right before it, and REASON must say why (output, a deliberate error, a command that
// runs until stopped, the test suite itself, a setup this machine lacks). Blocks in
// another language, or none (output), are not run.
//
// sql blocks go to psql with ON_ERROR_STOP, one session per block; sh blocks to bash
// -e -o pipefail. Both run in a scratch directory holding bin/pgq-worker, built from
// this checkout, which is also first on PATH, with DATABASE_URL naming the file's
// database.
func TestExamplesRun(t *testing.T) {
	t.Parallel()
	files := manualFiles(t)
	bin := buildWorker(t)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			blocks := readBlocks(t, file)
			db := pgqtest.NewEmpty(t)
			if filepath.Base(file) != "README.md" {
				run(t, exec.Command(bin, "migrate", "--database-url", db.URL), "migrate")
			}
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(bin, filepath.Join(dir, "bin", "pgq-worker")); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "DATABASE_URL="+db.URL, "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
			ran := 0
			defer func() { t.Logf("%d blocks run, %d opted out", ran, len(blocks)-ran) }()
			for _, b := range blocks {
				if b.skip != "" {
					continue
				}
				ran++
				where := fmt.Sprintf("%s:%d (%s block)", file, b.line, b.lang)
				var cmd *exec.Cmd
				switch b.lang {
				case "sql":
					cmd = exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db.URL, "-o", os.DevNull, "-f", "-")
				default:
					cmd = exec.Command("bash", "-e", "-o", "pipefail", "-c", b.text)
				}
				cmd.Dir, cmd.Env = dir, env
				if b.lang == "sql" {
					cmd.Stdin = strings.NewReader(b.text)
				}
				run(t, cmd, where+":\n"+b.text)
			}
		})
	}
}

// A block's opt-out names its reason; the README stays a manual one reads through (under
// 600 lines) and links every file of docs/; every relative link of the manual leads to
// a file that exists.
func TestManualHoldsTogether(t *testing.T) {
	t.Parallel()
	for _, file := range manualFiles(t) {
		readBlocks(t, file) // fails on an opt-out without a reason
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n >= 600 {
		t.Errorf("README.md has %d lines: keep it under 600, and the detail in docs/", n)
	}
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !strings.Contains(string(readme), "](docs/"+d+")") {
			t.Errorf("README.md does not link docs/%s", d)
		}
	}
	link := regexp.MustCompile(`\]\(([^)#:]+)(?:#[^)]*)?\)`)
	for _, file := range manualFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), m[1])); err != nil {
				t.Errorf("%s links %s, which does not exist", file, m[1])
			}
		}
	}
}

// manualFiles is README.md and docs/*.md.
func manualFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, docs...)
}

// block is a fenced code block of the manual.
type block struct {
	lang string // sql or sh (bash and shell count as sh)
	text string
	line int    // of its opening fence
	skip string // why it is not run, "" when it is
}

var optOut = regexp.MustCompile(`^<!-- not run:\s*(.*?)\s*-->$`)

// readBlocks returns the sql and sh blocks of file, in order.
func readBlocks(t *testing.T, file string) []block {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []block
		cur     *block
		prev    string
		lineNo  int
		skipped string
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil && trimmed == "```":
			if cur.lang != "" {
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(trimmed, "```"):
			lang := strings.TrimPrefix(trimmed, "```")
			switch lang {
			case "bash", "shell":
				lang = "sh"
			case "sql", "sh":
			default:
				lang = "" // output, Go, or plain text: not run
			}
			skipped = ""
			if m := optOut.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				if m[1] == "" {
					t.Errorf("%s:%d: an opt-out must say why the block is not run", file, lineNo-1)
				}
				skipped = m[1]
			}
			cur = &block{lang: lang, line: lineNo, skip: skipped}
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s: a block opened at line %d is not closed", file, cur.line)
	}
	return out
}

// buildWorker builds pgq-worker from this checkout.
func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pgq-worker")
	run(t, exec.Command("go", "build", "-o", bin, "../cmd/pgq-worker"), "go build")
	return bin
}

// run runs cmd for at most a minute, failing the test with its output when it fails.
func run(t *testing.T, cmd *exec.Cmd, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Dir, c.Env, c.Stdin = cmd.Dir, cmd.Env, cmd.Stdin
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s\nfailed: %v\n%s", what, err, out)
	}
}
