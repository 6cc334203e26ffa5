package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
)

// region is a part of the memory image the runtime's moduledata names.
type region struct {
	name       string
	start, end int64 // addresses
	gz         int   // gzip size of the region alone
}

// dataLayout splits the initial memory of a Go module at the addresses the
// runtime's moduledata holds (Go 1.20 to 1.26 layout): read-only data
// (type descriptors, strings, constants), the pclntab's parts (function
// names, pc-value tables, function records, funcdata such as stack maps,
// findfunctab: the pc -> function lookup table, which for wasm spans
// 16 buckets per function), pointer-free data and data. It finds
// moduledata from the pcHeader's magic number and returns nil when the
// module is not laid out that way.
func dataLayout(segs []segment) []region {
	base, img := memoryImage(segs)
	word := func(a int64) int64 {
		i := a - base
		if i < 0 || i+8 > int64(len(img)) {
			return -1
		}
		return int64(binary.LittleEndian.Uint64(img[i:]))
	}
	first := (8 - base%8) % 8 // addresses, not offsets in img, are 8-aligned
	for i := first; i+64 <= int64(len(img)); i += 8 {
		// pcHeader: magic 0xfffffff1, two zero pads, minLC, ptrSize 8.
		if binary.LittleEndian.Uint32(img[i:]) != 0xfffffff1 || img[i+4] != 0 || img[i+5] != 0 || img[i+7] != 8 {
			continue
		}
		hdr := base + i
		// moduledata starts with a pointer to the pcHeader followed by
		// funcnametab, whose data pointer is hdr+funcnameOffset.
		for j := first; j+8*48 <= int64(len(img)); j += 8 {
			md := base + j
			if word(md) != hdr || word(md+8) != hdr+word(hdr+32) {
				continue
			}
			// Words of moduledata: funcnametab 1, cutab 4, filetab 7,
			// pctab 10, pclntable 13 (ftab 16 at its start),
			// findfunctab 19, noptrdata 24, enoptrdata 25, data 26,
			// edata 27, rodata 39, gofunc 40, epclntab 41.
			f := func(n int) int64 { return word(md + 8*int64(n)) }
			rs := []region{
				{name: "rodata: types, strings, constants", start: f(39)},
				{name: "pclntab: header", start: hdr},
				{name: "pclntab: function names", start: f(1)},
				{name: "pclntab: compilation units, files", start: f(4)},
				{name: "pclntab: pc-value tables", start: f(10)},
				{name: "pclntab: function table and records", start: f(13)},
				{name: "funcdata (stack maps, arg info)", start: f(40)},
				{name: "findfunctab", start: f(19)},
				{name: "after pclntab (typelinks, itablinks)", start: f(41)},
				{name: "noptrdata", start: f(24)},
				{name: "data", start: f(26)},
			}
			sort.SliceStable(rs, func(a, b int) bool { return rs[a].start < rs[b].start })
			for k := range rs {
				rs[k].end = f(27)
				if k+1 < len(rs) {
					rs[k].end = rs[k+1].start
				}
				// The image spans the non-zero bytes only: clip.
				lo, hi := max(rs[k].start, base)-base, min(rs[k].end-base, int64(len(img)))
				if rs[k].end < rs[k].start || hi < 0 {
					return nil
				}
				rs[k].gz = gzipSize(img[min(lo, hi):hi])
			}
			return rs
		}
		return nil
	}
	return nil
}

func reportData(w io.Writer, m *module) {
	rs := dataLayout(m.segments)
	if rs == nil {
		return
	}
	fmt.Fprintln(w, "initial memory:      bytes     gzip alone")
	for _, r := range rs {
		fmt.Fprintf(w, "%9d %9d  %s\n", r.end-r.start, r.gz, r.name)
	}
}
