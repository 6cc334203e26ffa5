// Package jsontext is Replica's one JSON tokenizer and writer: a strict pull
// Reader over one JSON text and Append functions that write JSON tokens
// into a byte slice. It knows JSON's syntax only; what an object means is
// for its callers, each of which decodes its own structures with the
// Reader: model (json column values, and the JSON form of values and
// schema migrations that the sync protocol carries and the engine
// stores), engine (its snapshot checkpoint and legacy stored migrations),
// wire (the sync protocol's frames) and jsbridge (the text facade.js
// writes). Errors can carry the JSON path at which they occurred
// (At, AtIndex, AtKey; PathError).
//
// It exists instead of encoding/json for the browser build's size:
// encoding/json works by reflection, and linked into replica.wasm its
// encoder and decoder cost about 0.9 MB raw (220 KB gzipped). This package
// uses no reflection and does not import encoding/json.
//
// # Reading
//
// A Reader accepts exactly RFC 8259 JSON: no comments, no trailing commas,
// no leading zeros, no raw control characters in strings, nothing after the
// value but whitespace, arrays and objects nested at most MaxDepth deep
// (DefaultMaxDepth, encoding/json's 10000, when zero). Its errors give a
// message and the byte offset at which the input went wrong; Reader.Errors
// lets a caller make them in its own error type. What it accepts beyond
// that is set per Reader, because the three callers must accept different
// things:
//
//   - UTF-8. The Reader copies the bytes of strings as they are; it does
//     not check them (encoding/json's decoder replaces each invalid byte
//     with U+FFFD; the engine's reader of its stored records does the same
//     itself). A caller that must refuse invalid UTF-8 (the wire
//     refuses a frame holding any) checks the whole text first with
//     Reader.CheckUTF8 (or InvalidUTF8), which gives the offset of the
//     first bad byte.
//   - Escaped surrogates. RFC 8259 leaves an escaped UTF-16 surrogate that
//     is not half of a pair (\ud800 alone) undefined. Reader.Surrogates
//     says what it reads as: SurrogateError (the zero value) refuses the
//     text, as the wire must; SurrogateReplace reads U+FFFD, as
//     encoding/json does (the engine's json columns, which accept what
//     encoding/json's Valid accepts); SurrogateWTF8 reads the surrogate's
//     3-byte WTF-8 form, which is not valid UTF-8, so that jsbridge hands a
//     JavaScript string holding a lone surrogate to the engine, which then
//     refuses it as text that is not UTF-8 instead of storing a changed
//     string.
//
// Strings are read by StringBytes (a slice of the input when the string has
// no escapes) or Str; numbers by Number, which returns the literal's text
// and whether it is an integer literal. Objects are read key by key
// (OpenObject, FirstKey, ObjectMore, or Members with a callback), arrays
// element by element (OpenArray, ArrayNext, Elements). Skip passes over a
// value of any kind, checking it, and returns its span; Compact appends a
// value without insignificant whitespace, as encoding/json's Compact does.
// Fields tracks which members of a struct-like object were seen, refusing
// a repeated key and naming a missing required one.
//
// # Writing
//
// AppendString writes a string with one rule for every caller: '"', '\\'
// and the control characters below U+0020 are escaped (\b \f \n \r \t, the
// others \u00XX, lowercase hex), everything else is written as is, and each
// byte that is not part of valid UTF-8 is written as \ufffd (encoding/json's
// rule; Go strings may hold such bytes, JSON text may not). Two escapes are
// options, because stored bytes must stay what encoding/json wrote:
//
//   - EscapeLineSeparators writes U+2028 and U+2029 as \u2028 and \u2029,
//     as encoding/json always does. The engine uses it for the JSON it
//     stores in encoding/json's form (json column values, the snapshot
//     checkpoint), so those bytes stay the ones encoding/json wrote and
//     compared.
//   - EscapeHTML also writes '<', '>' and '&' as \u003c, \u003e, \u0026,
//     as json.Marshal does by default: the engine's snapshot checkpoint,
//     which json.Marshal once wrote, keeps these bytes.
//
// The wire's frames, the migrations the engine stores in their form
// (model.AppendMigrationJSON) and the results jsbridge hands to JSON.parse
// use neither: the sync protocol's canonical form escapes only what JSON
// requires. The wire refuses text that is not valid UTF-8 rather than
// change it: it checks with InvalidUTF8String before writing.
//
// AppendFloat writes a finite number as encoding/json and JavaScript's
// Number.prototype.toString do (shortest round-trip digits, exponent form
// below 1e-6 and from 1e21); AppendBase64 writes bytes as a standard
// base64 string, as encoding/json writes a []byte; AppendStrings writes a
// []string, null for nil.
package jsontext
