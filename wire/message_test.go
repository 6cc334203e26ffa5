package wire

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
)

func TestRoundTripEveryMessage(t *testing.T) {
	seen := map[MessageType]bool{}
	for _, s := range sampleMessages(t) {
		t.Run(s.name, func(t *testing.T) {
			frame := roundTrip(t, s.m)
			if IsBinaryFrame(frame) {
				head, _, _, err := splitBinaryFrame(frame)
				if err != nil {
					t.Fatal(err)
				}
				frame = head
			}
			if !strings.HasPrefix(string(frame), `{"type":"`+string(s.m.Type())+`"`) {
				t.Fatalf("frame does not start with its type: %s", frame)
			}
		})
		seen[s.m.Type()] = true
	}
	for _, typ := range []MessageType{TypeHandshake, TypeHandshakeAck, TypeGetChanges, TypeChanges, TypeApplyChanges,
		TypeApplyResult, TypePushChanges, TypeGetSnapshot, TypeResumeSnapshot, TypeSnapshotChunk, TypeSnapshotComplete,
		TypePing, TypePong, TypeError} {
		if !seen[typ] {
			t.Errorf("no sample of %s", typ)
		}
	}
}

// TestDecodeAnyMemberOrder checks that "type" need not come first and that
// whitespace is allowed anywhere JSON allows it.
func TestDecodeAnyMemberOrder(t *testing.T) {
	site := siteA.String()
	for _, frame := range []string{
		`{"siteId":"` + site + `","databaseId":"db","protocolVersion":` + curVersion + `,"type":"handshake"}`,
		" {\n\t\"databaseId\" : \"db\" ,\r\n \"type\" : \"handshake\", \"siteId\":\"" + site + "\",\"protocolVersion\":" + curVersion + " } \n",
	} {
		m, err := Decode([]byte(frame))
		if err != nil {
			t.Fatalf("Decode(%s): %v", frame, err)
		}
		if want := (&Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "db", SiteID: siteA}); *m.(*Handshake) != *want {
			t.Fatalf("got %+v", m)
		}
	}
	// A rows chunk whose rows come before the tables they refer to.
	frame := `{"chunk":{"rows":[[null,[[0,"x",0,7],[1,2.5]]]],"bases":["AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4="],"key":[0],"columns":["a","b"],"table":"t","type":"rows"},"type":"snapshot_chunk"}`
	m, err := Decode([]byte(frame))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	rows := m.(*SnapshotChunk).Chunk.Rows
	if len(rows) != 1 || rows[0].Cells[1].Column != "b" || rows[0].Cells[1].HLC != hlcAt(0, 0, 8) || !rows[0].PK[0].Equal(model.Text("x")) {
		t.Fatalf("rows %+v", rows)
	}
}

