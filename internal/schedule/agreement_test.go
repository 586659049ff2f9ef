package schedule_test

// SQL and Go must agree on what a schedule is: pgq.schedule() validates expressions and
// time zones in SQL, the workers parse them with robfig/cron and time.LoadLocation. A
// schedule that one accepts and the other refuses would be stored and never fire, or be
// refused for no reason. These tests run both over the same inputs.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/internal/schedule"
)

// corpus holds expressions written to probe each rule, valid and not.
var corpus = []string{
	// five and six fields
	"* * * * *", "* * * * * *", "0 * * * *", "0 0 * * *", "30 2 * * *", "*/5 * * * *", "*/5 * * * * *",
	"0 0 1 1 *", "0 0 1 JAN *", "0 0 * * MON-FRI", "0 0 * * mon-fri", "0 0 * * Sun,Sat", "0 0 * jan-mar,oct *",
	"0 9-17/2 * * 1-5", "15,45 * * * *", "0 0 ? * *", "0 0 * * ?", "? ? ? ? ? ?", "1-59/2 * * * *",
	"0 0 L * *", "0 0 1W * *", "0 0 * * 5#3", "0 0 * * 7", "0 0 * * 0", "0 0 * 0 *", "0 0 0 * *", "0 0 32 * *",
	"0 24 * * *", "60 * * * *", "0 60 * * * *", "* * * * 13 *", "59 59 23 31 12 6",
	"  * * * * *", "* * * * *  ", "*\t*\t*\t*\t*", "*\n* * * *", "* *  * *   *", "\t0 0 * * *\n",
	"* * * *", "* * * * * * *", "", " ", "\t", "*", "a b c d e",
	// ranges, steps, lists
	"5-10 * * * *", "10-5 * * * *", "5-5 * * * *", "5- * * * *", "-5 * * * *", "5-10-15 * * * *",
	"*/0 * * * *", "*/1 * * * *", "*/60 * * * *", "*/99999 * * * *", "*/ * * * *", "/5 * * * *", "5/ * * * *",
	"5/15 * * * *", "5-40/15 * * * *", "*/5/5 * * * *", "*/-1 * * * *", "*/+2 * * * *", "+5 * * * *", "-0 * * * *",
	"*-5 * * * *", "*-foo * * * *", "?-3/2 * * * *", "1,,2 * * * *", ",1 * * * *", "1, * * * *", ", * * * *",
	",,, * * * *", "* * * * ,", "007 * * * *", "99999999999999999999 * * * *", "9223372036854775807 * * * *",
	"1-99999999999999999999 * * * *", "*/9223372036854775807 * * * *", "*/9223372036854775808 * * * *",
	"0 0 * * MON-SUN", "0 0 * * sat-sun", "0 0 * FEB-JAN *", "0 0 * DECEMBER *", "0 0 * * MONDAY", "jan * * * *",
	"0 0 * * */2", "0 0 1-31/2 * *", "0 0 * */3 *", "0 0 * * 1/2",
	// days that never come
	"0 0 30 2 *", "0 0 31 2 *", "0 0 29 2 *", "0 0 31 4 *", "0 0 31 4,6,9,11 *", "0 0 31 4,5 *", "0 0 30,31 2 *",
	"0 0 30 2 MON", "0 0 30 2 */1", "0 0 30 2 ?", "0 0 30 2 */2", "0 0 * 2 *", "0 0 31 */2 *", "0 0 31 2/2 *",
	// macros
	"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@reboot", "@every",
	"@every ", "@every 1s", "@every 30s", "@every 1m", "@every 1h30m", "@every 1h1h", "@every 90s", "@every 0s",
	"@every 0", "@every 500ms", "@every 1500ms", "@every 2000ms", "@every 1000000us", "@every 1000000000ns",
	"@every 1.5s", "@every 1.0s", "@every .5m", "@every -1s", "@every +1s", "@every 1S", "@every 1d", "@every 1 s",
	"@every  1s", "@every 1s ", "@every 1µs", "@every 1m5", "@every 1hs", "@every 2562047h47m16s",
	"@every 2562047h47m17s", "@every 99999999999999999999s", "@every 9223372036s", "@every 9223372037s",
	"@DAILY", "@Daily", " @daily", "@daily ", "@daily\n", "@ daily", "@", "@@daily", "@hourly * * * * *",
	// time zones belong in their argument
	"TZ=UTC * * * * *", "CRON_TZ=Europe/Berlin 0 0 * * *", "TZ=UTC", "TZ=", "tz=UTC * * * * *",
	// not ASCII
	"0\u00a00 * * *", "0 0 * * *\u00a0", "0 0 * * ＊", "@every 1µs",
}

