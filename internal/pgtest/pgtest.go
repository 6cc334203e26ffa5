//go:build !js

// Package pgtest starts a private PostgreSQL cluster for tests: initdb into a
// temporary directory, a server on 127.0.0.1 on a free port (and a unix
// socket inside the directory), and a fresh database per caller.
//
// One cluster serves the whole test binary. It starts on the first call to
// NewDatabase (or Start) and stops when the binary exits: call Main from
// TestMain so it stops at once; without it, and when the binary is killed, a
// small watcher process started with the cluster stops it and removes its
// directory within about a second of the test process going away.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.NewDatabase(t) // postgres://postgres@127.0.0.1:port/t_...
//		...
//	}
//
// The binaries come from Debian's postgresql package (the newest
// /usr/lib/postgresql/*/bin, else `pg_config --bindir`); `make test` installs
// the package when it is missing. Without them NewDatabase fails the test: it
// does not skip. PostgreSQL refuses to run as root, so as root the server
// runs as the postgres user (runuser -u postgres). The server is tuned for
// tests, not durability: fsync=off, synchronous_commit=off,
// full_page_writes=off, and max_connections=300.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NeedPostgres is the message tests fail with when no PostgreSQL binaries are
// found.
const NeedPostgres = "pgtest: PostgreSQL binaries not found (no initdb under /usr/lib/postgresql/*/bin, no pg_config on PATH): `make test` installs Debian's postgresql package (apt-get install postgresql)"

var (
	mu      sync.Mutex
	shared  *cluster
	initErr error
	started bool
)

type cluster struct {
	bin     string // directory of initdb, pg_ctl, postgres
	dir     string // temp dir: data/, sock/, log
	port    int
	asUser  string // "postgres" when running as root, else ""
	running bool
	watcher *exec.Cmd
}

// BinDir returns the directory holding the PostgreSQL binaries, or an error
// saying how to install them.
func BinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest major version first: sort numerically on the version component.
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New(NeedPostgres)
}

// traversable reports whether every directory from / down to dir lets
// others through (o+x).
func traversable(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode()&0o001 == 0 {
			return false
		}
		up := filepath.Dir(dir)
		if up == dir {
			return true
		}
		dir = up
	}
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Main runs the tests of m and stops the cluster (if one was started) before
// exiting with their status. It also stops the cluster on SIGINT and SIGTERM.
func Main(m *testing.M) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		shutdown()
		signal.Reset(s.(syscall.Signal))
		_ = syscall.Kill(os.Getpid(), s.(syscall.Signal))
	}()
	code := m.Run()
	shutdown()
	os.Exit(code)
}

// shutdown stops the cluster and removes its directory.
func shutdown() {
	mu.Lock()
	defer mu.Unlock()
	if shared == nil {
		return
	}
	c := shared
	if c.running {
		_ = c.pgctl("stop", "-m", "immediate")
		c.running = false
	}
	_ = os.RemoveAll(c.dir)
	if c.watcher != nil && c.watcher.Process != nil {
		_ = c.watcher.Process.Kill()
		_ = c.watcher.Wait()
	}
	shared = nil
	initErr = errors.New("pgtest: the cluster was shut down")
}

// get starts the shared cluster on first use.
func get() (*cluster, error) {
	mu.Lock()
	defer mu.Unlock()
	if started {
		return shared, initErr
	}
	started = true
	shared, initErr = newCluster()
	if initErr != nil {
		shared = nil
	}
	return shared, initErr
}

func newCluster() (*cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("pgtest: running as root and there is no postgres user to run the server as (the postgresql package creates it): %w", err)
		}
		c.asUser = "postgres"
	}
	// The directory is given to the server's user, who must be able to
	// reach it: when TMPDIR lies under a directory closed to others (such
	// as /root), use /tmp.
	parent := os.TempDir()
	if c.asUser != "" && !traversable(parent) {
		parent = "/tmp"
	}
	c.dir, err = os.MkdirTemp(parent, "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(c.dir)
		}
	}()
	if c.asUser != "" {
		u, _ := user.Lookup(c.asUser)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	if err := c.run(filepath.Join(bin, "initdb"), "-D", c.data(), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, err
	}
	if err := c.run("/bin/mkdir", "-m", "0700", filepath.Join(c.dir, "sock")); err != nil {
		return nil, err
	}
	c.port, err = freePort()
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 64MB
log_min_messages = warning
`, c.port, filepath.Join(c.dir, "sock"))
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	c.startWatcher()
	ok = true
	return c, nil
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs a command as the server's user, returning its output in the error.
func (c *cluster) run(name string, args ...string) error {
	if c.asUser != "" {
		args = append([]string{"-u", c.asUser, "--", name}, args...)
		name = "runuser"
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: %s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (c *cluster) pgctl(args ...string) error {
	args = append([]string{"-D", c.data(), "-w", "-t", "60"}, args...)
	return c.run(filepath.Join(c.bin, "pg_ctl"), args...)
}

func (c *cluster) start() error {
	if c.running {
		return nil
	}
	if err := c.pgctl("-l", filepath.Join(c.dir, "log"), "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	c.running = true
	return nil
}

// startWatcher starts a shell that stops the server and removes the
// directory once this process is gone, however it ended. It runs in its own
// process group with no inherited output, so neither a signal to the test
// process group nor `go test` waiting for output pipes to close involves it.
func (c *cluster) startWatcher() {
	stop := fmt.Sprintf("%s -D %s stop -m immediate", shellQuote(filepath.Join(c.bin, "pg_ctl")), shellQuote(c.data()))
	if c.asUser != "" {
		stop = "runuser -u " + c.asUser + " -- " + stop
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; %s >/dev/null 2>&1; rm -rf %s",
		os.Getpid(), stop, shellQuote(c.dir))
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err == nil {
		c.watcher = cmd
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// NewDatabase creates a fresh, empty database on the shared cluster
// (starting it on first use) and returns its connection URL,
// postgres://postgres@127.0.0.1:<port>/t_<random>?sslmode=disable. The
// database is dropped when t ends. Without PostgreSQL binaries it fails t
// with NeedPostgres.
func NewDatabase(t testing.TB) string {
	t.Helper()
	c, err := get()
	if err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	if err := admin(c, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		// Best effort: the test may have left the server stopped.
		_ = admin(c, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return c.url(name)
}

// admin runs one statement on the cluster's postgres database.
func admin(c *cluster, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// URL returns the URL of database db on the shared cluster, starting it on
// first use.
func URL(db string) (string, error) {
	c, err := get()
	if err != nil {
		return "", err
	}
	return c.url(db), nil
}

// Stop stops the shared cluster's server (fast shutdown: clients are
// disconnected, committed data stays). Start starts it again on the same
// port with the same data.
func Stop() error {
	c, err := get()
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if !c.running {
		return nil
	}
	if err := c.pgctl("stop", "-m", "fast"); err != nil {
		return err
	}
	c.running = false
	return nil
}

// Start starts the shared cluster (creating it on first use) or restarts a
// server Stop stopped.
func Start() error {
	c, err := get()
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return c.start()
}