func TestDecodeStrict(t *testing.T) {
	site := siteA.String()
	h := FormatHLC(hlcAt(0, 0, 1))
	cs := func(changes string) string {
		return `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"` + h + `","changes":[` + changes + `]}]}`
	}
	col := func(extra string) string {
		return cs(`{"type":"column","table":"t","pk":[1],"column":"c","value":1,"hlc":"` + h + `"` + extra + `}`)
	}
	del := func(extra string) string {
		return cs(`{"type":"delete","table":"t","pk":[1],"hlc":"` + h + `"` + extra + `}`)
	}
	mig := func(typ, ddl string) string {
		return `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"` + h + `","changes":[],"schemaMigrations":[{"type":"` + typ + `","table":"t","ddl":` + ddl + `,"hlc":"` + h + `"}]}]}`
	}
	chunk := func(c string) string { return `{"type":"snapshot_chunk","chunk":` + c + `}` }
	rowsKey := func(columns, key, bases, rows string) string {
		return chunk(`{"type":"rows","table":"t","columns":` + columns + `,"key":` + key + `,"bases":` + bases + `,"rows":` + rows + `}`)
	}
	rows := func(columns, bases, rows string) string { return rowsKey(columns, `[]`, bases, rows) }
	base := `"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4="`
	ckpt := func(extra string) string {
		return `{"type":"resume_snapshot","checkpoint":{"snapshotId":"s","siteId":"` + site + `","hlc":"` + h + `","cursor":1,"completedTables":[],"rowsApplied":0,"createdAt":5` + extra + `}}`
	}

	tests := []struct {
		name, frame string
		mention     []string
	}{
		// Frame level.
		{"not JSON", `hello`, []string{"want an object"}},
		{"not an object", `["ping"]`, []string{"want an object, got an array"}},
		{"no type", `{"x":1}`, []string{`missing required field "type"`}},
		{"type not a string", `{"type":1}`, []string{"type: want a string, got a number"}},
		{"type null", `{"type":null}`, []string{"type: want a string, got null"}},
		{"duplicate type", `{"type":"ping","type":"ping"}`, []string{`duplicate key "type"`}},
		{"unknown field", `{"type":"ping","x":1}`, []string{`unknown field "x"`}},
		{"case-insensitive match is unknown", `{"type":"get_changes","Since":1}`, []string{`unknown field "Since"`}},
		{"trailing data", `{"type":"ping"} {}`, []string{"unexpected data"}},
		{"truncated", `{"type":"ping"`, []string{"want ',' or '}'"}},
		{"invalid UTF-8", "{\"type\":\"error\",\"code\":\"X\",\"message\":\"\xc3\x28\"}", []string{"invalid UTF-8"}},
		// Cursors and counts.
		{"since null", `{"type":"get_changes","since":null}`, []string{"since: want a number, got null"}},
		{"since string", `{"type":"get_changes","since":"5"}`, []string{"since: want a number, got a string"}},
		{"since fraction", `{"type":"get_changes","since":5.0}`, []string{"since: want a non-negative integer"}},
		{"since exponent", `{"type":"get_changes","since":5e1}`, []string{"since"}},
		{"since negative", `{"type":"get_changes","since":-1}`, []string{"since"}},
		{"since above 2^53", `{"type":"get_changes","since":9007199254740993}`, []string{"since", "above the limit"}},
		{"ownAbove alone", `{"type":"get_changes","since":5,"ownAbove":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE"}`, []string{"ownAbove and ownUpTo go together"}},
		{"ownUpTo not above", `{"type":"get_changes","ownAbove":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","ownUpTo":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE"}`, []string{"ownUpTo not above ownAbove"}},
		{"changes missing more", `{"type":"changes","cursor":1,"changeSets":[]}`, []string{`missing required field "more"`}},
		{"changes missing cursor", `{"type":"changes","more":false,"changeSets":[]}`, []string{`missing required field "cursor"`}},
		{"changes more not bool", `{"type":"changes","cursor":1,"more":0,"changeSets":[]}`, []string{"more: want a boolean"}},
		{"changes null sets", `{"type":"changes","cursor":1,"more":false,"changeSets":null}`, []string{"changeSets: want an array, got null"}},
		{"push missing cursor", `{"type":"push_changes","changeSets":[]}`, []string{`"cursor"`}},
		{"apply_result missing count", `{"type":"apply_result","applied":1,"skipped":0,"conflicts":0}`, []string{`"transactions"`}},
		{"apply_result negative", `{"type":"apply_result","applied":-1,"skipped":0,"conflicts":0,"transactions":0}`, []string{"applied"}},
		{"apply_result cursor without first", `{"type":"apply_result","applied":1,"skipped":0,"conflicts":0,"transactions":1,"cursor":4,"chain":"xxD0AY1lfyiAW1jQpbFJgg"}`, []string{"first"}},
		{"apply_result cursor without chain", `{"type":"apply_result","applied":1,"skipped":0,"conflicts":0,"transactions":1,"first":4,"cursor":4}`, []string{"chain"}},
		{"apply_result first without cursor", `{"type":"apply_result","applied":1,"skipped":0,"conflicts":0,"transactions":1,"first":4}`, []string{"cursor"}},
		{"apply_result first above cursor", `{"type":"apply_result","applied":1,"skipped":0,"conflicts":0,"transactions":1,"first":5,"cursor":4,"chain":"xxD0AY1lfyiAW1jQpbFJgg"}`, []string{"first"}},
		{"apply_result first 0", `{"type":"apply_result","applied":1,"skipped":0,"conflicts":0,"transactions":1,"first":0,"cursor":4,"chain":"xxD0AY1lfyiAW1jQpbFJgg"}`, []string{"first"}},
		{"snapshot_complete cursor without chain", `{"type":"snapshot_complete","cursor":4}`, []string{"chain"}},
		{"snapshot_complete chain without cursor", `{"type":"snapshot_complete","chain":"xxD0AY1lfyiAW1jQpbFJgg"}`, []string{"cursor"}},
		{"snapshot_complete unknown member", `{"type":"snapshot_complete","first":4}`, []string{"first"}},
		{"apply_result mark out of range", `{"type":"apply_result","applied":1,"skipped":0,"conflicts":0,"transactions":1,"first":4,"cursor":4,"chain":"xxD0AY1lfyiAW1jQpbFJgg","horizons":[{"cursor":2,"wall":5,"chain":"xxD0AY1lfyiAW1jQpbFJgg"}]}`, []string{"horizons"}},
		{"apply_result requestId null", `{"type":"apply_result","requestId":null,"applied":1,"skipped":0,"conflicts":0,"transactions":0}`, []string{"requestId: want a string, got null"}},
		{"apply_changes missing changes", `{"type":"apply_changes","requestId":"a"}`, []string{`"changes"`}},
		{"apply_changes requestId number", `{"type":"apply_changes","requestId":1,"changes":[]}`, []string{"requestId: want a string"}},
		// Handshake.
		{"handshake version string", `{"type":"handshake","protocolVersion":"1"}`, []string{"protocolVersion: want a number"}},
		{"handshake version negative", `{"type":"handshake","protocolVersion":-1}`, []string{"protocolVersion"}},
		{"handshake version fraction", `{"type":"handshake","protocolVersion":1.5}`, []string{"protocolVersion"}},
		{"handshake duplicate version", `{"type":"handshake","protocolVersion":1000,"protocolVersion":` + curVersion + `}`, []string{"duplicate"}},
		{"handshake bad JSON past the version", `{"type":"handshake","protocolVersion":1000,"x":[}`, nil},
		{"handshake missing site", `{"type":"handshake","protocolVersion":` + curVersion + `,"databaseId":"d"}`, []string{`missing required field "siteId"`}},
		{"handshake token null", `{"type":"handshake","protocolVersion":` + curVersion + `,"siteId":"` + site + `","token":null}`, []string{"token: want a string, got null"}},
		{"handshake unknown field", `{"type":"handshake","protocolVersion":` + curVersion + `,"siteId":"` + site + `","caps":[]}`, []string{`unknown field "caps"`}},
		{"handshake_ack missing connection", `{"type":"handshake_ack","protocolVersion":` + curVersion + `,"databaseId":"d","serverSiteId":"` + site + `"}`, []string{`"connectionId"`}},
		{"handshake_ack empty database", `{"type":"handshake_ack","protocolVersion":` + curVersion + `,"databaseId":"","serverSiteId":"` + site + `","connectionId":"c"}`, []string{"databaseId: must not be empty"}},
		// Sealed ChangeSets (version 7).
		{"envelope and changes", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","changes":[],"envelope":"` + strings.Repeat("A", 52) + `"}]}`, []string{"either an envelope or changes"}},
		{"envelope too short", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","envelope":"AAAA"}]}`, []string{"shorter than an envelope's 37"}},
		{"envelope not base64", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4AAAAE","envelope":"A-B_"}]}`, []string{"not padded standard base64"}},
		{"sealed without hlc", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","envelope":"` + strings.Repeat("A", 52) + `"}]}`, []string{`missing required field "hlc"`}},
		{"handshake sealed string", `{"type":"handshake","protocolVersion":` + curVersion + `,"siteId":"` + site + `","sealed":"yes"}`, []string{"sealed: want a boolean"}},
		// Error.
		{"error missing message", `{"type":"error","code":"X"}`, []string{`"message"`}},
		{"error empty code", `{"type":"error","code":"","message":""}`, []string{"code: must not be empty"}},
		{"error fatal null", `{"type":"error","code":"X","message":"","fatal":null}`, []string{"fatal: want a boolean, got null"}},
		// ChangeSet.
		{"changeset missing hlc", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","changes":[]}]}`, []string{`changes[0]`, `missing required field "hlc"`}},
		{"changeset empty transaction", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"","hlc":"` + h + `","changes":[]}]}`, []string{"changes[0].transactionId: must not be empty"}},
		{"changeset null migrations", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"` + h + `","changes":[],"schemaMigrations":null}]}`, []string{"schemaMigrations: want an array, got null"}},
		{"changeset unknown field", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"` + h + `","changes":[],"schema":"main"}]}`, []string{`unknown field "schema"`}},
		{"hlc short", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"` + h[:39] + `","changes":[]}]}`, []string{"changes[0].hlc", "40"}},
		{"hlc url alphabet", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":"` + strings.ReplaceAll(h, "+", "-") + `","changes":[]}]}`, []string{"changes[0].hlc", "base64"}},
		{"hlc null", `{"type":"apply_changes","changes":[{"siteId":"` + site + `","transactionId":"t","hlc":null,"changes":[]}]}`, []string{"hlc: want an HLC (a string), got null"}},
		{"site padded", `{"type":"apply_changes","changes":[{"siteId":"` + site + `==","transactionId":"t","hlc":"` + h + `","changes":[]}]}`, []string{"changes[0].siteId"}},
		// Change.
		{"empty pk", col(`,"pk":[]`), nil}, // duplicate pk key, caught first
		{"pk empty", cs(`{"type":"column","table":"t","pk":[],"column":"c","value":1,"hlc":"` + h + `"}`), []string{"changes[0].changes[0].pk: primary key must not be empty"}},
		{"pk null", cs(`{"type":"column","table":"t","pk":null,"column":"c","value":1,"hlc":"` + h + `"}`), []string{"pk: want an array, got null"}},
		{"pk not array", cs(`{"type":"column","table":"t","pk":1,"column":"c","value":1,"hlc":"` + h + `"}`), []string{"pk: want an array"}},
		{"table null", cs(`{"type":"column","table":null,"pk":[1],"column":"c","value":1,"hlc":"` + h + `"}`), []string{"table: want a string, got null"}},
		{"table empty", cs(`{"type":"column","table":"","pk":[1],"column":"c","value":1,"hlc":"` + h + `"}`), []string{"table: must not be empty"}},
		{"column change missing value", cs(`{"type":"column","table":"t","pk":[1],"column":"c","hlc":"` + h + `"}`), []string{`missing required field "value"`}},
		{"column change missing column", cs(`{"type":"column","table":"t","pk":[1],"value":1,"hlc":"` + h + `"}`), []string{`missing required field "column"`}},
		{"change missing type", cs(`{"table":"t","pk":[1],"column":"c","value":1,"hlc":"` + h + `"}`), []string{`missing required field "type"`}},
		{"change unknown type", cs(`{"type":"update","table":"t","pk":[1],"hlc":"` + h + `"}`), []string{`unknown change type "update"`}},
		{"prior value alone", col(`,"priorValue":1`), []string{"priorValue and priorHlc must come together"}},
		{"prior hlc alone", col(`,"priorHlc":"` + h + `"`), []string{"priorValue and priorHlc must come together"}},
		{"prior hlc null", col(`,"priorValue":1,"priorHlc":null`), []string{"priorHlc: want an HLC"}},
		{"column change with priorRow", col(`,"priorRow":{}`), []string{`field "priorRow" not allowed in a column change`}},
		{"delete with value", del(`,"value":1`), []string{`field "value" not allowed in a delete change`}},
		{"delete with column", del(`,"column":"c"`), []string{`field "column" not allowed in a delete change`}},
		{"delete with prior", del(`,"priorValue":1,"priorHlc":"` + h + `"`), []string{`not allowed in a delete change`}},
		{"delete priorRow null", del(`,"priorRow":null`), []string{"priorRow: want an object, got null"}},
		{"delete priorRow duplicate", del(`,"priorRow":{"a":1,"a":2}`), []string{`duplicate key "a"`}},
		{"delete priorRow bad value", del(`,"priorRow":{"a":{"__bin":1}}`), []string{`priorRow["a"].__bin`}},
		{"change unknown field", col(`,"schema":"main"`), []string{`unknown field "schema"`}},
		{"duplicate value", col(`,"value":2`), []string{`duplicate key "value"`}},
		// Migrations.
		{"migration unknown type", mig("retype_table", `{}`), []string{`unknown migration type "retype_table"`}},
		{"migration ddl string", mig("create_table", `"CREATE TABLE t (a)"`), []string{"ddl: want an object, got a string"}},
		{"create_table name differs", mig("create_table", `{"name":"u","columns":[],"primaryKey":[]}`), []string{`table definition "u" differs from table "t"`}},
		{"create_table missing primaryKey", mig("create_table", `{"name":"t","columns":[]}`), []string{`ddl: missing required field "primaryKey"`}},
		{"create_table columns object", mig("create_table", `{"name":"t","columns":{"a":"text"},"primaryKey":[]}`), []string{"ddl.columns: want an array"}},
		{"create_table bad column type", mig("create_table", `{"name":"t","columns":[{"name":"a","type":"varchar"}],"primaryKey":["a"]}`), []string{"ddl.columns[0].type", "varchar"}},
		{"add_column as table", mig("add_column", `{"name":"t","columns":[],"primaryKey":[]}`), []string{`ddl: unknown field "columns"`}},
		{"add_column notNull null", mig("add_column", `{"name":"c","type":"text","notNull":null}`), []string{"ddl.notNull: want a boolean, got null"}},
		{"add_index missing columns", mig("add_index", `{"name":"i"}`), []string{`ddl: missing required field "columns"`}},
		{"add_index empty column name", mig("add_index", `{"name":"i","columns":[""]}`), []string{"ddl.columns[0]: must not be empty"}},
		// Snapshot chunks.
		{"chunk unknown type", chunk(`{"type":"tombstone"}`), []string{`chunk.type`, `unknown chunk type "tombstone"`}},
		{"chunk missing", `{"type":"snapshot_chunk"}`, []string{`missing required field "chunk"`}},
		{"chunk null", `{"type":"snapshot_chunk","chunk":null}`, []string{"chunk: want an object, got null"}},
		{"header missing cursor", chunk(`{"type":"header","format":1,"snapshotId":"s","siteId":"` + site + `","hlc":"` + h + `","tables":[],"rowCount":0}`), []string{`chunk: missing required field "cursor"`}},
		{"header field of footer", chunk(`{"type":"header","tableCount":1}`), []string{`unknown field "tableCount"`}},
		{"table_start empty table", chunk(`{"type":"table_start","table":""}`), []string{"chunk.table: must not be empty"}},
		{"footer negative", chunk(`{"type":"footer","tableCount":-1,"rowCount":0}`), []string{"chunk.tableCount"}},
		{"rows missing bases", rows(`["a"]`, `null`, `[]`), []string{"chunk.bases: want an array, got null"}},
		{"rows duplicate column", rows(`["a","a"]`, `[]`, `[]`), []string{`duplicate column "a"`}},
		{"rows base short", rows(`["a"]`, `["AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4"]`, `[]`), []string{"chunk.bases[0]", "36"}},
		{"rows base unpadded", rows(`["a"]`, `["AAABmszozAAAAAGPOlx+EUKboA3EVW4hkP4A"]`, `[]`), []string{"chunk.bases[0]", "base64"}},
		{"rows column out of range", rows(`["a"]`, `[`+base+`]`, `[[[1],[[1,1,0,0]]]]`), []string{"chunk.rows[0][0]", "column index 1 out of range"}},
		{"rows base out of range", rows(`["a"]`, `[`+base+`]`, `[[[1],[[0,1,1,0]]]]`), []string{"chunk.rows[0][0]", "base index 1 out of range"}},
		{"rows first cell short", rows(`["a"]`, `[`+base+`]`, `[[[1],[[0,1]]]]`), []string{"first cell of a chunk"}},
		{"rows opSeq too big", rows(`["a"]`, `[`+base+`]`, `[[[1],[[0,1,0,4294967296]]]]`), []string{"4294967296"}},
		{"rows opSeq overflow", rows(`["a","b"]`, `[`+base+`]`, `[[[1],[[0,1,0,4294967295],[1,2]]]]`), []string{"overflows"}},
		{"rows cell of three", rows(`["a"]`, `[`+base+`]`, `[[[1],[[0,1,0]]]]`), []string{"want ','"}},
		{"rows cell of five", rows(`["a"]`, `[`+base+`]`, `[[[1],[[0,1,0,0,0]]]]`), []string{"a cell is"}},
		{"rows empty cell", rows(`["a"]`, `[`+base+`]`, `[[[1],[[]]]]`), []string{"a cell is"}},
		{"rows row of one", rows(`["a"]`, `[`+base+`]`, `[[[1]]]`), []string{"want the row's cells"}},
		{"rows row of four", rows(`["a"]`, `[`+base+`]`, `[[[1],[],[0,0],1]]`), []string{"a row is"}},
		{"rows empty pk", rows(`["a"]`, `[`+base+`]`, `[[[],[]]]`), []string{"primary key must not be empty"}},
		{"rows tombstone null", rows(`["a"]`, `[`+base+`]`, `[[[1],[],null]]`), []string{"want an array, got null"}},
		{"rows null", rows(`["a"]`, `[]`, `null`), []string{"chunk.rows: want an array, got null"}},
		{"rows missing key", chunk(`{"type":"rows","table":"t","columns":[],"bases":[],"rows":[]}`), []string{`missing required field "key"`}},
		{"rows key null", rowsKey(`["a"]`, `null`, `[]`, `[]`), []string{"chunk.key: want an array, got null"}},
		{"rows key out of range", rowsKey(`["a"]`, `[1]`, `[]`, `[]`), []string{"chunk.key[0]", "out of range"}},
		{"rows key out of range before rows", chunk(`{"type":"rows","table":"t","rows":[],"columns":["a"],"key":[1],"bases":[]}`), []string{"chunk.key[0]", "out of range"}},
		{"rows null pk without key", rows(`["a"]`, `[`+base+`]`, `[[null,[[0,1,0,0]]]]`), []string{"chunk.rows[0]", "want a primary key"}},
		{"rows null pk without its cell", rowsKey(`["a","b"]`, `[1]`, `[`+base+`]`, `[[null,[[0,1,0,0]]]]`), []string{"chunk.rows[0]", `no cell for key column "b"`}},
		{"rows pk not array", rowsKey(`["a"]`, `[0]`, `[`+base+`]`, `[[1,[[0,1,0,0]]]]`), []string{"chunk.rows[0]", "want a primary key"}},
		// Checkpoint.
		{"checkpoint unknown field", ckpt(`,"lastTableIndex":0`), []string{`checkpoint: unknown field "lastTableIndex"`}},
		{"checkpoint missing", `{"type":"resume_snapshot"}`, []string{`missing required field "checkpoint"`}},
		{"checkpoint createdAt null", strings.Replace(ckpt(""), `"createdAt":5`, `"createdAt":null`, 1), []string{"checkpoint.createdAt: want a number, got null"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantDecodeError(t, tt.frame, ErrMalformed, tt.mention...)
			if _, err := Decode([]byte(tt.frame)); errors.Is(err, ErrUnknownType) {
				t.Fatalf("%v matches ErrUnknownType", err)
			}
		})
	}
}

