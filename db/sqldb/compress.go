package sqldb

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"runtime"
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
// holds once unpacked. The price is CPU: some 10µs to pack a blob (most
// of it resetting DEFLATE's tables) and 2µs to unpack one, so an
// annotation update, which packs three, pays some 30µs.
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
// bytes of a 98-byte parameters blob, which packs to 41). It is part of the format: a blob
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

// packLevel is DEFLATE's default level. BestSpeed would ignore the preset
// dictionary; on blobs this short every level from 2 up costs about the
// same (some 10µs, most of it resetting the writer's tables).
const packLevel = flate.DefaultCompression

// packers keeps DEFLATE's writers (some 700 KB each, most of it the match
// tables) from one blob to the next. Packing is all CPU, so no more than
// one writer per processor is ever made, and a packer waits for one
// rather than allocating another: a sync.Pool would drop them at every
// garbage collection and the board would allocate them again, hundreds of
// kilobytes a write. unpackers keeps readers, which are small.
var (
	packers   = newPackerPool(runtime.GOMAXPROCS(0))
	unpackers = sync.Pool{New: func() any {
		return flate.NewReaderDict(bytes.NewReader(nil), []byte(packDictionary))
	}}
)

// packerPool holds at most size writers, made as they are first needed.
type packerPool struct {
	free chan *flate.Writer
	mu   sync.Mutex
	made int
}

func newPackerPool(size int) *packerPool {
	return &packerPool{free: make(chan *flate.Writer, max(size, 1))}
}

// get is a free writer, a new one while fewer than the pool's size are
// made, else the next one put back.
func (p *packerPool) get() *flate.Writer {
	select {
	case w := <-p.free:
		return w
	default:
	}
	p.mu.Lock()
	if p.made < cap(p.free) {
		p.made++
		p.mu.Unlock()
		w, err := flate.NewWriterDict(nil, packLevel, []byte(packDictionary))
		if err != nil {
			panic(err) // a valid level
		}
		return w
	}
	p.mu.Unlock()
	return <-p.free
}

func (p *packerPool) put(w *flate.Writer) { p.free <- w }

// pack is what the board stores for the protobuf blob plain: plain itself
// when packing would not shorten it (and for nil, NULL), else the packed
// blob. plain is never changed.
func pack(plain []byte) []byte {
	if len(plain) < minPacked {
		return plain
	}
	var out bytes.Buffer
	out.Grow(len(plain))
	out.Write([]byte{envelopeMarker, packedFormat})
	w := packers.get()
	defer packers.put(w)
	w.Reset(&out)
	if _, err := w.Write(plain); err != nil {
		return plain // a bytes.Buffer does not fail
	}
	if err := w.Close(); err != nil {
		return plain
	}
	if out.Len() >= len(plain) {
		return plain
	}
	return out.Bytes()
}

// isPacked reports whether blob is a packed blob (pack).
func isPacked(blob []byte) bool {
	return len(blob) >= packedHeader && blob[0] == envelopeMarker && blob[1] == packedFormat
}

// unpack returns the protobuf blob that blob stores: blob itself when it
// is not packed, else its DEFLATE expanded. An error says the blob is
// packed but corrupt.
func unpack(blob []byte) ([]byte, error) {
	if !isPacked(blob) {
		return blob, nil
	}
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
