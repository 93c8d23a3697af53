package sqldb

import (
	"encoding/binary"
	"math/bits"
)

// inflateFixed is unpack's reader for the blobs the board packs itself
// (deflate.go): raw DEFLATE of one final block of fixed Huffman codes
// (BFINAL 1, BTYPE 01), with a preset dictionary, which a back-reference
// may reach into as into what was already expanded.
//
// It answers ok false, and leaves the blob to the standard library's
// reader, for anything else: a block of another type (blobs packed before
// deflate.go, by the standard library's writer, may hold dynamic codes),
// more than one block, a code or distance DEFLATE does not define, a
// stream cut short, or more than limit bytes out. So on every input it
// either expands what the standard library's reader expands or says it
// did not (the fuzz target FuzzInflateFixed holds it to that).
//
// Why: a whole list of 10,000 desired LRPs unpacks 10,000 definitions,
// and every event read from the log is unpacked. BenchmarkUnpack (2 cores,
// 2026-11-30): a definition as bbs-load peer desires them, 924 bytes
// packed to 367, in 2.3–2.9µs against the standard library's 6.0–6.5µs;
// a 154-byte event in 0.43–0.48µs against 1.6–2.3µs. A whole list of
// 2,000 such LRPs from the store (BenchmarkListDesiredLRPs, three
// alternated runs against the tree before) took 16–34% less time on
// Postgres, 18–20% on SQLite, 11–20% on MySQL. The codes are read from a
// 64-bit accumulator, 8 bytes at a time, and looked up in two tables
// built once:
//
//  1. Literal/length codes are 7 to 9 bits. The next 9 bits of the stream
//     (least significant first, as DEFLATE packs them) index fixedLit,
//     whose entry is the symbol and its code's length.
//  2. Symbols 0–255 are bytes; 256 ends the block; 257–285 are lengths,
//     each a base and extra bits (lengthBase, lengthExtra: deflate.go's).
//  3. A length is followed by a 5-bit distance code (fixedDist: the code
//     reversed) and its extra bits (distBase, distExtra). The match is
//     copied from the dictionary for what lies before the output, then
//     from the output in runs no longer than the distance, since it may
//     overlap what it writes.
//
// Worked example: with the dictionary "ab", the stream 0x4b 0x04 0x02 0x00
// is the block header (1, then 01), the literal 'a' (code 10010001), the
// length 3 (symbol 257, code 0000001) at distance 1 (code 00000), and
// end-of-block (0000000): 'a', then three copies of the byte before it,
// "aaaa" out.
func inflateFixed(dict, src []byte, limit int) (out []byte, ok bool) {
	r := bitReader{src: src}
	r.refill()
	if header, ok := r.take(3); !ok || header != 0b011 { // BFINAL 1, BTYPE 01 (read as bits 1, then 1, 0)
		return nil, false
	}
	out = make([]byte, 0, 4*len(src))
	for {
		if r.n < 32 { // the most one step reads: 9 + 5 bits of length, 5 + 13 of distance
			r.refill()
		}
		e := fixedLit[r.acc&0x1ff]
		if _, ok := r.take(uint(e & 0xf)); !ok {
			return nil, false
		}
		sym := int(e >> 4)
		switch {
		case sym < 256:
			if len(out) >= limit {
				return nil, false
			}
			out = append(out, byte(sym))
			continue
		case sym == 256:
			return out, true
		case sym > 285:
			return nil, false
		}
		lengthBits, ok := r.take(lengthExtra[sym-257])
		if !ok {
			return nil, false
		}
		code, ok := r.take(5)
		if !ok || fixedDist[code] > 29 {
			return nil, false
		}
		distBits, ok := r.take(distExtra[fixedDist[code]])
		if !ok {
			return nil, false
		}
		length := lengthBase[sym-257] + int(lengthBits)
		dist := distBase[fixedDist[code]] + int(distBits)
		if dist > len(dict)+len(out) || len(out)+length > limit {
			return nil, false
		}
		if back := dist - len(out); back > 0 { // the match begins in the dictionary
			from := dict[len(dict)-back:]
			if length <= back {
				out = append(out, from[:length]...)
				continue
			}
			out = append(out, from...)
			length -= back
		}
		// The rest begins dist back in out, and may overlap what it
		// writes: copied in runs of what is already there.
		from := len(out) - dist
		for length > 0 {
			run := min(length, len(out)-from)
			out = append(out, out[from:from+run]...)
			from += run
			length -= run
		}
	}
}

// bitReader reads a DEFLATE stream's bits, least significant first, from
// src: acc holds the next n of them, the next one lowest (bitWriter's
// reverse).
type bitReader struct {
	src []byte
	pos int
	acc uint64
	n   uint
}

// refill tops acc up to at least 57 bits, 8 bytes at a time where there
// are 8 left, else with all that is left.
func (r *bitReader) refill() {
	if r.pos+8 <= len(r.src) {
		r.acc |= binary.LittleEndian.Uint64(r.src[r.pos:]) << r.n
		taken := (63 - r.n) / 8
		r.pos += int(taken)
		r.n += taken * 8
		return
	}
	for r.n <= 56 && r.pos < len(r.src) {
		r.acc |= uint64(r.src[r.pos]) << r.n
		r.pos++
		r.n += 8
	}
}

// take returns the next width bits as a number, first bit lowest, or
// false when acc holds fewer (the stream ended).
func (r *bitReader) take(width uint) (uint64, bool) {
	if width > r.n {
		return 0, false
	}
	v := r.acc & (1<<width - 1)
	r.acc >>= width
	r.n -= width
	return v, true
}

// fixedLit maps the next 9 bits of a stream to the fixed literal/length
// symbol they begin with (entry >> 4) and its code's length (entry & 0xf);
// fixedDist maps the next 5 bits to the distance code.
var fixedLit, fixedDist = fixedTables()

func fixedTables() (lit [512]uint16, dist [32]uint8) {
	// RFC 1951 §3.2.6: the code lengths of symbols 0–287, whose codes are
	// then canonical: 7-bit codes from 0000000 for 256–279, 8-bit from
	// 00110000 for 0–143 and from 11000000 for 280–287, 9-bit from
	// 110010000 for 144–255.
	put := func(sym, code, width int) {
		rev := int(bits.Reverse16(uint16(code)) >> (16 - width))
		for ext := 0; ext < 1<<(9-width); ext++ {
			lit[rev|ext<<width] = uint16(sym<<4 | width)
		}
	}
	for sym := 256; sym <= 279; sym++ {
		put(sym, sym-256, 7)
	}
	for sym := 0; sym <= 143; sym++ {
		put(sym, 0b00110000+sym, 8)
	}
	for sym := 280; sym <= 287; sym++ {
		put(sym, 0b11000000+sym-280, 8)
	}
	for sym := 144; sym <= 255; sym++ {
		put(sym, 0b110010000+sym-144, 9)
	}
	for code := range 32 {
		dist[bits.Reverse8(uint8(code))>>3] = uint8(code)
	}
	return lit, dist
}
