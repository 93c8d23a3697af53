package handlers

import (
	"context"
	"errors"
	"net/http"

	"code.cloudfoundry.org/lager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

// Lists (desired LRPs, scheduling infos, actual LRPs, cells) come in
// pages or whole, as models/list_page.go describes. A request with a limit
// gets that page and a next_cursor, read with one query. One without gets
// the whole list, streamed a page (streamPage items at first, up to
// streamPageMax later, or fewer that reach streamPageBytes) at a time:
// each page is one short keyset query after the last item of the page
// before (the same cursor a paging client would pass), read into memory,
// its connection given back to the pool, and only then written to the
// client, within the list write timeout.
// The next page is read while one is written. So a client that reads
// slowly holds two pages of memory and its own request's place, never a
// database connection, and one that stops reading is cut off; eight
// clients listing a large board at once hold sixteen pages, not eight
// copies of the database. Each page query is bounded by the database
// timeout, as any call is.
//
// A streamed answer is the same message a buffered one would be, so
// clients decode it unchanged: in protobuf, a message is the
// concatenation of its fields and a repeated field may come one element
// at a time; in JSON, the items are written into the array as they come.
// An error after the first page went out (the database went away) cannot
// change the status any more: it is appended as the message's error
// field, which the client reads as it would any error answer. Pages are
// not one snapshot: a row written while the list streams is in it or not
// depending on whether its place in the order was passed, as with a
// client paging by hand.

// streamPage is how many items the first page of a streamed list reads,
// and streamPageMax the most a later page asks for; a page ends sooner
// when its items reach streamPageBytes. The database sends every row a
// page query asks for, and 500 items of the largest kind (a desired LRP
// may carry 128 KiB of routes and 10 KiB of annotation) could be tens of
// megabytes, so the first page asks for 500. Later pages ask for twice as
// many as a page that ended on its count (nextPageLimit): only lists of
// small items grow their pages, to fewer than streamPageBytes of items
// all the same. A list of peer's actual LRPs (about 210 bytes each) then
// takes 9 page queries rather than 20, which took 2–4 ms (about a tenth)
// off its whole list on MySQL (docs/perf-lists.md). A slow reader's
// stream holds one page's items (the page read ahead) and the bytes of the
// page it writes (stream).
var (
	streamPage      = 500
	streamPageMax   = 2000
	streamPageBytes = 256 << 10
)

// onePageBytes bounds a page a client asks for with a limit, as
// streamPageBytes bounds a streamed one: a page ends after the item that
// reaches it, with a next_cursor, however many the limit allowed. 1,000
// desired LRPs may each carry a definition of up to 1 MiB; without it one
// request for a page of them held gigabytes, and a client's 250 requests
// a multiple of that. Measured in protobuf bytes; JSON takes about twice.
var onePageBytes = 1 << 20

// errPageFull stops a page's read once it holds streamPageBytes (or
// onePageBytes). A
// models.Error, so that the store hands it back as it is.
var errPageFull = &models.Error{Type: models.Error_UnknownError, Message: "list page full"}

// pagedRequest is a list request: filters, a cursor and a limit.
type pagedRequest interface {
	request
	GetCursor() string
	GetLimit() int32
}

// listing is how an endpoint reads its list.
type listing struct {
	// read hands fn the items after cursor (a models cursor; empty for
	// the start), at most limit of them when limit > 0.
	read func(ctx context.Context, req request, cursor string, limit int, fn func(listItem) error) error
	// items and nextCursor are the response's fields.
	items, nextCursor protoreflect.FieldDescriptor
	newResponse       func() protoreflect.Message
}

// listItem is what a list holds: a message that names its page boundary.
type listItem interface {
	proto.Message
	ListCursor() string
}

// listRoute builds the endpoint of a list: read hands over the Items the
// request asks for.
func listRoute[Req any, PReq interface {
	*Req
	pagedRequest
}, Resp proto.Message, Item listItem](path string, read func(context.Context, PReq, string, int, func(Item) error) error) endpoint {
	var emptyResponse Resp
	responseType := emptyResponse.ProtoReflect().Type()
	l := &listing{
		read: func(ctx context.Context, req request, cursor string, limit int, fn func(listItem) error) error {
			return read(ctx, req.(PReq), cursor, limit, func(item Item) error { return fn(item) })
		},
		items:       listField(responseType.Descriptor()),
		nextCursor:  responseType.Descriptor().Fields().ByName("next_cursor"),
		newResponse: responseType.New,
	}
	if l.nextCursor == nil {
		panic(path + ": list response " + string(responseType.Descriptor().FullName()) + " has no next_cursor")
	}
	e := route(path, func(ctx context.Context, req PReq) (Resp, error) {
		response, err := l.onePage(ctx, req)
		if err != nil {
			var none Resp
			return none, err
		}
		return response.Interface().(Resp), nil
	})
	e.listing = l
	return e
}

// listField is the response's one repeated message field.
func listField(response protoreflect.MessageDescriptor) protoreflect.FieldDescriptor {
	var found protoreflect.FieldDescriptor
	fields := response.Fields()
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); f.IsList() && f.Message() != nil {
			if found != nil {
				panic(string(response.FullName()) + " has more than one list")
			}
			found = f
		}
	}
	if found == nil {
		panic(string(response.FullName()) + " has no list")
	}
	return found
}

