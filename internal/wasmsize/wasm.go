package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The WebAssembly binary format, as far as this tool reads it
// (https://webassembly.github.io/spec/core/binary/modules.html).

const (
	secCustom = 0
	secImport = 2
	secCode   = 10
	secData   = 11
)

var sectionNames = map[byte]string{
	0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory", 6: "global",
	7: "export", 8: "start", 9: "element", 10: "code", 11: "data", 12: "datacount",
}

type section struct {
	id   byte
	name string // "code", or "custom:name" for custom sections
	body []byte
}

// segment is an active data segment of memory 0 at a constant offset, the
// only kind Go's linker writes.
type segment struct {
	offset int64
	data   []byte
}

type module struct {
	sections  []section
	imports   int            // imported functions: function indexes start after them
	codeSizes []int          // size of each function body, in index order after the imports
	names     map[int]string // function index -> name, from the name section
	segments  []segment
}

var errFormat = errors.New("not a WebAssembly module this tool reads")

func parse(b []byte) (*module, error) {
	if !bytes.HasPrefix(b, []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, errFormat
	}
	m := &module{names: map[int]string{}}
	r := &reader{b: b, i: 8}
	for r.i < len(b) && r.err == nil {
		id := r.byte()
		body := r.bytes(int(r.uleb()))
		s := section{id: id, name: sectionNames[id], body: body}
		sr := &reader{b: body}
		switch id {
		case secCustom:
			name := string(sr.bytes(int(sr.uleb())))
			s.name = "custom:" + name
			if name == "name" {
				m.readNames(sr)
			}
		case secImport:
			m.imports = countFuncImports(sr)
		case secCode:
			for n := sr.uleb(); n > 0 && sr.err == nil; n-- {
				start := sr.i
				size := int(sr.uleb())
				sr.bytes(size)
				m.codeSizes = append(m.codeSizes, sr.i-start)
			}
		case secData:
			m.segments = readSegments(sr)
		}
		if sr.err != nil {
			return nil, fmt.Errorf("section %s: %w", s.name, sr.err)
		}
		m.sections = append(m.sections, s)
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

func countFuncImports(r *reader) int {
	n := 0
	for count := r.uleb(); count > 0 && r.err == nil; count-- {
		r.bytes(int(r.uleb())) // module
		r.bytes(int(r.uleb())) // name
		switch r.byte() {
		case 0: // function: type index
			r.uleb()
			n++
		case 1: // table: element type, limits
			r.byte()
			r.limits()
		case 2: // memory: limits
			r.limits()
		case 3: // global: value type, mutability
			r.byte()
			r.byte()
		}
	}
	return n
}

func (m *module) readNames(r *reader) {
	for r.i < len(r.b) && r.err == nil {
		id := r.byte()
		sub := &reader{b: r.bytes(int(r.uleb()))}
		if id != 1 { // function names
			continue
		}
		for n := sub.uleb(); n > 0 && sub.err == nil; n-- {
			idx := int(sub.uleb())
			m.names[idx] = string(sub.bytes(int(sub.uleb())))
		}
		r.err = sub.err
	}
}

func readSegments(r *reader) []segment {
	var segs []segment
	for n := r.uleb(); n > 0 && r.err == nil; n-- {
		if flags := r.uleb(); flags != 0 {
			r.err = fmt.Errorf("data segment with flags %d (only active segments of memory 0)", flags)
			return nil
		}
		if r.byte() != 0x41 { // i32.const
			r.err = errors.New("data segment offset is not an i32.const")
			return nil
		}
		off := r.sleb()
		if r.byte() != 0x0b { // end
			r.err = errors.New("data segment offset expression longer than i32.const")
			return nil
		}
		segs = append(segs, segment{offset: off, data: r.bytes(int(r.uleb()))})
	}
	return segs
}

// packData returns b with its data segments merged across runs of up to
// maxGap zero bytes (see the package documentation). Every other section is
// copied unchanged.
func packData(b []byte, maxGap int) ([]byte, error) {
	m, err := parse(b)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), b[:8]...)
	for _, s := range m.sections {
		body := s.body
		switch s.id {
		case secData:
			body = encodeSegments(mergeSegments(m.segments, maxGap))
		case 12: // datacount: Go's linker writes none; its count would change
			return nil, errors.New("module has a datacount section")
		}
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// mergeSegments joins segments (sorted by offset, not overlapping) whose
// gap is at most maxGap bytes, filling the gap with zeros.
func mergeSegments(segs []segment, maxGap int) []segment {
	var out []segment
	for _, s := range segs {
		if len(out) > 0 {
			last := &out[len(out)-1]
			end := last.offset + int64(len(last.data))
			if s.offset >= end && s.offset-end <= int64(maxGap) {
				last.data = append(last.data, make([]byte, s.offset-end)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		out = append(out, segment{s.offset, append([]byte(nil), s.data...)})
	}
	return out
}

func encodeSegments(segs []segment) []byte {
	b := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		b = append(b, 0, 0x41) // active, memory 0; i32.const
		b = appendSleb(b, s.offset)
		b = append(b, 0x0b) // end
		b = binary.AppendUvarint(b, uint64(len(s.data)))
		b = append(b, s.data...)
	}
	return b
}

// memoryImage returns the initial memory the segments define, from the
// lowest offset (tests compare images before and after packing).
func memoryImage(segs []segment) (base int64, img []byte) {
	if len(segs) == 0 {
		return 0, nil
	}
	base, end := segs[0].offset, int64(0)
	for _, s := range segs {
		base = min(base, s.offset)
		end = max(end, s.offset+int64(len(s.data)))
	}
	img = make([]byte, end-base)
	for _, s := range segs {
		copy(img[s.offset-base:], s.data)
	}
	return base, img
}

// reader reads LEB128 numbers and byte strings; the first error sticks.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || r.i >= len(r.b) {
		r.fail()
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.i {
		r.fail()
		return nil
	}
	r.i += n
	return r.b[r.i-n : r.i]
}

func (r *reader) uleb() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.i:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.i += n
	return v
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	for {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (r *reader) limits() {
	if r.byte()&1 != 0 {
		r.uleb()
	}
	r.uleb()
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated at byte %d", errFormat, r.i)
	}
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
