//go:build !js

package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func query(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDatabaseSurvivesRestart(t *testing.T) {
	url := NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t(x int); INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := Start(); err != nil {
		t.Fatal(err)
	}
	if n := query(t, url); n != 2 {
		t.Fatalf("after restart: %d rows, want 2", n)
	}
	if other := NewDatabase(t); other == url {
		t.Fatal("NewDatabase returned the same database twice")
	}
	if _, err := BinDir(); err != nil {
		t.Fatal(err)
	}
}