func TestUnknownType(t *testing.T) {
	m, err := Decode([]byte(`{"type":"subscribe","tables":["a"]}`))
	if err == nil || !errors.Is(err, ErrUnknownType) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("Decode = %v, %v; want ErrUnknownType", m, err)
	}
	if DecodeErrorCode(err) != CodeUnknownMessage {
		t.Fatalf("DecodeErrorCode(%v) = %s", err, DecodeErrorCode(err))
	}
	// An unknown type in a frame that is not valid JSON is a malformed frame.
	_, err = Decode([]byte(`{"type":"subscribe","tables":[}`))
	if err == nil || errors.Is(err, ErrUnknownType) || DecodeErrorCode(err) != CodeMessageError {
		t.Fatalf("Decode of bad JSON with unknown type: %v", err)
	}
}

func TestHandshakeVersionFirst(t *testing.T) {
	site := siteA.String()
	tests := []struct {
		frame   string
		version int
	}{
		// Absent: decodes to 0, whatever else is wrong, so the relay can
		// answer PROTOCOL_VERSION_MISMATCH.
		{`{"type":"handshake","siteId":"` + site + `"}`, 0},
		{`{"type":"handshake"}`, 0},
		{`{"type":"handshake","sinceHLC":"x","siteId":"not a site id"}`, 0},
		// Another version: its other fields follow its own rules.
		{`{"type":"handshake","protocolVersion":1000,"databaseId":"d","siteId":"` + site + `","capabilities":["zstd"]}`, 1000},
		{`{"capabilities":{"a":[1]},"protocolVersion":0,"type":"handshake"}`, 0},
	}
	for _, tt := range tests {
		m, err := Decode([]byte(tt.frame))
		if err != nil {
			t.Fatalf("Decode(%s): %v", tt.frame, err)
		}
		if got := *m.(*Handshake); got != (Handshake{ProtocolVersion: tt.version}) {
			t.Fatalf("Decode(%s) = %+v, want only ProtocolVersion %d", tt.frame, got, tt.version)
		}
	}
	// The same holds for handshake_ack, which the client checks.
	m, err := Decode([]byte(`{"type":"handshake_ack","serverSiteId":"` + site + `","connectionId":"c"}`))
	if err != nil || *m.(*HandshakeAck) != (HandshakeAck{}) {
		t.Fatalf("ack without version: %+v, %v", m, err)
	}
	m, err = Decode([]byte(`{"type":"handshake_ack","protocolVersion":1000,"x":1}`))
	if err != nil || *m.(*HandshakeAck) != (HandshakeAck{ProtocolVersion: 1000}) {
		t.Fatalf("ack of another version: %+v, %v", m, err)
	}
	// The current version without a databaseId decodes, so the relay can
	// answer MISSING_DATABASE_ID.
	m, err = Decode([]byte(`{"type":"handshake","protocolVersion":` + curVersion + `,"siteId":"` + site + `"}`))
	if err != nil || *m.(*Handshake) != (Handshake{ProtocolVersion: ProtocolVersion, SiteID: siteA}) {
		t.Fatalf("handshake without databaseId: %+v, %v", m, err)
	}
	roundTrip(t, &Handshake{ProtocolVersion: ProtocolVersion, SiteID: siteA})
	roundTrip(t, &Handshake{ProtocolVersion: ProtocolVersion + 1})
	roundTrip(t, &HandshakeAck{ProtocolVersion: ProtocolVersion + 1})
}