// onePage answers a request with a limit: that many items at most, fewer
// when they reach onePageBytes, and a next_cursor when more may follow
// (one item more is read to know, unless the page filled by its bytes).
func (l *listing) onePage(ctx context.Context, req pagedRequest) (protoreflect.Message, error) {
	limit := int(req.GetLimit())
	if limit == 0 {
		// Only reached when a caller skips the stream (a request with
		// no limit is streamed by serve): read it all the same way.
		limit = models.MaxListPage
	}
	var items []listItem
	full, err := l.readItems(ctx, req, req.GetCursor(), limit+1, onePageBytes, &items)
	if err != nil {
		return nil, err
	}
	response := l.newResponse()
	if len(items) > limit || full {
		items = items[:min(len(items), limit)]
		response.Set(l.nextCursor, protoreflect.ValueOfString(items[len(items)-1].ListCursor()))
	}
	list := response.Mutable(l.items).List()
	for _, item := range items {
		list.Append(protoreflect.ValueOfMessage(item.ProtoReflect()))
	}
	return response, nil
}

// streams says whether req asks for the whole list.
func (l *listing) streams(req request) bool {
	return req.(pagedRequest).GetLimit() == 0
}

// stream answers the whole list after the request's cursor, a page at a
// time (see the top of this file). An error before the first page went
// out is an ordinary error answer; a later one ends the message with its
// error field.
func (c *call) stream(ctx context.Context, w http.ResponseWriter, cd codec, l *listing, req pagedRequest, errorResponse func(*models.Error) proto.Message) {
	out := newListWriter(w, cd, l.items, c.api.listWriteTimeout)
	sent, pages := 0, 0
	// err is the store's failure to read a page or the codec's to encode
	// one; writeErr the client's failure to take one.
	var err, writeErr error
	limit := streamPage
	reading, stopReading := context.WithCancel(ctx)
	next := c.readAhead(reading, l, req, req.GetCursor(), limit)
	defer func() {
		// A page still being read when the answer ends (the client
		// stopped taking them) is abandoned, its query cancelled; the
		// handler returns once its connection is back in the pool.
		stopReading()
		if next != nil {
			<-next
		}
	}()
	for {
		read := <-next
		next = nil
		if err = read.err; err != nil {
			break
		}
		limit = nextPageLimit(len(read.page), limit, streamPageMax)
		if read.full {
			// The next page is read while this one is written, as the
			// database would send a single query's rows while the board
			// wrote those before them.
			next = c.readAhead(reading, l, req, read.page[len(read.page)-1].ListCursor(), limit)
		}
		if writeErr = out.encode(read.page); writeErr != nil {
			break
		}
		// The page is in out's bytes now: its items are let go of before
		// the write, which a slow client can hold for up to
		// listWriteTimeout, so that a stream holds one page of items
		// (the one read ahead) rather than two.
		items, full := len(read.page), read.full
		read = pageRead{}
		if writeErr = out.write(); writeErr != nil {
			break
		}
		sent += items
		pages++
		if !full {
			break
		}
	}
	if writeErr != nil && !errors.As(writeErr, new(encodeError)) {
		c.record(http.StatusOK, nil, lager.Data{"items_sent": sent, "pages": pages, "ended": "write failed: " + writeErr.Error()})
		return
	}
	if writeErr != nil {
		err = writeErr
	}
	if err != nil && !out.started {
		c.fail(w, cd, http.StatusOK, errorResponse, models.ConvertError(err))
		return
	}
	var failed *models.Error
	if err != nil {
		failed = safeError(models.ConvertError(err))
	}
	if endErr := out.end(failed); endErr != nil {
		c.record(http.StatusOK, failed, lager.Data{"items_sent": sent, "pages": pages, "ended": "write failed: " + endErr.Error()})
		return
	}
	c.record(http.StatusOK, failed, lager.Data{"items_sent": sent, "pages": pages})
}

