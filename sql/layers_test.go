package sql_test

// The layers of sql/functions/: a file's number names its layer (its first digit), and a
// function, view or trigger refers only to objects of its own layer or a lower one. A
// lower layer tells a higher one something through a named extension point (the
// trigger on pgq.job_ends), never by calling it.

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sqlObject is one definition of sql/functions/: its name, file, layer and body with
// comments and string literals taken out.
type sqlObject struct {
	name, file string
	layer      int
	body       string
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	sqlString  = regexp.MustCompile(`'(?:[^']|'')*'`)
	sqlRef     = regexp.MustCompile(`\bpgq\.(\w+)`)
	sqlStart   = regexp.MustCompile(`(?im)^CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|VIEW|TRIGGER)\s+(pgq\.)?(\w+)`)
)

// sqlObjects reads every definition of sql/functions/, in file order.
func sqlObjects(t *testing.T) []sqlObject {
	t.Helper()
	files, err := filepath.Glob("functions/*.sql")
	require.NoError(t, err)
	sort.Strings(files)
	var objects []sqlObject
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		src := sqlString.ReplaceAllString(sqlComment.ReplaceAllString(string(b), ""), "''")
		base := filepath.Base(file)
		layer := int(base[0] - '0')
		starts := sqlStart.FindAllStringSubmatchIndex(src, -1)
		for i, m := range starts {
			end := len(src)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			objects = append(objects, sqlObject{
				name: strings.ToLower(src[m[4]:m[5]]), file: base, layer: layer, body: src[m[1]:end],
			})
		}
	}
	require.NotEmpty(t, objects)
	return objects
}

// refs lists the objects of sql/functions/ that o's body names, itself aside.
func (o sqlObject) refs(defined map[string]sqlObject) []sqlObject {
	var out []sqlObject
	seen := map[string]bool{o.name: true}
	for _, m := range sqlRef.FindAllStringSubmatch(o.body, -1) {
		name := strings.ToLower(m[1])
		if callee, ok := defined[name]; ok && !seen[name] {
			seen[name] = true
			out = append(out, callee)
		}
	}
	return out
}

func definedObjects(objects []sqlObject) map[string]sqlObject {
	defined := map[string]sqlObject{}
	for _, o := range objects {
		defined[o.name] = o
	}
	return defined
}

// Helpers -> storage -> dispatch -> reserve and outcomes -> workflows -> operations and
// admin -> views: no definition names one of a later layer.
func TestFunctionsCallOnlyTheirLayerAndBelow(t *testing.T) {
	t.Parallel()
	objects := sqlObjects(t)
	defined := definedObjects(objects)
	var upward []string
	for _, o := range objects {
		for _, callee := range o.refs(defined) {
			if callee.layer > o.layer {
				upward = append(upward, "pgq."+o.name+" ("+o.file+") -> pgq."+callee.name+" ("+callee.file+")")
			}
		}
	}
	require.Empty(t, upward, "calls from a layer to a later one")
	// The checker itself sees calls: the reserve's pickup checks record jobs' ends.
	var calls []string
	for _, callee := range defined["_pickup_checks"].refs(defined) {
		calls = append(calls, callee.name)
	}
	require.Contains(t, calls, "_record_ends")
}
