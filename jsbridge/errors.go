//go:build js && wasm

package jsbridge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/replica-sync/replica/engine"
	"github.com/replica-sync/replica/idbkv"
	"github.com/replica-sync/replica/kv"
	"github.com/replica-sync/replica/model"
)

// The stable error codes of the JavaScript API (web/replica.d.ts,
// ErrorCode). Every rejection is a JS Error (a ReplicaError) with one of
// them in its code property.
const (
	codeValidation      = "VALIDATION"                // model.ErrValidation, engine.ErrUnknownTable, kv.ErrValueTooLarge, unsupported JS values
	codeNotFound        = "NOT_FOUND"                 // engine.ErrNotFound
	codeConflict        = "CONFLICT"                  // engine.ErrConflict
	codeClosed          = "CLOSED"                    // engine.ErrClosed, kv.ErrClosed, calls after db.close()
	codeQuota           = "QUOTA_EXCEEDED"            // kv.ErrQuotaExceeded (the browser's quota, or idbkv's storage margin)
	codeStorage         = "STORAGE_ERROR"             // idbkv.ErrStorage: the browser's storage failed (IO error); the replica is closed
	codeClockDrift      = "CLOCK_DRIFT"               // model.ErrClockDrift
	codeSchema          = "SCHEMA"                    // model.ErrSchema: an invalid schema, or one contradicting the stored one
	codeStorageFormat   = "STORAGE_FORMAT"            // engine.ErrStorageFormat
	codeInvalidArgument = "INVALID_ARGUMENT"          // bad call shapes: wrong argument types, unknown options
	codeProtocolVersion = "PROTOCOL_VERSION_MISMATCH" // sync: the relay speaks another protocol version (in SyncState.error)
	codeAuthFailed      = "AUTH_FAILED"               // sync: the relay refused the token (in SyncState.error)
	codeSyncFailed      = "SYNC_FAILED"               // sync: any other failure of the connection (in SyncState.error)
	// Sealed databases (SyncState.error and lastError; the relay's codes
	// ENVELOPE_REQUIRED and ENVELOPE_REFUSED come as they are).
	codeSealedMismatch    = "SEALED_MISMATCH"    // the relay's: the database's mode (sealed or plain) differs from the connect's (in SyncState.error)
	codeDecryptFailed     = "DECRYPT_FAILED"     // seal.ErrDecryptFailed: no key given opens an envelope; held (in SyncState.lastError)
	codeEnvelopeInvalid   = "ENVELOPE_INVALID"   // seal.ErrEnvelopeInvalid: an envelope does not authenticate; refused (lastError)
	codeCheckpointRefused = "CHECKPOINT_REFUSED" // client.ErrCheckpointRefused, or the relay's code: a sealed checkpoint refused (lastError)
	codeEnvelopeRequired  = "ENVELOPE_REQUIRED"  // the relay's: a plain push to a sealed database (lastError)
	codeEnvelopeRefused   = "ENVELOPE_REFUSED"   // the relay's: a sealed push to a plain database (lastError)
	codeInternal          = "INTERNAL"           // a bug: a Go panic, malformed facade requests, kv.ErrTxInactive, ...
)

// bridgeError is an error with its JS code already decided.
type bridgeError struct {
	code, msg     string
	table, column string
}

func (e *bridgeError) Error() string { return e.msg }

// argError returns an INVALID_ARGUMENT error. Out of line (as
// model.tableError): its call sites are failure paths, and inlined each
// carried a copy of the formatting call and allocation.
//
//go:noinline
func argError(format string, args ...any) error {
	return &bridgeError{code: codeInvalidArgument, msg: fmt.Sprintf(format, args...)}
}

// jsError is what a rejection carries to facade.js, which makes the
// ReplicaError: {code, message, table?, column?} as JSON.
type jsError struct {
	Code    string
	Message string
	Table   string // omitted when empty
	Column  string // omitted when empty
}

