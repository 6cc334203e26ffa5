package wire

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
)

var update = flag.Bool("update", false, "rewrite testdata/golden and testdata/transcripts from the samples")

// TestGolden pins the wire format: each file under testdata/golden is the
// frame of one sample message. It must decode to the sample, and the sample
// and the decoded message must both encode to the file's exact bytes.
func TestGolden(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	samples := sampleMessages(t)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range old {
			os.Remove(f)
		}
		for _, s := range samples {
			enc := mustEncode(t, s.m)
			if err := os.WriteFile(filepath.Join(dir, s.name+goldenExt(enc)), append(enc, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != len(samples) {
		t.Errorf("%d golden files for %d samples (run go test -update)", len(files), len(samples))
	}
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, s.name+goldenExt(mustEncode(t, s.m))))
			if err != nil {
				t.Fatal(err)
			}
			frame := bytes.TrimSuffix(data, []byte("\n"))
			got, err := Decode(frame)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, s.m) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, s.m)
			}
			if enc := mustEncode(t, got); !bytes.Equal(enc, frame) {
				t.Fatalf("re-encoded decoded frame differs:\n%s\n%s", enc, frame)
			}
			if enc := mustEncode(t, s.m); !bytes.Equal(enc, frame) {
				t.Fatalf("encoded sample differs from golden:\n%s\n%s", enc, frame)
			}
		})
	}
}

// goldenExt is the extension of a golden file holding frame: .bin for a
// binary frame (version 14), .json for a text frame.
func goldenExt(frame []byte) string {
	if IsBinaryFrame(frame) {
		return ".bin"
	}
	return ".json"
}

// transcriptLine is how a transcript writes a frame: a text frame as it
// is, a binary frame as "b64:" and its standard base64.
func transcriptLine(frame []byte) string {
	if IsBinaryFrame(frame) {
		return "b64:" + base64.StdEncoding.EncodeToString(frame)
	}
	return string(frame)
}

// A transcript is a session as its frames, one per line: "> " for client →
// relay, "< " for relay → client; "#" lines are comments.
type transcript struct {
	name  string
	lines []string
}

func (tr *transcript) note(format string, args ...any) {
	tr.lines = append(tr.lines, "# "+fmt.Sprintf(format, args...))
}

func (tr *transcript) frame(t testing.TB, dir string, m Message) {
	tr.lines = append(tr.lines, dir+" "+transcriptLine(mustEncode(t, m)))
}

func sampleTranscripts(t testing.TB) []transcript {
	css := sampleChangeSets(t)
	msgs := map[string]Message{}
	for _, s := range sampleMessages(t) {
		msgs[s.name] = s.m
	}
	c := func(tr *transcript, name string) { tr.frame(t, ">", msgs[name]) }
	r := func(tr *transcript, name string) { tr.frame(t, "<", msgs[name]) }

	sync := transcript{name: "sync"}
	sync.note("A returning client: handshake, pull until caught up, push, receive a push, keepalive.")
	c(&sync, "handshake")
	r(&sync, "handshake_ack")
	sync.note("The client's cursor for this relay is 41: ask for what arrived after it.")
	c(&sync, "get_changes")
	sync.frame(t, "<", &Changes{Cursor: 42, More: true, ChangeSets: css[:1], Chain: sampleChain(42)})
	sync.note("more was true: ask again from the cursor just received.")
	sync.frame(t, ">", &GetChanges{Since: 42})
	sync.frame(t, "<", &Changes{Cursor: 43, More: false, ChangeSets: css[1:2], Chain: sampleChain(43)})
	sync.note("Caught up. Push local work; the sent watermark moves only on the matching apply_result.")
	c(&sync, "apply_changes")
	sync.frame(t, "<", &ApplyResult{RequestID: "apply-3", ApplyResult: model.ApplyResult{Applied: 2, Skipped: 1, Conflicts: 1, Transactions: 1},
		First: 44, Cursor: 44, Chain: sampleChain(44)})
	sync.note("The push was stored at 44 (first 44), and the cursor was 43: the client's cursor moves to 44.")
	sync.note("Another connection pushed: the relay forwards it with its arrival cursor.")
	sync.frame(t, "<", &PushChanges{Cursor: 45, ChangeSets: css[2:], Chain: sampleChain(45)})
	c(&sync, "ping")
	r(&sync, "pong")
	sync.note("A rejected push: transient, the connection stays open.")
	r(&sync, "error_transient")

	boot := transcript{name: "bootstrap"}
	boot.note("A new device: handshake, then a snapshot, then changes after the snapshot's cursor.")
	c(&boot, "handshake_no_token")
	r(&boot, "handshake_ack_new")
	c(&boot, "get_snapshot")
	for _, n := range []string{"header", "schema", "table_start", "rows", "table_end", "footer"} {
		r(&boot, "snapshot_chunk_"+n)
	}
	r(&boot, "snapshot_complete")
	boot.note("The header's cursor was 4211.")
	boot.frame(t, ">", &GetChanges{Since: 4211})
	boot.frame(t, "<", &Changes{Cursor: 4211, Chain: sampleChain(4211)})

	restored := transcript{name: "restored"}
	restored.note("The relay was restored from an older copy: its log no longer holds this client's cursor 41 with that chain value.")
	c(&restored, "handshake")
	restored.note("history diverged: the cursor is void; siteHlc is the newest transaction of this site the relay holds.")
	r(&restored, "handshake_ack_diverged")
	restored.note("The client lowers its sent watermark to siteHlc and bootstraps again; nothing local is lost.")
	c(&restored, "get_snapshot")
	for _, n := range []string{"header", "schema", "table_start", "rows", "table_end", "footer"} {
		r(&restored, "snapshot_chunk_"+n)
	}
	r(&restored, "snapshot_complete")
	restored.frame(t, ">", &GetChanges{Since: 4211})
	restored.frame(t, "<", &Changes{Cursor: 4211, Chain: sampleChain(4211)})
	restored.note("Caught up: it pushes its transactions above siteHlc again; the relay stores those it lacks.")
	c(&restored, "apply_changes")
	r(&restored, "apply_result")

	resume := transcript{name: "resume"}
	resume.note("A device whose snapshot apply was interrupted: it sends its checkpoint back.")
	c(&resume, "handshake")
	r(&resume, "handshake_ack")
	c(&resume, "resume_snapshot")
	resume.frame(t, "<", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader, Header: &model.SnapshotHeader{
		Format: model.SnapshotFormat, SnapshotID: "snap-0193a1b2", SiteID: siteB, HLC: model.HLC{Wall: 1764374500000, Site: siteB},
		Tables: []string{"places"}, Rows: 0, Cursor: 4211}}})
	resume.frame(t, "<", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkSchema}})
	resume.frame(t, "<", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkTableStart, Table: "places"}})
	resume.frame(t, "<", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "places"}})
	resume.frame(t, "<", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkTableEnd, Table: "places"}})
	resume.frame(t, "<", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkFooter, Footer: &model.SnapshotFooter{Tables: 1}}})
	r(&resume, "snapshot_complete")

	mismatch := transcript{name: "version_mismatch"}
	mismatch.note("A client of another protocol version: the relay answers before reading anything else, then closes with 4003.")
	mismatch.frame(t, ">", &Handshake{ProtocolVersion: ProtocolVersion + 1})
	r(&mismatch, "error_fatal")

	return []transcript{sync, boot, resume, restored, mismatch}
}

