package sqldb

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Packed blobs (issue 28): what the board stores of a run definition
// (run_infos.definition), of an operation's parameters and history
// (operations.parameters, operations.history) and of an event's payload
// (event_outbox.payload, event_log.payload) is the protobuf of the
// message, or, when that is shorter, the protobuf compressed ("packed"):
//
//	offset  size  content
//	0       1     0x00, the marker (the encryption envelope's, encryption.go)
//	1       1     0x02, the packed format
//	2       n     raw DEFLATE (RFC 1951) of the protobuf, with packDictionary
//	              as its preset dictionary
//
// As with an envelope, the first byte tells a packed blob from a protobuf
// one (no protobuf blob starts with 0x00), so rows written before packing
// existed, and blobs that packing would not shorten, are read as they are.
// The second byte tells a packed blob from an encryption envelope (format
// 0x01). Encryption seals the packed bytes: a sealed definition is
// seal(pack(protobuf)), and opening it gives the packed bytes back. A
// board older than packing cannot read a packed blob; migration 0016 makes
// it refuse a database a packing board has migrated.
//
// Why it pays: a definition's environment and arguments repeat themselves
// and each other (940 bytes of bbs-load's peer definition pack to about
// 380), and a changed event carries the row before and after, nearly the
// same bytes twice (a desired_lrp_changed of 441 bytes packs to about 200).
// Short blobs do not shrink and stay plain. The column comments of
// migrations 0007 and 0013 ("the protobuf of ...") describe what a blob
// holds once unpacked. The price is CPU: 1–4µs to pack a blob with the
// board's own encoder (deflate.go: fixed Huffman codes, small tables; the
// standard library's writer took some 10µs, most of it setting up) and
// 0.5–2.5µs to unpack one (inflate.go's reader of those codes; the
// standard library's took 2–7µs).
//
// Worked example (bbs-load peer): a 252-byte actual_lrp_changed whose
// DEFLATE is 155 bytes is stored as 00 02 and those 155 bytes (157 in
// all); a 93-byte actual_lrp_created, whose DEFLATE is no shorter, is
// stored as its 93 protobuf bytes.

const (
	// packedFormat is the second byte of a packed blob.
	packedFormat = 0x02
	// packedHeader is the marker and the format.
	packedHeader = 2
	// minPacked is the shortest blob worth trying to pack: DEFLATE's own
	// framing eats what a shorter one could save.
	minPacked = 64
	// maxUnpacked bounds what one packed blob may expand to, so that a
	// corrupt or hostile row cannot make a reader allocate without limit.
	// It is far above any blob the board writes (a request body, and so a
	// definition, is at most models.MaxRequestBodyBytes, 1 MiB).
	maxUnpacked = 64 << 20
)

// packDictionary is DEFLATE's preset dictionary for format 0x02: strings
// that the board's own blobs carry over and over, which a short blob then
// refers to rather than spells (the type URL of an update's request is 60
// bytes of a 98-byte parameters blob, which packs to about 35). It is part of the format: a blob
// packed with it unpacks only with it, so it never changes; another
// dictionary would be another format byte.
const packDictionary = "" +
	"annotation replaced; instances  → desired 1 instance of definition " +
	"stored; queued behind operation activated: rolling from rolling back from " +
	"cf-routerhostnamesport" +
	"type.googleapis.com/google.protobuf." +
	"type.googleapis.com/corkboard.models.RemoveDesiredLRPRequest" +
	"type.googleapis.com/corkboard.models.RollbackRequest" +
	"type.googleapis.com/corkboard.models.AbortRolloutRequest" +
	"type.googleapis.com/corkboard.models.DesireLRPRequest" +
	"type.googleapis.com/corkboard.models.UpdateDesiredLRPRequest" +
	"corkboard-client from 127.0.0.1:"

// unpackers keeps DEFLATE's readers, which are small, from one blob to
// the next.
var unpackers = sync.Pool{New: func() any {
	return flate.NewReaderDict(bytes.NewReader(nil), []byte(packDictionary))
}}

// pack is what the board stores for the protobuf blob plain: plain itself
// when packing would not shorten it (and for nil, NULL), else the packed
// blob. plain is never changed.
func pack(plain []byte) []byte {
	if len(plain) < minPacked {
		return plain
	}
	out := make([]byte, 0, len(plain))
	out = append(out, envelopeMarker, packedFormat)
	out = appendDeflateFixed(out, packDictionaryBytes, plain)
	if len(out) >= len(plain) {
		return plain
	}
	return out
}

var packDictionaryBytes = []byte(packDictionary)

// isPacked reports whether blob is a packed blob (pack).
func isPacked(blob []byte) bool {
	return len(blob) >= packedHeader && blob[0] == envelopeMarker && blob[1] == packedFormat
}

// unpack returns the protobuf blob that blob stores: blob itself when it
// is not packed, else its DEFLATE expanded (by inflateFixed when the
// board's own encoder wrote it). An error says the blob is packed but
// corrupt.
func unpack(blob []byte) ([]byte, error) {
	if !isPacked(blob) {
		return blob, nil
	}
	if out, ok := inflateFixed(packDictionaryBytes, blob[packedHeader:], maxUnpacked); ok {
		return out, nil
	}
	return unpackStandard(blob)
}

// unpackStandard is unpack by the standard library's reader: for the
// streams inflateFixed leaves to it, and for the errors of corrupt ones.
func unpackStandard(blob []byte) ([]byte, error) {
	r := unpackers.Get().(io.ReadCloser)
	defer unpackers.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(blob[packedHeader:]), []byte(packDictionary)); err != nil {
		return nil, fmt.Errorf("packed blob: %w", err)
	}
	var out bytes.Buffer
	out.Grow(3 * len(blob))
	n, err := io.Copy(&out, io.LimitReader(r, maxUnpacked+1))
	if err != nil {
		return nil, fmt.Errorf("packed blob: %w", err)
	}
	if n > maxUnpacked {
		return nil, errors.New("packed blob: expands beyond 64 MiB")
	}
	return out.Bytes(), nil
}
