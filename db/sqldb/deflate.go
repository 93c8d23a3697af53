package sqldb

import (
	"math/bits"
	"sync"
)

// deflateFixed is the encoder pack uses: it writes raw DEFLATE (RFC 1951)
// as one block of fixed Huffman codes (BTYPE 01), finding matches in the
// preset dictionary and in what it already wrote. Any DEFLATE reader given
// the same dictionary expands it (unpack reads it with inflate.go's reader
// of exactly this shape, and other streams with the standard library's),
// so the stored format — packed format 0x02 — is what it was with the
// standard library's encoder, and blobs either wrote read alike.
//
// Why not the standard library's writer: the board packs blobs of 100 to
// 1,500 bytes, several per API write. For those, its writer spent most of
// its time on set-up rather than on the bytes — clearing 640 KB of match
// tables per blob and building a dynamic Huffman code, whose description
// (some 50–80 bytes) a blob this short barely earns back. Here:
//
//  1. The dictionary and the input are one buffer; every position of the
//     dictionary is hashed (3 bytes) into a table of 8,192 chains first,
//     so that the input's first bytes can refer back into it.
//  2. At each input position the chain of earlier positions with the same
//     hash is walked, at most maxChain of them, no farther than DEFLATE's
//     32 KB window: the longest match of at least 3 bytes (at most 258)
//     is written as a length and a distance, else the byte as a literal.
//  3. Lazy by one byte: a match is put off when the next position has a
//     longer one, and the byte written as a literal instead.
//  4. Codes are the fixed ones of RFC 1951 §3.2.6, written LSB-first
//     (Huffman codes bit-reversed), then end-of-block, then padding to a
//     byte.
//
// Worked example: packDictionary (514 bytes) starts with "annotation
// replaced; ". The input "annotation replaced; x" is written as the block
// header (3 bits); a match of length 21 — symbol 269 (7 bits) and 2 extra
// bits — at distance 514 — code 18 (5 bits) and 8 extra bits; the literal
// 'x' (8 bits); end-of-block (7 bits): 40 bits, 5 bytes against 22.
const (
	deflateHashBits = 13
	deflateMaxChain = 32
	deflateWindow   = 32768
	deflateMinMatch = 3
	deflateMaxMatch = 258
)

// deflateState is one encoder's tables, kept between blobs (encoders).
type deflateState struct {
	// head[h] is 1 + the latest position whose 3 bytes hash to h, 0 for
	// none; prev[p] is 1 + the position before p on its chain.
	head [1 << deflateHashBits]int32
	prev []int32
	buf  []byte
	out  bitWriter
}

var encoders = sync.Pool{New: func() any { return new(deflateState) }}

// appendDeflateFixed appends to dst the raw DEFLATE of plain with dict as
// its preset dictionary, and returns the extended slice.
func appendDeflateFixed(dst, dict, plain []byte) []byte {
	e := encoders.Get().(*deflateState)
	defer encoders.Put(e)
	clear(e.head[:])
	e.buf = append(append(e.buf[:0], dict...), plain...)
	if cap(e.prev) < len(e.buf) {
		e.prev = make([]int32, len(e.buf))
	}
	e.prev = e.prev[:len(e.buf)]
	e.out = bitWriter{out: dst}

	buf := e.buf
	for p := 0; p < len(dict); p++ {
		e.insert(p)
	}
	e.out.write(1|1<<1, 3) // BFINAL 1, BTYPE 01: the last block, fixed codes
	p := len(dict)
	for p < len(buf) {
		length, distance := e.longestMatch(p)
		e.insert(p)
		if length >= deflateMinMatch && length < deflateMaxMatch {
			if next, _ := e.longestMatch(p + 1); next > length {
				length = 0 // the next position's match is longer: a literal first
			}
		}
		if length < deflateMinMatch {
			e.out.literal(buf[p])
			p++
			continue
		}
		e.out.match(length, distance)
		for q := p + 1; q < p+length; q++ {
			e.insert(q)
		}
		p += length
	}
	e.out.symbol(256) // end of block
	out := e.out.flush()
	e.out = bitWriter{}
	if cap(e.buf) > deflateKeptBuffer {
		e.buf, e.prev = nil, nil // a rare large blob: not kept in the pool
	}
	return out
}