func TestErrorFrameFatalFallback(t *testing.T) {
	tests := []struct {
		frame string
		fatal bool
	}{
		{`{"type":"error","code":"AUTH_FAILED","message":"no"}`, true},
		{`{"type":"error","code":"ALREADY_AUTHENTICATED","message":""}`, true},
		{`{"type":"error","code":"APPLY_CHANGES_ERROR","message":"x"}`, false},
		{`{"type":"error","code":"SOMETHING_NEW","message":"x"}`, false},
		{`{"type":"error","code":"AUTH_FAILED","message":"no","fatal":false}`, false}, // the flag wins
		{`{"type":"error","code":"SOMETHING_NEW","message":"x","fatal":true}`, true},
	}
	for _, tt := range tests {
		m, err := Decode([]byte(tt.frame))
		if err != nil {
			t.Fatalf("Decode(%s): %v", tt.frame, err)
		}
		if e := m.(*Error); e.Fatal != tt.fatal {
			t.Errorf("Decode(%s).Fatal = %v, want %v", tt.frame, e.Fatal, tt.fatal)
		}
	}
	var err error = NewError(CodeAuthFailed, "token for %q rejected", "db")
	if err.Error() != `relay error AUTH_FAILED: token for "db" rejected` {
		t.Fatalf("Error() = %q", err)
	}
	var e *Error
	if !errors.As(err, &e) || !e.Fatal {
		t.Fatalf("NewError(AUTH_FAILED) = %+v", e)
	}
}

