package wire

import (
	"bufio"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
)

// addGoldenSeeds adds every golden frame and every transcript frame.
func addGoldenSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*")) // .json and, version 14, .bin
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(strings.TrimSuffix(string(data), "\n")))
	}
	trs, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txt"))
	for _, name := range trs {
		file, err := os.Open(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(nil, DefaultMaxMessageSize)
		for sc.Scan() {
			if _, frame, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(sc.Text(), "#") {
				if b64, ok := strings.CutPrefix(frame, "b64:"); ok {
					raw, err := base64.StdEncoding.DecodeString(b64)
					if err != nil {
						f.Fatal(err)
					}
					frame = string(raw)
				}
				f.Add([]byte(frame))
			}
		}
		file.Close()
	}
}

// FuzzDecode checks that Decode never panics, that it fails only with
// ErrMalformed, and that whatever it accepts encodes, and decodes again to
// an equal message whose encoding is the same (the encoding is canonical).
// Seeds: the golden frames and transcripts, and testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	addGoldenSeeds(f)
	for _, s := range []string{
		`{"type":"handshake"}`,
		`{"protocolVersion":` + curVersion + `,"type":"handshake","x":[1,{"y":null}]}`,
		`{"type":"get_changes","since":9007199254740992}`,
		`{"chunk":{"rows":[[null,[[0,"x",0,7],[1,2.5]]],[[2],[]]],"bases":["AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4="],"key":[0],"columns":["a","b"],"table":"t","type":"rows"},"type":"snapshot_chunk"}`,
		`{"type":"error","code":"AUTH_FAILED","message":"\ud83d\ude8b"}`,
		`{"type":"error","code":"X","message":"","fatal":false,"requestId":"apply-1"}`,
		`{"type":"apply_changes","changes":[{"siteId":"AY86XH4RQpugDcRVbiGQ_g","transactionId":"t","hlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","changes":[` +
			`{"type":"column","table":"t","pk":[{"__bigint":"-9223372036854775808"},{"__bin":""}],"column":"c","value":{"__json":{"__bin":"x"}},"hlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","priorValue":-0.0,"priorHlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE"},` +
			`{"type":"delete","table":"t","pk":[1e300],"hlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","priorRow":{"a":[[{}]],"b":"\u0000"}}]}]}`,
		`{"type":"snapshot_chunk","chunk":{"type":"rows","table":"t","columns":["a","b"],"key":[1,0],"bases":["AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4="],"rows":[[null,[[0,1,0,4294967294],[1,2]],[0,0]],[[3,4],[]]]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := Decode(frame)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v does not match ErrMalformed", err)
			}
			if m != nil {
				t.Fatalf("Decode returned %+v with its error", m)
			}
			return
		}
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("Decode accepted %q but Encode(%+v) failed: %v", frame, m, err)
		}
		m2, err := Decode(b)
		if err != nil {
			t.Fatalf("re-encoded frame %s does not decode: %v", b, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("decode∘encode changed the message:\n%+v\n%+v\nframe %s", m, m2, b)
		}
		b2, err := Encode(m2)
		if err != nil || string(b2) != string(b) {
			t.Fatalf("encoding is not canonical:\n%s\n%s (%v)", b, b2, err)
		}
	})
}

// FuzzUnmarshalValue checks the value codec the same way.
func FuzzUnmarshalValue(f *testing.F) {
	for _, s := range []string{`null`, `true`, `-0`, `-0.0`, `1e20`, `9007199254740993`, `"\u00e9"`, `{"__bin":"AA=="}`,
		`{"__bigint":"-9223372036854775808"}`, `{"__json":{"__json":1}}`, `[{"a":[]}]`, `{"a":1,"__bin":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := UnmarshalValue(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		b, err := MarshalValue(v)
		if err != nil {
			t.Fatalf("UnmarshalValue accepted %q but MarshalValue(%v) failed: %v", data, v, err)
		}
		v2, err := UnmarshalValue(b)
		if err != nil || !v2.Equal(v) {
			t.Fatalf("%q → %v → %s → %v (%v)", data, v, b, v2, err)
		}
	})
}

// FuzzParseSchema checks that ParseSchema never panics and that a parsed
// schema's canonical form parses back to the same schema.
func FuzzParseSchema(f *testing.F) {
	f.Add([]byte(`{"tables":{"trips":{"columns":{"id":"text","title":{"type":"text","notNull":true},"budget":{"type":"real","default":0}},"primaryKey":"id","indexes":{"by_title":["title"]},"coerce":false}}}`))
	f.Add([]byte(`{"tables":[{"name":"t","columns":[{"name":"a","type":"blob","default":{"__bin":""}}],"primaryKey":["a"],"indexes":[{"name":"i","columns":["a"]}],"coerce":true}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchema(data)
		if err != nil {
			if !errors.Is(err, model.ErrSchema) {
				t.Fatalf("error %v does not match model.ErrSchema", err)
			}
			return
		}
		b, err := MarshalSchema(s)
		if err != nil {
			t.Fatalf("ParseSchema accepted %q but MarshalSchema failed: %v", data, err)
		}
		s2, err := ParseSchema(b)
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("%q → %+v → %s → %+v (%v)", data, s, b, s2, err)
		}
	})
}
