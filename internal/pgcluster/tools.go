// Package pgcluster runs PostgreSQL's own server programs (initdb, pg_ctl,
// pg_basebackup): Tools finds and runs them, as the postgres system user when
// the process is root (initdb and postgres refuse to run as root); Cluster is
// a private, throw-away cluster for tests that can be stopped, started again
// and given a streaming hot standby.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// BinDirEnv names the environment variable that, when set, is the directory
// holding PostgreSQL's server programs; it overrides every other lookup.
const BinDirEnv = "FINSYNC_PG_BINDIR"

// serverUser is the system user PostgreSQL's programs run as when the
// calling process is root.
const serverUser = "postgres"

// Tools runs PostgreSQL's server programs from one directory. The zero value
// is unusable; get one from FindTools.
type Tools struct {
	// Bin is the directory holding initdb, pg_ctl and pg_basebackup.
	Bin string
	// asRoot is true when programs must run as the postgres system user.
	asRoot bool
}

// FindTools locates PostgreSQL's server programs: $FINSYNC_PG_BINDIR; else
// the directory initdb on PATH links to; else `pg_config --bindir`; else the newest
// /usr/lib/postgresql/*/bin. Caveat: it checks only that initdb and pg_ctl
// exist there, not their version.
func FindTools() (Tools, error) {
	return FindToolsIn(os.Getenv(BinDirEnv))
}

// FindToolsIn is FindTools with dir in place of $FINSYNC_PG_BINDIR: a
// binary that parsed its configuration already passes the directory
// (empty: look the programs up).
func FindToolsIn(dir string) (Tools, error) {
	asRoot := os.Geteuid() == 0
	if dir != "" {
		if !hasServerPrograms(dir) {
			return Tools{}, fmt.Errorf("%s=%s holds no initdb and pg_ctl", BinDirEnv, dir)
		}
		return Tools{Bin: dir, asRoot: asRoot}, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		// PATH may hold symbolic links to a few of the programs only.
		if real, err := filepath.EvalSymlinks(p); err == nil && hasServerPrograms(filepath.Dir(real)) {
			return Tools{Bin: filepath.Dir(real), asRoot: asRoot}, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServerPrograms(dir) {
			return Tools{Bin: dir, asRoot: asRoot}, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	for i := len(matches) - 1; i >= 0; i-- {
		if dir := filepath.Dir(matches[i]); hasServerPrograms(dir) {
			return Tools{Bin: dir, asRoot: asRoot}, nil
		}
	}
	return Tools{}, errors.New("PostgreSQL's server programs (initdb, pg_ctl) not found: install them or set " + BinDirEnv)
}

func hasServerPrograms(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// Run runs one of the programs (by name, e.g. "pg_ctl") with args and
// returns its combined output in the error when it fails. As root it runs
// the program as the postgres system user through runuser.
func (t Tools) Run(ctx context.Context, name string, args ...string) error {
	cmdline := append([]string{filepath.Join(t.Bin, name)}, args...)
	var c *exec.Cmd
	if t.asRoot {
		c = exec.CommandContext(ctx, "runuser", append([]string{"-u", serverUser, "--"}, cmdline...)...)
	} else {
		c = exec.CommandContext(ctx, cmdline[0], cmdline[1:]...)
	}
	// The caller's working directory may be closed to the server user.
	c.Dir = os.TempDir()
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// GiveToServerUser makes path owned by the postgres system user when the
// process is root, so the server programs can write there; otherwise it does
// nothing. It is not recursive.
func (t Tools) GiveToServerUser(path string) error {
	if !t.asRoot {
		return nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return fmt.Errorf("running as root needs a %s system user to run PostgreSQL: %w", serverUser, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return fmt.Errorf("uid of %s: %w", serverUser, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return fmt.Errorf("gid of %s: %w", serverUser, err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("give %s to %s: %w", path, serverUser, err)
	}
	return nil
}

// InitDB creates the data directory (mode 0700, owned by the server user)
// and initialises a cluster there: superuser postgres, trust
// authentication, UTF8; extra arguments go to initdb as they are. Caveat:
// trust authentication lets anyone who can reach the server's port in;
// listen on loopback only.
func (t Tools) InitDB(ctx context.Context, data string, extra ...string) error {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := t.GiveToServerUser(data); err != nil {
		return err
	}
	args := append([]string{"-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"}, extra...)
	return t.Run(ctx, "initdb", args...)
}
