//go:build js && wasm

package jsbridge

import "testing"

// TestQueryOptions covers the where, orderBy, limit and offset forms.
func TestQueryOptions(t *testing.T) {
	db := openT(t)
	must(t, asyncfn("db", `
		const rows = [
			{id: "a", title: "Paris", n: 10, r: 1.5, ok: true, at: new Date(1000), data: new Uint8Array([1]), meta: {k: 1}},
			{id: "b", title: "Parma", n: 20, r: null, ok: false, at: new Date(2000), data: new Uint8Array([2]), meta: {k: 2}},
			{id: "c", title: "Porto", n: 2n ** 60n, r: -0, ok: null, at: null, data: null, meta: null},
			{id: "d", title: null, n: 5, r: 3, ok: true, at: new Date(3000), data: new Uint8Array([1]), meta: [1, 2]},
		];
		for (const r of rows) await db.insert("items", r);
	`).Invoke(db))
	cases := []struct{ opts, want string }{
		{`{}`, "a,b,c,d"},
		{`{where: {title: "Paris"}}`, "a"},
		{`{where: {title: {prefix: "Par"}}}`, "a,b"},
		{`{where: {title: {prefix: "Par"}, n: {gt: 10}}}`, "b"},
		{`{where: {n: {gte: 10, lt: 2n ** 60n}}}`, "a,b"},
		{`{where: {n: {gte: 2n ** 59n}}}`, "c"},
		{`{where: {id: {in: ["d", "a", "zz"]}}}`, "a,d"},
		{`{where: {n: {in: [5, 2n ** 60n]}}}`, "c,d"},
		{`{where: {r: null}}`, "b"},
		{`{where: {r: {ne: null}}}`, "a,c,d"},
		{`{where: {title: {ne: "Paris"}}}`, "b,c,d"},
		{`{where: {ok: true}}`, "a,d"},
		{`{where: {at: {gt: new Date(1500)}}}`, "b,d"},
		{`{where: {at: {lte: 2000}}}`, "a,b"},
		{`{where: {data: new Uint8Array([1])}}`, "a,d"},
		{`{where: {meta: {eq: {k: 2}}}}`, "b"},
		{`{where: {meta: [1, 2]}}`, "d"},
		{`{where: {id: {in: []}}}`, ""},
		{`{orderBy: "-n"}`, "c,b,a,d"},
		{`{orderBy: ["ok", "-id"]}`, "c,b,d,a"},
		{`{orderBy: [{column: "at", desc: true}, "id"]}`, "d,b,a,c"},
		{`{orderBy: "n", limit: 2}`, "d,a"},
		{`{orderBy: "n", limit: 2, offset: 1}`, "a,b"},
		{`{orderBy: "n", offset: 3}`, "c"},
		{`{orderBy: "n", offset: 9}`, ""},
		{`{where: undefined, orderBy: undefined, limit: undefined}`, "a,b,c,d"},
	}
	for _, c := range cases {
		got := must(t, asyncfn("db, o", `return (await db.query("items", o)).map((r) => r.id).join(",")`).Invoke(db, jsv(c.opts))).String()
		if got != c.want {
			t.Errorf("query %s = %q, want %q", c.opts, got, c.want)
		}
		if c.opts == `{}` || c.opts[:7] == `{where:` {
			if n := must(t, db.Call("count", "items", jsv(c.opts))).Int(); c.want != "" && n != len(splitComma(c.want)) || c.want == "" && n != 0 {
				t.Errorf("count %s = %d, want %d", c.opts, n, len(splitComma(c.want)))
			}
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