func TestErrorCodes(t *testing.T) {
	fatal := map[ErrorCode]int{
		CodeProtocolVersionMismatch: 4003,
		CodeAuthFailed:              4001,
		CodeMissingDatabaseID:       4002,
		CodeAlreadyAuthenticated:    4004,
	}
	all := []ErrorCode{CodeProtocolVersionMismatch, CodeAuthFailed, CodeMissingDatabaseID, CodeAlreadyAuthenticated,
		CodeNotAuthenticated, CodeApplyChangesError, CodeApplyChangesRefused, CodeClockDrift, CodeGetChangesError, CodeSnapshotError, CodeUnknownMessage,
		CodeMessageError, CodeMessageTooLarge, CodeSnapshotRequired, "FUTURE_CODE"}
	for _, c := range all {
		wantClose, wantFatal := fatal[c]
		if c.Fatal() != wantFatal || IsFatal(string(c)) != wantFatal || c.CloseStatus() != wantClose {
			t.Errorf("%s: Fatal %v IsFatal %v CloseStatus %d; want %v, %d", c, c.Fatal(), IsFatal(string(c)), c.CloseStatus(), wantFatal, wantClose)
		}
		if NewError(c, "x").Fatal != wantFatal {
			t.Errorf("NewError(%s).Fatal wrong", c)
		}
	}
	if DecodeErrorCode(errors.New("other")) != CodeMessageError {
		t.Error("DecodeErrorCode of a plain error")
	}
	// CLOCK_DRIFT, and only it, matches model.ErrClockDrift, also when
	// decoded and wrapped.
	for _, c := range all {
		m, err := Decode([]byte(`{"type":"error","code":"` + string(c) + `","message":"m","requestId":"apply-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := errors.Is(fmt.Errorf("wrapped: %w", m.(*Error)), model.ErrClockDrift); got != (c == CodeClockDrift) {
			t.Errorf("%s: errors.Is(model.ErrClockDrift) = %v", c, got)
		}
	}
}

func TestValidDatabaseID(t *testing.T) {
	for _, ok := range []string{"a", "trips", "acme:trips-2026.v1_x", strings.Repeat("z", 128), "0", "..", "-"} {
		if !ValidDatabaseID(ok) {
			t.Errorf("ValidDatabaseID(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", strings.Repeat("z", 129), "a b", "a/b", "é", "a\x00", "trips!", "a\n"} {
		if ValidDatabaseID(bad) {
			t.Errorf("ValidDatabaseID(%q) = true", bad)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	css := sampleChangeSets(t)
	withChange := func(c model.Change) Message {
		cs := css[1]
		cs.Changes = []model.Change{c}
		return &ApplyChanges{ChangeSets: []model.ChangeSet{cs}}
	}
	good := css[1].Changes[0]
	table := tripsTable()
	tests := []struct {
		name    string
		m       Message
		mention string
	}{
		{"nil", nil, "nil message"},
		{"cursor above 2^53", &Changes{Cursor: MaxCursor + 1}, "cursor"},
		{"since above 2^53", &GetChanges{Since: math.MaxUint64}, "since"},
		{"negative count", &ApplyResult{ApplyResult: model.ApplyResult{Applied: -1}}, "applied"},
		{"empty pk", withChange(model.Change{Type: model.ColumnChange, Table: "t", Column: "c", HLC: good.HLC}), "changes[0].changes[0].pk"},
		{"empty table", withChange(model.Change{Type: model.ColumnChange, PK: good.PK, Column: "c", HLC: good.HLC}), "changes[0].changes[0].table"},
		{"empty column", withChange(model.Change{Type: model.ColumnChange, Table: "t", PK: good.PK, HLC: good.HLC}), "column"},
		{"unknown change type", withChange(model.Change{Table: "t", PK: good.PK}), "unknown change type"},
		{"NaN value", withChange(model.Change{Type: model.ColumnChange, Table: "t", PK: good.PK, Column: "c", Value: model.Real(math.NaN())}), "changes[0].changes[0].value"},
		{"NaN in pk", withChange(model.Change{Type: model.ColumnChange, Table: "t", PK: []model.Value{model.Real(math.Inf(1))}, Column: "c"}), "pk[0]"},
		{"delete with value", withChange(model.Change{Type: model.RowDeletion, Table: "t", PK: good.PK, Value: model.Int(1)}), "delete carries no"},
		{"column change with row", withChange(model.Change{Type: model.ColumnChange, Table: "t", PK: good.PK, Column: "c", PriorRow: model.Row{}}), "priorRow"},
		{"bad text in row", withChange(model.Change{Type: model.RowDeletion, Table: "t", PK: good.PK, PriorRow: model.Row{"a": model.Text("\xff")}}), `priorRow["a"]`},
		{"empty transaction id", &ApplyChanges{ChangeSets: []model.ChangeSet{{SiteID: siteA}}}, "transactionId"},
		{"migration mismatch", &ApplyChanges{ChangeSets: []model.ChangeSet{{TransactionID: "t", Migrations: []model.SchemaMigration{{Type: model.AddColumn, TableName: "t", Table: &table}}}}}, "does not match"},
		{"migration two definitions", &ApplyChanges{ChangeSets: []model.ChangeSet{{TransactionID: "t", Migrations: []model.SchemaMigration{{Type: model.CreateTable, TableName: "trips", Table: &table, Index: &model.IndexDef{}}}}}}, "exactly one"},
		{"create_table name", &ApplyChanges{ChangeSets: []model.ChangeSet{{TransactionID: "t", Migrations: []model.SchemaMigration{{Type: model.CreateTable, TableName: "x", Table: &table}}}}}, "differs"},
		{"column of null type", &ApplyChanges{ChangeSets: []model.ChangeSet{{TransactionID: "t", Migrations: []model.SchemaMigration{{Type: model.AddColumn, TableName: "t", Column: &model.ColumnDef{Name: "c"}}}}}}, "type"},
		{"default without HasDefault", &ApplyChanges{ChangeSets: []model.ChangeSet{{TransactionID: "t", Migrations: []model.SchemaMigration{{Type: model.AddColumn, TableName: "t", Column: &model.ColumnDef{Name: "c", Type: model.KindInteger, Default: model.Int(1)}}}}}}, "HasDefault"},
		{"header chunk without header", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader}}, "chunk.header"},
		{"rows chunk with footer", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "t", Footer: &model.SnapshotFooter{}}}, "footer"},
		{"table_start without table", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkTableStart}}, "table"},
		{"unknown chunk", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: "tombstone"}}, "unknown chunk type"},
		{"rows with empty pk", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "t", Rows: []model.SnapshotRow{{}}}}, "chunk.rows[0].pk"},
		{"rows with stray tombstone", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "t", Rows: []model.SnapshotRow{{PK: good.PK, Tombstone: good.HLC}}}}, "HasTombstone"},
		{"header empty id", &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkHeader, Header: &model.SnapshotHeader{}}}, "snapshotId"},
		{"checkpoint cursor", &ResumeSnapshot{Checkpoint: model.SnapshotCheckpoint{SnapshotID: "s", Cursor: MaxCursor + 1}}, "checkpoint.cursor"},
		{"error without code", &Error{Message: "x"}, "code"},
		{"ack without connection", &HandshakeAck{ProtocolVersion: ProtocolVersion, DatabaseID: "d"}, "connectionId"},
		{"negative version", &Handshake{ProtocolVersion: -1}, "protocolVersion"},
		{"bad UTF-8 token", &Handshake{ProtocolVersion: 3, Token: "\xff"}, "token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.m)
			if err == nil {
				t.Fatalf("Encode = %s, want an error", b)
			}
			if b != nil {
				t.Fatalf("Encode returned bytes with its error")
			}
			if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("Encode: %v; want ErrInvalidMessage mentioning %q", err, tt.mention)
			}
		})
	}
}

func TestChangeSetMarshal(t *testing.T) {
	for _, cs := range sampleChangeSets(t) {
		b, err := MarshalChangeSet(&cs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalChangeSet(b)
		if err != nil {
			t.Fatalf("UnmarshalChangeSet(%s): %v", b, err)
		}
		b2, _ := MarshalChangeSet(&got)
		if string(b2) != string(b) {
			t.Fatalf("round trip differs:\n%s\n%s", b, b2)
		}
	}
	if _, err := UnmarshalChangeSet([]byte(`{}`)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("UnmarshalChangeSet({}) = %v", err)
	}
}

// TestRowsChunkShape pins the compact rows encoding on a small example.
func TestRowsChunkShape(t *testing.T) {
	b1 := model.HLC{Wall: 1000, Site: siteA}
	b2 := model.HLC{Wall: 2000, Counter: 1, Site: siteB}
	at := func(b model.HLC, op uint32) model.HLC { b.OpSeq = op; return b }
	rows := []model.SnapshotRow{
		{PK: []model.Value{model.Int(1)}, Cells: []model.SnapshotCell{
			{Column: "id", Value: model.Int(1), HLC: at(b1, 0)},
			{Column: "name", Value: model.Text("Vila"), HLC: at(b1, 1)},
		}},
		{PK: []model.Value{model.Int(2)}, Cells: []model.SnapshotCell{
			{Column: "id", Value: model.Int(2), HLC: at(b1, 2)},           // continues the previous row's run
			{Column: "name", Value: model.Text("Encamp"), HLC: at(b2, 7)}, // another base
			{Column: "lat", Value: model.Text("42.53474"), HLC: at(b2, 8)},
		}},
		{PK: []model.Value{model.Int(3)}, HasTombstone: true, Tombstone: at(b2, 9)},
		{PK: []model.Value{model.Int(4), model.Text("x")}, Cells: []model.SnapshotCell{
			{Column: "name", Value: model.Null, HLC: at(b1, 5)},
		}, HasTombstone: true, Tombstone: at(b1, 3)},
	}
	m := &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "cities", Rows: rows}}
	frame := roundTrip(t, m)
	// The key is the "id" column (index 0): rows whose pk is their id
	// cell's value write null instead.
	want := `{"type":"snapshot_chunk","chunk":{"type":"rows","table":"cities","columns":["id","name","lat"],"key":[0],` +
		`"bases":["` + baseText(b1) + `","` + baseText(b2) + `"],"rows":[` +
		`[null,[[0,1,0,0],[1,"Vila"]]],` +
		`[null,[[0,2],[1,"Encamp",1,7],[2,"42.53474"]]],` +
		`[[3],[],[1,9]],` +
		`[[4,"x"],[[1,null,0,5]],[0,3]]]}}`
	if string(frame) != want {
		t.Fatalf("rows chunk\n got %s\nwant %s", frame, want)
	}
	// No key when the first row with cells does not hold its pk.
	rows[0].Cells[0].Value = model.Int(100)
	frame = roundTrip(t, m)
	if !strings.Contains(string(frame), `"key":[],`) || !strings.Contains(string(frame), `[[1],[[0,100,0,0]`) {
		t.Fatalf("rows chunk without a key: %s", frame)
	}
	// A composite key, in pk order, not column order.
	comp := []model.SnapshotRow{{PK: []model.Value{model.Text("FR"), model.Int(7)}, Cells: []model.SnapshotCell{
		{Column: "n", Value: model.Int(7), HLC: at(b1, 0)}, {Column: "cc", Value: model.Text("FR"), HLC: at(b1, 1)}}}}
	frame = roundTrip(t, &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "t", Rows: comp}})
	if !strings.Contains(string(frame), `"key":[1,0],`) || !strings.Contains(string(frame), `[null,[[0,7,0,0],[1,"FR"]]]`) {
		t.Fatalf("rows chunk with a composite key: %s", frame)
	}
	// An empty rows chunk.
	roundTrip(t, &SnapshotChunk{Chunk: model.SnapshotChunk{Type: model.ChunkRows, Table: "cities"}})
}

func baseText(h model.HLC) string { return string(appendBaseText(nil, h)) }

// TestEncodeClient: EncodeClient writes exactly Encode's frame (or error)
// for each message a client sends, and the client's messages are those of
// the samples whose direction is client → relay or both.
func TestEncodeClient(t *testing.T) {
	clientTypes := map[MessageType]bool{TypeHandshake: true, TypeGetChanges: true, TypeApplyChanges: true,
		TypeGetSnapshot: true, TypeResumeSnapshot: true, TypePutCheckpoint: true, TypePing: true, TypePong: true}
	seen := map[MessageType]bool{}
	for _, s := range sampleMessages(t) {
		cm, ok := s.m.(ClientMessage)
		if ok != clientTypes[s.m.Type()] {
			t.Errorf("%s: %T is a ClientMessage: %v, want %v", s.name, s.m, ok, !ok)
			continue
		}
		if !ok {
			continue
		}
		seen[s.m.Type()] = true
		want, werr := Encode(s.m)
		got, err := EncodeClient(cm)
		if string(got) != string(want) || (err == nil) != (werr == nil) {
			t.Errorf("%s: EncodeClient = %s, %v; Encode = %s, %v", s.name, got, err, want, werr)
		}
	}
	if len(seen) != len(clientTypes) {
		t.Errorf("samples cover client messages %v, want all of %v", seen, clientTypes)
	}
	// An invalid message is refused alike.
	bad := &Handshake{ProtocolVersion: ProtocolVersion, DatabaseID: "d", SiteID: siteA, Cursor: 4}
	if _, err := EncodeClient(bad); err == nil {
		t.Errorf("EncodeClient(handshake with a cursor but no serverSiteId) succeeded")
	} else if _, werr := Encode(bad); werr == nil || werr.Error() != err.Error() {
		t.Errorf("EncodeClient error %v, Encode error %v", err, werr)
	}
}

// curVersion is ProtocolVersion as frames spell it, so that tests of the
// current version's frames survive a version bump.
var curVersion = strconv.Itoa(ProtocolVersion)

// TestDecodeServer checks that DecodeServer decodes a relay's messages as
// Decode does and refuses a client's as malformed, not as an unknown
// (newer) type.
func TestDecodeServer(t *testing.T) {
	for _, s := range sampleMessages(t) {
		frame, err := Encode(s.m)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want, werr := Decode(frame)
		got, err := DecodeServer(frame)
		_, client := s.m.(ClientMessage)
		if client && s.m.Type() != TypePing && s.m.Type() != TypePong {
			if err == nil || !errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnknownType) {
				t.Errorf("%s: DecodeServer = %v, %v; want a malformed-message error", s.name, got, err)
			}
			continue
		}
		if werr != nil || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: DecodeServer = %#v, %v; Decode = %#v, %v", s.name, got, err, want, werr)
		}
	}
	if _, err := DecodeServer([]byte(`{"type":"subscribe","tables":["a"]}`)); !errors.Is(err, ErrUnknownType) {
		t.Errorf("DecodeServer of an unknown type: %v, want ErrUnknownType", err)
	}
}