// generated returns n expressions built from cron's tokens and plenty of noise.
func generated(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	number := func() string {
		switch r.IntN(10) {
		case 0:
			return pick("+", "-", "00", "") + fmt.Sprint(r.IntN(100))
		case 1:
			return pick("99999999999999999999", "9223372036854775807", "9223372036854775808", "")
		default:
			return fmt.Sprint(r.IntN(65))
		}
	}
	value := func() string {
		switch r.IntN(8) {
		case 0:
			return pick("jan", "FEB", "Mar", "dec", "sun", "MON", "Sat", "thu", "foo", "L", "W", "#")
		case 1:
			return pick("*", "?")
		default:
			return number()
		}
	}
	item := func() string {
		s := value()
		if r.IntN(3) == 0 {
			s += "-" + value()
			if r.IntN(8) == 0 {
				s += "-" + value()
			}
		}
		if r.IntN(3) == 0 {
			s += "/" + number()
			if r.IntN(10) == 0 {
				s += "/" + number()
			}
		}
		return s
	}
	field := func() string {
		items := []string{item()}
		for r.IntN(3) == 0 {
			items = append(items, pick(item(), ""))
		}
		return strings.Join(items, ",")
	}
	duration := func() string {
		var b strings.Builder
		for k := 1 + r.IntN(3); k > 0; k-- {
			b.WriteString(pick("", "", "", "+", "-", "."))
			b.WriteString(pick(fmt.Sprint(r.IntN(100)), fmt.Sprint(r.IntN(3000)), "0", "1.5", "99999999999"))
			b.WriteString(pick("h", "m", "s", "ms", "us", "ns", "d", "H", "", "x"))
		}
		return b.String()
	}
	// plausible builds a field within its bounds, as people write them, with the odd
	// slip (a bound off by one, a range backwards).
	lo, hi := [6]int{0, 0, 0, 1, 1, 0}, [6]int{59, 59, 23, 31, 12, 6}
	plausible := func(f int) string {
		items := make([]string, 1+r.IntN(2))
		for i := range items {
			a, b := lo[f]+r.IntN(hi[f]-lo[f]+2), lo[f]+r.IntN(hi[f]-lo[f]+1)
			switch r.IntN(6) {
			case 0:
				items[i] = pick("*", "?")
			case 1:
				items[i] = "*/" + fmt.Sprint(1+r.IntN(15))
			case 2:
				items[i] = fmt.Sprintf("%d-%d", min(a, b), max(a, b))
			case 3:
				items[i] = fmt.Sprintf("%d-%d/%d", min(a, b), max(a, b), r.IntN(10))
			case 4:
				items[i] = fmt.Sprintf("%d/%d", a, 1+r.IntN(20))
			default:
				items[i] = fmt.Sprint(a)
			}
		}
		return strings.Join(items, ",")
	}
	out := make([]string, 0, n)
	for len(out) < n {
		if r.IntN(5) < 2 {
			fields := make([]string, 0, 6)
			first := 1
			if r.IntN(2) == 0 {
				first = 0
			}
			for f := first; f < 6; f++ {
				fields = append(fields, plausible(f))
			}
			out = append(out, strings.Join(fields, " "))
			continue
		}
		switch r.IntN(10) {
		case 0:
			out = append(out, pick("@every ", "@every", "@Every ", "@")+duration()+pick("", "", " ", "\t"))
		case 1:
			out = append(out, pick("@yearly", "@monthly", "@weekly", "@daily", "@hourly", "@midnight", "@annually", "@foo")+pick("", "", " ", "x"))
		case 2:
			var b strings.Builder
			for k := r.IntN(20); k > 0; k-- {
				b.WriteByte("0123456789*?,-/ @aAjJnNsS\t+"[r.IntN(27)])
			}
			out = append(out, b.String())
		default:
			fields := make([]string, 4+r.IntN(4))
			for i := range fields {
				fields[i] = field()
			}
			out = append(out, pick("", "", " ", "\t")+strings.Join(fields, pick(" ", " ", "  ", "\t", " \n"))+pick("", "", " "))
		}
	}
	return out
}