func (e jsError) json() string {
	var o jsonObject
	o.str("code", e.Code)
	o.str("message", e.Message)
	if e.Table != "" {
		o.str("table", e.Table)
	}
	if e.Column != "" {
		o.str("column", e.Column)
	}
	return o.done()
}

// jsValueTerms names the values model's coercion describes in Go's terms
// ("got real 42": a JS number arrives as a float64, a BigInt as a
// json.Number, a Uint8Array as []byte, a Date as time.Time) as JavaScript
// has them: pairs of the Go term and the JavaScript one.
var jsValueTerms = [...][2]string{
	{", got real ", ", got the number "},
	{", got number ", ", got the BigInt "},
	{", got integer ", ", got the number "},
	{", got text ", ", got the string "},
	{", got blob ", ", got a Uint8Array "},
	{", got timestamp ", ", got the Date "},
	{", got boolean ", ", got "},
}

// jsTerms rewrites a validation message for JavaScript callers: each Go
// term of jsValueTerms, left to right, without overlaps, as a
// strings.Replacer of the pairs would (no term is a prefix of another;
// written out because the Replacer costs ~15 KB of the browser build).
func jsTerms(msg string) string {
	const got = ", got "
	var b []byte
	done := 0 // msg[:done] is in b
	for i := 0; ; {
		j := strings.Index(msg[i:], got)
		if j < 0 {
			break
		}
		i += j
		matched := false
		for _, t := range jsValueTerms {
			if strings.HasPrefix(msg[i:], t[0]) {
				b = append(append(b, msg[done:i]...), t[1]...)
				i += len(t[0])
				done, matched = i, true
				break
			}
		}
		if !matched {
			i++
		}
	}
	if b == nil {
		return msg
	}
	return string(append(b, msg[done:]...))
}

// classify maps err (from the engine, the kv store or the bridge) to its JS
// form. method ("db.insert") prefixes the message; table is the table the
// call named, reported on VALIDATION errors that do not name one.
func classify(err error, method, table string) jsError {
	out := jsError{Code: codeInternal, Message: err.Error()}
	var be *bridgeError
	var ve *model.ValidationError
	switch {
	case errors.As(err, &be):
		out.Code, out.Table, out.Column = be.code, be.table, be.column
	case errors.As(err, &ve):
		out.Code, out.Table, out.Column = codeValidation, ve.Table, ve.Column
		out.Message = jsTerms(err.Error())
	case errors.Is(err, engine.ErrBadCursor):
		out.Code = codeInvalidArgument
	case errors.Is(err, engine.ErrUnknownTable):
		out.Code, out.Table = codeValidation, table
	case errors.Is(err, kv.ErrValueTooLarge):
		out.Code, out.Table = codeValidation, table
	case errors.Is(err, engine.ErrNotFound):
		out.Code = codeNotFound
	case errors.Is(err, engine.ErrConflict):
		out.Code = codeConflict
	case errors.Is(err, idbkv.ErrStorage):
		out.Code = codeStorage
	case errors.Is(err, engine.ErrClosed), errors.Is(err, kv.ErrClosed):
		// In the API's terms, not the storage layers' ("idbkv: ...: kv:
		// store closed"): the replica is closed, and why when it was not
		// db.close().
		out.Code = codeClosed
		out.Message = "the replica is closed"
		if strings.Contains(err.Error(), "versionchange") {
			out.Message += " (another tab or window is deleting or upgrading its IndexedDB database)"
		}
	case errors.Is(err, kv.ErrQuotaExceeded):
		out.Code = codeQuota
	case errors.Is(err, model.ErrClockDrift):
		out.Code = codeClockDrift
	case errors.Is(err, model.ErrSchema):
		out.Code = codeSchema
		// A default db.alterColumn could not convert names the value
		// as validation messages do ("got the number 2.5").
		out.Message = jsTerms(err.Error())
	case errors.Is(err, engine.ErrStorageFormat):
		out.Code = codeStorageFormat
	}
	if out.Code == codeValidation && out.Table == "" {
		out.Table = table
	}
	if method != "" {
		out.Message = method + ": " + out.Message
	}
	return out
}
