package model

import (
	"fmt"
	"math"
	"testing"
)

// TestTransactionIDForm: the id is "wall:counter:site", the site in its
// base64url text form, for extreme fields too (docs/design.md §
// Transaction id): every peer must derive the same string.
func TestTransactionIDForm(t *testing.T) {
	var site SiteID
	for i := range site {
		site[i] = byte(0xF0 + i)
	}
	for _, h := range []HLC{
		{},
		{Wall: 1700000000123, Counter: 7, Site: site, OpSeq: 3},
		{Wall: math.MaxUint64, Counter: math.MaxUint16, Site: SiteID{0xff, 0xfe}, OpSeq: math.MaxUint32},
	} {
		want := fmt.Sprintf("%d:%d:%s", h.Wall, h.Counter, h.Site.String())
		if got := h.TransactionID(); got != want {
			t.Errorf("TransactionID(%+v) = %q, want %q", h, got, want)
		}
	}
	if got := (HLC{Wall: 5, Counter: 1}).TransactionID(); got != "5:1:AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("TransactionID = %q", got)
	}
}
