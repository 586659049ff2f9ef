package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// S104: as on a hosted PostgreSQL, no superuser: the database's owner, a login with
// CREATEROLE only, migrates and defines; a worker login that is a member of pgq_worker
// alone drains SQL jobs; every login authenticates with a scram-sha-256 password under
// pg_hba, and a wrong password is refused.
func TestS104ManagedServerWithoutSuperuser(t *testing.T) {
	t.Parallel()
	c := pgcluster.Start(t, pgcluster.Setting("password_encryption", "scram-sha-256"))
	c.Exec(t, `CREATE ROLE shop_owner LOGIN CREATEROLE PASSWORD 'owner secret'`)
	c.Exec(t, `CREATE ROLE shop_worker LOGIN PASSWORD 'worker secret'`)
	c.Exec(t, `CREATE DATABASE shop OWNER shop_owner`)
	// The test's own superuser connections keep trust; every other login needs its password.
	hba := "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
	// Written over the file in place, so it keeps its owner, the server's user.
	require.NoError(t, os.WriteFile(filepath.Join(c.DataDir, "pg_hba.conf"), []byte(hba), 0o600))
	c.Exec(t, `SELECT pg_reload_conf()`)

	bin := binary(t, sqlWorker)
	owner := fmt.Sprintf("postgres://shop_owner:owner%%20secret@127.0.0.1:%d/shop?sslmode=disable", c.Port)
	worker := fmt.Sprintf("postgres://shop_worker:worker%%20secret@127.0.0.1:%d/shop?sslmode=disable", c.Port)
	run := func(url string, args ...string) (string, error) {
		out, err := exec.Command(bin, append(args, "--database-url", url)...).CombinedOutput()
		return string(out), err
	}

	out, err := run(owner, "migrate")
	require.NoError(t, err, "migrate as the owner with CREATEROLE:\n%s", out)
	require.NotContains(t, out, "owner secret", "the password is not shown")
	ownerDB := &pgcluster.DB{Name: "shop", URL: worker, Pool: c.Pool(t, "shop", 4), C: c}
	ownerDB.Exec(t, `SET ROLE shop_owner;
GRANT pgq_admin TO shop_owner;
GRANT pgq_worker TO shop_worker;`)
	ownerDB.Exec(t, `SET ROLE shop_owner;`+appSchema+`
GRANT USAGE ON SCHEMA app TO shop_worker;
GRANT INSERT ON app.effects TO shop_worker;
GRANT USAGE ON SEQUENCE app.effects_id_seq TO shop_worker;
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_job('effect', handler => 'app.effect');
SELECT count(*) FROM pgq.dispatch_many('effect', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 20) i));
RESET ROLE;`)
	require.Zero(t, pgcluster.Scalar[int](t, ownerDB, `SELECT count(*)::int FROM pg_roles WHERE rolname = 'shop_owner' AND rolsuper`))
	require.Equal(t, "SCRAM-SHA-256", pgcluster.Scalar[string](t, ownerDB,
		`SELECT left(rolpassword, 13) FROM pg_authid WHERE rolname = 'shop_worker'`))

	out, err = run(worker, "work", "--stop-when-empty", "--sleep", "1", "--timeout", "5")
	require.NoError(t, err, "a worker with a scram password:\n%s", out)
	require.Equal(t, 20, effectsCount(ownerDB))
	require.True(t, drained(ownerDB))

	out, err = run(strings.Replace(worker, "worker%20secret", "wrong", 1), "status")
	require.Error(t, err)
	require.Contains(t, out, "password authentication failed")
}
