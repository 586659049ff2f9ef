// Package docs holds pgq's documentation; its tests keep docs/SEMANTICS.md and the
// tests in step, and every example of the manual (README.md and docs/*.md) running.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every rule of SEMANTICS.md (a bold id such as **S14**) is named by at least one test
// in the repository, so that `go test -run S14 ./...` and `grep -rn S14` find its tests.
func TestEveryRuleIsNamedByATest(t *testing.T) {
	doc, err := os.ReadFile("SEMANTICS.md")
	if err != nil {
		t.Fatal(err)
	}
	rules := regexp.MustCompile(`\*\*(S\d+)\b`).FindAllStringSubmatch(string(doc), -1)
	if len(rules) == 0 {
		t.Fatal("no rule ids found in SEMANTICS.md")
	}
	var tests strings.Builder
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") && filepath.Base(path) != "semantics_test.go" {
			b, err := os.ReadFile(path)
			tests.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if !regexp.MustCompile(`\b` + r[1] + `\b`).MatchString(tests.String()) {
			t.Errorf("rule %s of SEMANTICS.md is named by no test", r[1])
		}
	}
}

// A test whose doc comment names rules carries each id in its name too (TestS26S34…),
// so that `go test -run S26 ./...` runs every test of S26, not only those whose name
// happens to say so.
func TestTestsCarryTheirRulesInTheirNames(t *testing.T) {
	decl := regexp.MustCompile(`((?://[^\n]*\n)*)func (Test\w+)\(t \*testing\.T\)`)
	id := regexp.MustCompile(`\bS(\d+)\b`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "../docs/") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			prefix := regexp.MustCompile(`^Test((?:S\d+)*)`).FindStringSubmatch(m[2])[1]
			for _, r := range id.FindAllStringSubmatch(m[1], -1) {
				if !regexp.MustCompile(`S` + r[1] + `(S|$)`).MatchString(prefix) {
					t.Errorf("%s: %s names S%s in its comment but not in its name", path, m[2], r[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
