//go:build !js

package relay

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/replica-sync/replica/model"
	"github.com/replica-sync/replica/wire"
)

// ErrAuthFailed is what Tokens returns for a refused handshake. Any error an
// Authenticator returns refuses the handshake with AUTH_FAILED (close 4001);
// its text is logged, never sent to the client.
var ErrAuthFailed = errors.New("relay: token does not grant the database")

// AuthRequest is what a handshake offers an Authenticator. Its fields are
// read-only.
type AuthRequest struct {
	// DatabaseID is the database the client asks for; it already passed
	// wire.ValidDatabaseID.
	DatabaseID string
	// Token is the handshake's token, "" when it had none.
	Token string
	// SiteID is the client replica's site id (as the client claims it).
	SiteID model.SiteID
	// RemoteAddr is the client's address as the HTTP server saw it.
	RemoteAddr string
	// Header is the header of the WebSocket upgrade request (cookies,
	// Origin, a reverse proxy's identity headers).
	Header http.Header
}

// Authenticator decides whether a handshake may use a database: nil grants
// it, any error refuses it (AUTH_FAILED, close 4001). Authenticate runs once
// per connection, after the protocol version and the database id were
// checked and before any storage is touched; ctx is cancelled after
// Config.AuthTimeout. It must be safe for concurrent use.
//
// A grant covers reading and writing the whole database for the life of the
// connection.
type Authenticator interface {
	Authenticate(ctx context.Context, req AuthRequest) error
}

// AuthFunc adapts a function to Authenticator.
type AuthFunc func(ctx context.Context, req AuthRequest) error

// Authenticate implements Authenticator.
func (f AuthFunc) Authenticate(ctx context.Context, req AuthRequest) error { return f(ctx, req) }

// AllowAll grants every handshake every database, whatever its token: for
// local development only (cmd/relay's --auth none, logged as a warning).
var AllowAll Authenticator = AuthFunc(func(context.Context, AuthRequest) error { return nil })

// Tokens grants a handshake the database it names when its token equals the
// token configured for that database. Tokens are compared in constant time
// (as SHA-256 digests, so neither their content nor their length leaks
// through timing, nor whether the database has a token at all). A database
// with no token is refused. Tokens is safe for concurrent use; it does not
// change after NewTokens.
type Tokens struct {
	digests map[string][sha256.Size]byte
}

// NewTokens returns a Tokens over a map of database id → token. Every id must
// pass wire.ValidDatabaseID and every token must be non-empty.
func NewTokens(byDatabase map[string]string) (*Tokens, error) {
	t := &Tokens{digests: make(map[string][sha256.Size]byte, len(byDatabase))}
	for id, tok := range byDatabase {
		if !wire.ValidDatabaseID(id) {
			return nil, fmt.Errorf("relay: tokens: %q is not a valid database id (^[A-Za-z0-9_.:-]{1,128}$)", id)
		}
		if tok == "" {
			return nil, fmt.Errorf("relay: tokens: empty token for database %q", id)
		}
		t.digests[id] = sha256.Sum256([]byte(tok))
	}
	return t, nil
}

// LoadTokenFile reads a token file: one JSON object mapping database ids to
// tokens, e.g. {"acme:trips": "tok-3f9a", "demo": "s3cret"}.
func LoadTokenFile(path string) (*Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("relay: read token file: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("relay: token file %s: want a JSON object of database id → token: %w", path, err)
	}
	t, err := NewTokens(m)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return t, nil
}

// Len returns the number of databases with a token.
func (t *Tokens) Len() int { return len(t.digests) }

// Authenticate implements Authenticator: nil when req.Token is the token of
// req.DatabaseID, else ErrAuthFailed.
func (t *Tokens) Authenticate(_ context.Context, req AuthRequest) error {
	want, ok := t.digests[req.DatabaseID]
	got := sha256.Sum256([]byte(req.Token))
	eq := subtle.ConstantTimeCompare(want[:], got[:]) == 1
	if !ok || !eq || req.Token == "" {
		return ErrAuthFailed
	}
	return nil
}
