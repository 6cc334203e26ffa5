package kv

import (
	"bytes"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct {
		p, want []byte
	}{
		{nil, nil},
		{[]byte{}, nil},
		{[]byte{0xff}, nil},
		{[]byte{0xff, 0xff, 0xff}, nil},
		{[]byte("a"), []byte("b")},
		{[]byte("ab"), []byte("ac")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{'a', 0xff, 0xff}, []byte("b")},
		{[]byte{0x00}, []byte{0x01}},
		{[]byte{0x01, 0xfe}, []byte{0x01, 0xff}},
		{[]byte{0x01, 0xfe, 0xff}, []byte{0x01, 0xff}},
		{[]byte{0x7f}, []byte{0x80}},
	} {
		got := PrefixEnd(c.p)
		if !bytes.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("PrefixEnd(%q) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestPrefixEndDoesNotAlias(t *testing.T) {
	p := []byte("ab")
	end := PrefixEnd(p)
	end[0] = 'z'
	if string(p) != "ab" {
		t.Errorf("PrefixEnd's result shares memory with its argument: p = %q", p)
	}
}

func TestPrefix(t *testing.T) {
	r := Prefix([]byte{'k', 0xff})
	if string(r.Start) != "k\xff" || string(r.End) != "l" || r.Reverse || r.Limit != 0 || r.KeysOnly {
		t.Errorf("Prefix(%q) = %+v", "k\xff", r)
	}
	if r := Prefix(nil); r.Start != nil || r.End != nil {
		t.Errorf("Prefix(nil) = %+v, want the whole bucket", r)
	}
}