// relayToClient lists the types the relay sends; clientToRelay those the
// client sends. ping and pong go either way.
var (
	relayToClient = map[MessageType]bool{TypeHandshakeAck: true, TypeChanges: true, TypeApplyResult: true, TypePushChanges: true,
		TypeSnapshotChunk: true, TypeSnapshotComplete: true, TypeError: true, TypePing: true, TypePong: true}
	clientToRelay = map[MessageType]bool{TypeHandshake: true, TypeGetChanges: true, TypeApplyChanges: true,
		TypeGetSnapshot: true, TypeResumeSnapshot: true, TypePing: true, TypePong: true}
)

// TestTranscripts replays the sessions under testdata/transcripts: every
// frame decodes, re-encodes to the same bytes, and travels in a direction
// its type allows.
func TestTranscripts(t *testing.T) {
	dir := filepath.Join("testdata", "transcripts")
	trs := sampleTranscripts(t)
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tr := range trs {
			if err := os.WriteFile(filepath.Join(dir, tr.name+".txt"), []byte(strings.Join(tr.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tr := range trs {
		t.Run(tr.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, tr.name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, DefaultMaxMessageSize)
			n := 0
			for line := 1; sc.Scan(); line++ {
				text := sc.Text()
				if text == "" || strings.HasPrefix(text, "#") {
					continue
				}
				dirn, frame, ok := strings.Cut(text, " ")
				if !ok || (dirn != ">" && dirn != "<") {
					t.Fatalf("line %d: want '> frame' or '< frame'", line)
				}
				raw := []byte(frame)
				if b64, ok := strings.CutPrefix(frame, "b64:"); ok {
					if raw, err = base64.StdEncoding.DecodeString(b64); err != nil {
						t.Fatalf("line %d: %v", line, err)
					}
				}
				m, err := Decode(raw)
				if err != nil {
					t.Fatalf("line %d: %v", line, err)
				}
				if allowed := map[string]map[MessageType]bool{">": clientToRelay, "<": relayToClient}[dirn]; !allowed[m.Type()] {
					t.Errorf("line %d: %s sent in direction %s", line, m.Type(), dirn)
				}
				if enc := transcriptLine(mustEncode(t, m)); enc != frame {
					t.Errorf("line %d: re-encoded frame differs:\n%s\n%s", line, enc, frame)
				}
				n++
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if want := 0; n == want {
				t.Fatal("empty transcript")
			}
			var wantFrames int
			for _, l := range tr.lines {
				if !strings.HasPrefix(l, "#") {
					wantFrames++
				}
			}
			if n != wantFrames {
				t.Errorf("%d frames, want %d (run go test -update)", n, wantFrames)
			}
		})
	}
}