// robfigAccepts is robfig/cron's own verdict (it panics on some TZ= prefixes).
func robfigAccepts(expr string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := schedule.Parser.Parse(expr)
	return err == nil
}

// pgq._cron_problem and the workers' parser (robfig/cron plus pgq's refusals) accept
// and refuse the same expressions, over a hand-written corpus and thousands of
// generated ones (S60). pgq refuses some that robfig alone accepts (listed in the
// package doc); it never accepts one that robfig refuses.
func TestS60SQLValidatorAgreesWithRobfig(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	exprs := append(append([]string(nil), corpus...), generated(20000)...)
	rows, err := db.Pool.Query(context.Background(),
		`SELECT e, pgq._cron_problem(e) FROM unnest($1::text[]) WITH ORDINALITY AS x(e, n) ORDER BY n`, exprs)
	require.NoError(t, err)
	problems := map[string]*string{}
	for rows.Next() {
		var e string
		var p *string
		require.NoError(t, rows.Scan(&e, &p))
		problems[e] = p
	}
	require.NoError(t, rows.Err())

	var valid, stricter, disagree int
	for _, e := range exprs {
		_, goErr := schedule.Parse(e)
		sqlOK, goOK := problems[e] == nil, goErr == nil
		if sqlOK != goOK {
			disagree++
			if disagree <= 20 {
				t.Errorf("%q: SQL %s, Go %s", e, verdict(problems[e]), verdictErr(goErr))
			}
		}
		if goOK {
			valid++
			require.True(t, robfigAccepts(e), "%q: pgq accepts what robfig refuses", e)
		} else if robfigAccepts(e) {
			stricter++
		}
	}
	require.Zero(t, disagree, "expressions on which SQL and Go disagree")
	t.Logf("%d expressions: %d valid, %d refused by pgq though robfig accepts them", len(exprs), valid, stricter)
	require.Greater(t, valid, 2000, "the corpus must hold valid expressions too")
}

func verdict(problem *string) string {
	if problem == nil {
		return "accepts"
	}
	return "refuses: " + *problem
}

func verdictErr(err error) string {
	if err == nil {
		return "accepts"
	}
	return "refuses: " + err.Error()
}

// Every time zone that pgq.schedule() accepts (pg_timezone_names, spelt exactly, but
// the server's localtime and posixrules files) loads in Go, and the names that it
// refuses are refused with a reason (S60).
func TestS60TimeZonesAgree(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	// pgq._timezone_problem reads pg_timezone_names, about 30 ms a call: it is called
	// on every tenth name here, and the accepted set is restated for the rest.
	names := pgqtest.Scalar[[]string](t, db,
		`SELECT array_agg(name ORDER BY name) FROM pg_timezone_names WHERE name NOT IN ('localtime', 'posixrules')`)
	require.Greater(t, len(names), 300)
	var sample []string
	for i, n := range names {
		_, err := schedule.New("@hourly", n)
		require.NoError(t, err, "time zone %s", n)
		if i%10 == 0 {
			sample = append(sample, n)
		}
	}
	require.Empty(t, pgqtest.Scalar[[]string](t, db,
		`SELECT coalesce(array_agg(n), '{}') FROM unnest($1::text[]) n WHERE pgq._timezone_problem(n) IS NOT NULL`, sample))
	for tz, want := range map[string]string{
		"Mars/Olympus_Mons": "unknown time zone",
		"europe/berlin":     "case-sensitive: 'Europe/Berlin'",
		"CEST":              "abbreviation or an offset",
		"UTC+3":             "abbreviation or an offset",
		"localtime":         "not a zone",
		"":                  "empty",
	} {
		p := pgqtest.Scalar[*string](t, db, `SELECT pgq._timezone_problem($1)`, tz)
		require.NotNil(t, p, tz)
		require.Contains(t, *p, want, tz)
	}
}

// The bound of catch_up 'all' is one number in SQL and Go (S62).
func TestS62MaxCatchUpMatchesSQL(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	require.Equal(t, schedule.MaxCatchUp, pgqtest.Scalar[int](t, db, `SELECT pgq._schedule_max_catch_up()`))
}
