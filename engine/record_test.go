package engine

// Site ids and HLCs are text in encoding/json and in log/slog's JSON and
// text handlers (issue 10 §11: the relay's JSON logs printed a site id as 16
// numbers), and the text parses back.

func jsonV(s string) Value { return rawValue(KindJSON, s) }
