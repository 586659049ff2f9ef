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

// sqlObject is one definition of sql/functions/: its name, file, layer, and body with
// comments taken out (text) and string literals too (body).
type sqlObject struct {
	name, file string
	layer      int
	text, body string
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
		text := sqlComment.ReplaceAllString(string(b), "")
		base := filepath.Base(file)
		layer := int(base[0] - '0')
		starts := sqlStart.FindAllStringSubmatchIndex(text, -1)
		for i, m := range starts {
			end := len(text)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			objects = append(objects, sqlObject{
				name: strings.ToLower(text[m[4]:m[5]]), file: base, layer: layer,
				text: text[m[1]:end], body: sqlString.ReplaceAllString(text[m[1]:end], "''"),
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

// What the storage layer keeps to itself: the partitions of pgq.jobs and
// pgq.overlap_locks, the chunks of pgq.loads, the slots and generations, and the
// reserve's marks in the session.
var storageInternals = regexp.MustCompile(`\bpgq\.(loads(_\d)?|load_jobs|jobs_\d|job_slots|overlap_locks_\d|overlap_gens)\b|pgq\.reserve_marks`)

// The storage has one boundary: outside the files 20-29, a definition names of the
// storage layer only what 29_storage.sql defines, and none of its internals.
func TestStorageHasOneBoundary(t *testing.T) {
	t.Parallel()
	objects := sqlObjects(t)
	defined := definedObjects(objects)
	var crossing []string
	for _, o := range objects {
		if o.layer == 2 {
			continue
		}
		for _, callee := range o.refs(defined) {
			if callee.layer == 2 && callee.file != "29_storage.sql" {
				crossing = append(crossing, "pgq."+o.name+" ("+o.file+") -> pgq."+callee.name+" ("+callee.file+")")
			}
		}
		for _, m := range storageInternals.FindAllString(o.text, -1) {
			crossing = append(crossing, "pgq."+o.name+" ("+o.file+") names "+m)
		}
	}
	require.Empty(t, crossing, "names of the storage layer used past its boundary")
	// The checker itself sees both kinds: the boundary's own views read the internals.
	require.Regexp(t, storageInternals, defined["_live_counted"].text)
	var calls []string
	for _, callee := range defined["_pick"].refs(defined) {
		calls = append(calls, callee.file)
	}
	require.Contains(t, calls, "21_storage_loads.sql")
}
