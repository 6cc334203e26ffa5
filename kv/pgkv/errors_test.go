//go:build !js

package pgkv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/replica-sync/replica/kv"
)

func TestErrorMapping(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "m"}) }
	for _, c := range []struct {
		name     string
		err      error
		isCommit bool
		mapped   error // mapErr's sentinel, nil for none
		commit   error // commitErr's sentinel, nil for none
	}{
		{"disk full", pg("53100"), false, kv.ErrQuotaExceeded, kv.ErrQuotaExceeded},
		{"admin shutdown", pg("57P01"), false, kv.ErrUnavailable, kv.ErrUnavailable},
		{"admin shutdown on COMMIT", pg("57P01"), true, kv.ErrUnavailable, kv.ErrCommitUnknown},
		{"connection failure", pg("08006"), false, kv.ErrUnavailable, kv.ErrUnavailable},
		{"cannot connect now", pg("57P03"), false, kv.ErrUnavailable, kv.ErrUnavailable},
		{"unique violation", pg("23505"), false, nil, nil},
		{"serialization failure on COMMIT", pg("40001"), true, nil, nil},
		{"EOF", io.ErrUnexpectedEOF, false, kv.ErrUnavailable, kv.ErrCommitUnknown},
		{"deadline", context.DeadlineExceeded, true, kv.ErrUnavailable, kv.ErrCommitUnknown},
		{"closed pool", errors.New("closed pool"), false, kv.ErrClosed, nil},
		{"other", errors.New("x"), false, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, got, want error) {
				t.Helper()
				for _, s := range []error{kv.ErrQuotaExceeded, kv.ErrUnavailable, kv.ErrCommitUnknown, kv.ErrClosed} {
					if errors.Is(got, s) != (s == want) {
						t.Errorf("%s(%v) = %v: matches %v: %v, want %v", what, c.err, got, s, errors.Is(got, s), s == want)
					}
				}
				if !errors.Is(got, c.err) {
					t.Errorf("%s(%v) = %v lost the original error", what, c.err, got)
				}
			}
			check("mapErr", mapErr(c.err), c.mapped)
			if c.name != "closed pool" {
				check("commitErr", commitErr(c.err, c.isCommit), c.commit)
			}
		})
	}
}
