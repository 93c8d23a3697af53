package sqldb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// Event bundles (migration 0029, issue 28). A row of event_outbox or
// event_log holds one event or a bundle: event_count consecutive events of
// one transaction that share their key and are about that LRP
// (models.EventNamesLRP). A bundle's row has event_type "bundle", the
// events' key and, as payload, the bundle's blob packed (compress.go).
// In the log, a row's position is its last event's: its events are at
// position-event_count+1 … position, in order. So "the rows past
// position p" are still the rows holding the events past p, and the
// sequencer hands out positions by adding up event_count.
//
// Why: a desire logs three events (the LRP, its instance, its operation)
// and an update two, each a row of the outbox and of the log with its
// own index entry, its own header and its own key, and each moved by the
// sequencer. In bbs-load peer on Postgres, 2,000 LRPs, the log held
// 30,100 events in 30,100 rows of 229 bytes, 85 of them a row's own and
// 23 more its index entry's, 3,813 bytes per LRP; the same events
// bundled were 16,100 rows, 2,998–3,088 bytes per LRP.
// Bundling what is about another key would hide that key from
// convergence's read of changed LRPs (ConvergenceChanges), so events of
// different keys never share a row.
//
// A bundle's blob is each event in turn, as
//
//	uvarint  the length of its type, then the type
//	uvarint  the length of its payload's protobuf, then the protobuf
//
// Worked example: a desire of "web" with one instance appends
// desired_lrp_created, actual_lrp_created and operation_changed, all
// keyed "web": one row, event_count 3. The sequencer, with the head at
// 41, logs it at position 44: its events are 42, 43 and 44. A reader
// asking for the events past 42 reads the rows past 42, this one first,
// and skips its event 42. A claim of cell c1 in the same transaction as
// a cell_changed of c1 appends two rows: cell events are never bundled.

const (
	// bundleType is the event_type of a row holding a bundle.
	bundleType = "bundle"
	// maxBundle is the most events one row holds (event_count is a
	// SMALLINT); a longer run of one key's events takes several rows.
	maxBundle = 64
)

// bundleSpans is how many of events, in order, each outbox row holds: an
// event starts a row of its own unless it is about an LRP, the event
// before it is about the same one, and that event's row holds fewer than
// maxBundle events. The spans add up to len(types).
//
// Example: types desired_lrp_changed, actual_lrp_created, cell_changed,
// operation_changed with keys web, web, c1, web give spans 2, 1, 1.
func bundleSpans(types, keys []string) []int {
	var spans []int
	for i := range types {
		last := len(spans) - 1
		if i > 0 && keys[i] == keys[i-1] && models.EventNamesLRP(types[i]) && models.EventNamesLRP(types[i-1]) && spans[last] < maxBundle {
			spans[last]++
			continue
		}
		spans = append(spans, 1)
	}
	return spans
}

// outboxRows are events as the outbox's rows: one per event, or one per
// bundle, each with its type, key, stored payload and event count.
type outboxRows struct {
	types, keys []string
	payloads    [][]byte
	counts      []int64
}

// encodedEvents are events marshalled, before they are laid out in rows.
type encodedEvents struct {
	types, keys []string
	raws        [][]byte
}

// marshalEvents marshals each event's payload.
func marshalEvents(changes []models.Event) (encodedEvents, error) {
	e := encodedEvents{
		types: make([]string, len(changes)),
		keys:  make([]string, len(changes)),
		raws:  make([][]byte, len(changes)),
	}
	for i, c := range changes {
		raw, err := proto.Marshal(c.Payload)
		if err != nil {
			return encodedEvents{}, fmt.Errorf("encode %s event: %w", c.Type, err)
		}
		e.types[i], e.keys[i], e.raws[i] = c.Type, c.Key, raw
	}
	return e, nil
}

// eachRow lays the events out one per row, each payload packed.
func (e encodedEvents) eachRow() outboxRows {
	rows := outboxRows{types: e.types, keys: e.keys, payloads: make([][]byte, len(e.raws)), counts: make([]int64, len(e.raws))}
	for i, raw := range e.raws {
		rows.payloads[i], rows.counts[i] = pack(raw), 1
	}
	return rows
}

// bundled lays the events out in the rows bundleSpans gives.
func (e encodedEvents) bundled() outboxRows {
	spans := bundleSpans(e.types, e.keys)
	if len(spans) == len(e.types) {
		return e.eachRow()
	}
	var rows outboxRows
	start := 0
	for _, n := range spans {
		if n == 1 {
			rows.add(e.types[start], e.keys[start], pack(e.raws[start]), 1)
		} else {
			rows.add(bundleType, e.keys[start], pack(appendBundle(nil, e.types[start:start+n], e.raws[start:start+n])), int64(n))
		}
		start += n
	}
	return rows
}

// row is row i's values in outboxColumns' order.
func (r outboxRows) row(i int) []any {
	return []any{r.types[i], r.keys[i], r.payloads[i], r.counts[i]}
}

func (r *outboxRows) add(eventType, key string, payload []byte, count int64) {
	r.types = append(r.types, eventType)
	r.keys = append(r.keys, key)
	r.payloads = append(r.payloads, payload)
	r.counts = append(r.counts, count)
}

// appendBundle appends the blob of a bundle of the events of types whose
// payloads' protobufs are raws.
func appendBundle(b []byte, types []string, raws [][]byte) []byte {
	for i := range types {
		b = binary.AppendUvarint(b, uint64(len(types[i])))
		b = append(b, types[i]...)
		b = binary.AppendUvarint(b, uint64(len(raws[i])))
		b = append(b, raws[i]...)
	}
	return b
}

// bundledEvent is one event of a bundle as its blob holds it.
type bundledEvent struct {
	eventType string
	raw       []byte // its payload's protobuf, a slice of the blob
}

// errBadBundle says a bundle's blob is not what appendBundle writes.
var errBadBundle = errors.New("malformed event bundle")

// readBundle reads a bundle's unpacked blob, which must hold exactly count
// events (its row's event_count).
func readBundle(blob []byte, count int) ([]bundledEvent, error) {
	if count < 2 || count > maxBundle {
		return nil, fmt.Errorf("%w: event_count %d", errBadBundle, count)
	}
	out := make([]bundledEvent, 0, count)
	for len(blob) > 0 {
		if len(out) == count {
			return nil, fmt.Errorf("%w: more than event_count %d events", errBadBundle, count)
		}
		eventType, rest, ok := readLengthPrefixed(blob)
		if !ok || len(eventType) == 0 {
			return nil, fmt.Errorf("%w: event %d's type", errBadBundle, len(out)+1)
		}
		raw, rest, ok := readLengthPrefixed(rest)
		if !ok {
			return nil, fmt.Errorf("%w: event %d's payload", errBadBundle, len(out)+1)
		}
		out = append(out, bundledEvent{eventType: string(eventType), raw: raw})
		blob = rest
	}
	if len(out) != count {
		return nil, fmt.Errorf("%w: %d events, event_count %d", errBadBundle, len(out), count)
	}
	return out, nil
}

// readLengthPrefixed splits b into the field a uvarint length opens and
// what follows it. The length must be in the fewest bytes, as appendBundle
// writes it: a blob reads as events only if it is the one blob of them.
func readLengthPrefixed(b []byte) (field, rest []byte, ok bool) {
	n, size := binary.Uvarint(b)
	var shortest [binary.MaxVarintLen64]byte
	if size <= 0 || binary.PutUvarint(shortest[:], n) != size || n > uint64(len(b)-size) {
		return nil, nil, false
	}
	end := size + int(n)
	return b[size:end:end], b[end:], true
}
