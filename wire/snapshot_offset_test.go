package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/replica-sync/replica/model"
)

// TestChunkOffsets (version 4): rows and table_end chunks carry the count
// of the table's row entries sent before them; 0 is omitted (and read back
// as 0), a table_start has none, and an offset that is negative, above
// 2^53, repeated or on a table_start is refused.
func TestChunkOffsets(t *testing.T) {
	for _, c := range []model.SnapshotChunk{
		{Type: model.ChunkRows, Table: "trips", Rows: sampleRows(t), Offset: 3},
		{Type: model.ChunkRows, Table: "trips", Rows: sampleRows(t)},
		{Type: model.ChunkTableEnd, Table: "trips", Offset: MaxCursor},
		{Type: model.ChunkTableEnd, Table: "trips"},
	} {
		b := roundTrip(t, &SnapshotChunk{Chunk: c})
		if has := strings.Contains(string(b), `"offset"`); has != (c.Offset != 0) {
			t.Errorf("%s: offset %d encoded: %v", b, c.Offset, has)
		}
	}
	for _, c := range []model.SnapshotChunk{
		{Type: model.ChunkTableStart, Table: "trips", Offset: 1},
		{Type: model.ChunkTableEnd, Table: "trips", Offset: -1},
		{Type: model.ChunkRows, Table: "trips", Offset: MaxCursor + 1},
	} {
		if b, err := Encode(&SnapshotChunk{Chunk: c}); !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("Encode(%s offset %d) = %s, %v; want ErrInvalidMessage naming offset", c.Type, c.Offset, b, err)
		}
	}
	chunk := func(c string) string { return `{"type":"snapshot_chunk","chunk":` + c + `}` }
	for name, frame := range map[string]string{
		"table_start with offset": chunk(`{"type":"table_start","table":"t","offset":1}`),
		"negative":                chunk(`{"type":"table_end","table":"t","offset":-1}`),
		"above 2^53":              chunk(`{"type":"table_end","table":"t","offset":9007199254740993}`),
		"twice":                   chunk(`{"type":"table_end","table":"t","offset":1,"offset":1}`),
		"a string":                chunk(`{"type":"rows","table":"t","offset":"1","columns":[],"key":[],"bases":[],"rows":[]}`),
	} {
		if m, err := Decode([]byte(frame)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: Decode(%s) = %+v, %v; want ErrMalformed naming offset", name, frame, m, err)
		}
	}
}