// pageRead is the outcome of one readPage.
type pageRead struct {
	page []listItem
	full bool
	err  error
}

// readAhead starts reading the page after cursor (readPage) and returns
// where its outcome will be: one value, which the reading goroutine
// leaves there whether or not anyone takes it.
func (c *call) readAhead(ctx context.Context, l *listing, req pagedRequest, cursor string, limit int) <-chan pageRead {
	outcome := make(chan pageRead, 1)
	go func() {
		var read pageRead
		read.page = make([]listItem, 0, limit)
		read.full, read.err = c.readPage(ctx, l, req, cursor, limit, &read.page)
		outcome <- read
	}()
	return outcome
}

// nextPageLimit is how many items a streamed list asks the store for
// after a page that asked for asked and got read, at most max. The
// database sends every row a page query asks for, and rows past
// streamPageBytes are read only to be dropped: after a page that ended on
// its bytes, the next asks for an eighth more than fitted, and one more
// (items of a list are of similar sizes; a page of smaller ones ends on
// its count, and the page after it asks for twice as many), and after one
// that ended on its count, for twice as many. For a whole list of peer's
// desired LRPs (about 1.2 KB each, 220 to a page), asking for half as
// many again made MariaDB read and send 1.5 rows for each row listed.
func nextPageLimit(read, asked, max int) int {
	next := 2 * asked
	if read < asked {
		next = read + read/8 + 1
	}
	return min(next, max)
}

// readPage reads the items after cursor into page, limit of them or as
// many as reach streamPageBytes, with one query bounded by the database
// timeout, which holds a connection only while it runs. full says the
// page is full: more may follow.
func (c *call) readPage(ctx context.Context, l *listing, req pagedRequest, cursor string, limit int, page *[]listItem) (full bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.api.databaseTimeout)
	defer cancel()
	full, err = l.readItems(ctx, req, cursor, limit, streamPageBytes, page)
	if err != nil {
		return false, err
	}
	return full || len(*page) == limit, nil
}

// readItems reads the items after cursor into page, at most limit of
// them, and stops after the one whose bytes (protobuf) bring the page to
// maxBytes; byBytes says it stopped so.
func (l *listing) readItems(ctx context.Context, req pagedRequest, cursor string, limit, maxBytes int, page *[]listItem) (byBytes bool, err error) {
	size := 0
	err = l.read(ctx, req, cursor, limit, func(item listItem) error {
		*page = append(*page, item)
		if size += proto.Size(item); size >= maxBytes {
			return errPageFull
		}
		return nil
	})
	if errors.Is(err, errPageFull) {
		return true, nil
	}
	return false, err
}