// deflateKeptBuffer is the largest buffer an encoder keeps for the next
// blob; definitions are a few kilobytes, a request at most 1 MiB.
const deflateKeptBuffer = 64 << 10

// insert puts position p on its hash chain (a position without 3 bytes
// after it starts no match and is left off).
func (e *deflateState) insert(p int) {
	if p+deflateMinMatch > len(e.buf) {
		return
	}
	h := hash3(e.buf[p:])
	e.prev[p] = e.head[h]
	e.head[h] = int32(p + 1)
}

// longestMatch is the longest match for position p among the earlier
// positions on its chain within the window, and its distance; a length
// below deflateMinMatch means none. p must not be on the chain yet.
func (e *deflateState) longestMatch(p int) (length, distance int) {
	buf := e.buf
	if p+deflateMinMatch > len(buf) {
		return 0, 0
	}
	limit := min(len(buf)-p, deflateMaxMatch)
	candidate := int(e.head[hash3(buf[p:])]) - 1
	for chain := 0; candidate >= 0 && chain < deflateMaxChain; chain++ {
		if p-candidate > deflateWindow {
			break
		}
		if candidate < p && buf[candidate+length] == buf[p+length] {
			n := 0
			for n < limit && buf[candidate+n] == buf[p+n] {
				n++
			}
			if n > length {
				length, distance = n, p-candidate
				if n == limit {
					break
				}
			}
		}
		candidate = int(e.prev[candidate]) - 1
	}
	return length, distance
}

func hash3(b []byte) uint32 {
	v := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
	return (v * 0x9E3779B1) >> (32 - deflateHashBits)
}

// bitWriter writes DEFLATE's bit stream: values LSB-first, Huffman codes
// bit-reversed (RFC 1951 §3.1.1).
type bitWriter struct {
	out   []byte
	bits  uint64
	nbits uint
}

func (w *bitWriter) write(value uint64, n uint) {
	w.bits |= value << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.out = append(w.out, byte(w.bits))
		w.bits >>= 8
		w.nbits -= 8
	}
}

// code writes a Huffman code of n bits, most significant bit first.
func (w *bitWriter) code(code uint16, n uint) {
	w.write(uint64(bits.Reverse16(code)>>(16-n)), n)
}

// symbol writes literal/length symbol s in the fixed code (§3.2.6).
func (w *bitWriter) symbol(s int) {
	switch {
	case s < 144:
		w.code(uint16(0x30+s), 8)
	case s < 256:
		w.code(uint16(0x190+s-144), 9)
	case s < 280:
		w.code(uint16(s-256), 7)
	default:
		w.code(uint16(0xC0+s-280), 8)
	}
}

func (w *bitWriter) literal(b byte) { w.symbol(int(b)) }

// Lengths 3–258 and distances 1–32,768 as codes with extra bits
// (RFC 1951 §3.2.5).
var (
	lengthBase  = [29]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]int{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// match writes a length (3–258) and a distance (1–32,768).
func (w *bitWriter) match(length, distance int) {
	l := len(lengthBase) - 1
	for lengthBase[l] > length {
		l--
	}
	w.symbol(257 + l)
	w.write(uint64(length-lengthBase[l]), lengthExtra[l])
	d := len(distBase) - 1
	for distBase[d] > distance {
		d--
	}
	w.code(uint16(d), 5)
	w.write(uint64(distance-distBase[d]), distExtra[d])
}

// flush writes the last bits, padded with zeros to a byte, and returns
// the stream.
func (w *bitWriter) flush() []byte {
	if w.nbits > 0 {
		w.out = append(w.out, byte(w.bits))
	}
	return w.out
}
