package engine

import (
	"errors"
	"testing"
)

// TestCoerceRowFirstError checks that coerceRow, which converts values in
// map order, reports the first failing column by name whatever that order,
// and checks notNull columns by name too.
func TestCoerceRowFirstError(t *testing.T) {
	tb := compileTable(TableDef{Name: "t", PrimaryKey: []string{"id"}, Columns: []ColumnDef{
		{Name: "id", Type: KindText}, {Name: "n", Type: KindInteger, NotNull: true},
		{Name: "b", Type: KindInteger}, {Name: "m", Type: KindText, NotNull: true}}})
	for i := 0; i < 50; i++ {
		_, err := tb.coerceRow(map[string]any{"id": "x", "zz": 1, "b": "not a number", "n": 1, "m": "y", "c": 2}, true)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Column != "b" {
			t.Fatalf("got %v, want the error of column b (the first by name)", err)
		}
		_, err = tb.coerceRow(map[string]any{"id": "x", "zz": 1, "c": 2}, true)
		if !errors.As(err, &ve) || ve.Column != "c" || ve.Reason != "unknown column" {
			t.Fatalf("got %v, want unknown column c", err)
		}
		_, err = tb.coerceRow(map[string]any{"id": "x", "n": nil}, true)
		if !errors.As(err, &ve) || ve.Column != "m" || ve.Reason != "is required (notNull) and has no default" {
			t.Fatalf("got %v, want column m required", err)
		}
	}
	row, err := tb.coerceRow(map[string]any{"id": "x", "n": 3.0, "m": "y"}, true)
	if err != nil || row["n"] != Int(3) || row["b"] != Null || len(row) != 4 {
		t.Fatalf("got %v, %v", row, err)
	}
}
