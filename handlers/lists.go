package handlers

import (
	"context"
	"errors"
	"net/http"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

// Lists (desired LRPs, scheduling infos, actual LRPs, cells) come in
// pages or whole, as models/list_page.go describes. A request with a limit
// gets that page and a next_cursor, read with one query. One without gets
// the whole list, streamed: the store hands over the rows of one query as
// it reads them and they are written streamPage at a time, so that eight
// clients listing a large board at once hold eight pages, not eight
// copies of the database. (One query rather than a query per page: a
// page query by a filter can cost a sort of every match when the
// database's statistics are stale, and a whole list read as pages would
// pay it every page.) The query's connection is held while the client
// reads, for at most listWriteTimeout per page.
//
// A streamed answer is the same message a buffered one would be, so
// clients decode it unchanged: in protobuf, a message is the
// concatenation of its fields and a repeated field may come one element
// at a time; in JSON, the items are written into the array as they come.
// An error after the first page went out (the database went away) cannot
// change the status any more: it is appended as the message's error
// field, which the client reads as it would any error answer.

// streamPage is how many items a streamed list writes at once.
var streamPage = 500

// listWriteTimeout bounds the writing of one page of a streamed list,
// instead of the server's bound on the whole answer: a long list to a
// client that keeps reading is not cut, a client that stops is.
const listWriteTimeout = time.Minute

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

// onePage answers a request with a limit: that many items at most, and a
// next_cursor when more follow (one item more is read to know).
func (l *listing) onePage(ctx context.Context, req pagedRequest) (protoreflect.Message, error) {
	limit := int(req.GetLimit())
	if limit == 0 {
		// Only reached when a caller skips the stream (a request with
		// no limit is streamed by serve): read it all the same way.
		limit = models.MaxListPage
	}
	var items []listItem
	err := l.read(ctx, req, req.GetCursor(), limit+1, func(item listItem) error {
		items = append(items, item)
		return nil
	})
	if err != nil {
		return nil, err
	}
	response := l.newResponse()
	if len(items) > limit {
		items = items[:limit]
		response.Set(l.nextCursor, protoreflect.ValueOfString(items[limit-1].ListCursor()))
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

// stream answers the whole list after the request's cursor. An error
// before the first page went out is an ordinary error answer; a later one
// ends the message with its error field.
func (c *call) stream(ctx context.Context, w http.ResponseWriter, cd codec, l *listing, req pagedRequest, errorResponse func(*models.Error) proto.Message) {
	out := newListWriter(w, cd, l.items)
	page := make([]listItem, 0, streamPage)
	sent := 0
	// writeErr is the client's failure to take a page, as opposed to the
	// store's failure to read one.
	var writeErr error
	flush := func() error {
		if writeErr = out.add(page); writeErr != nil {
			return writeErr
		}
		sent += len(page)
		page = page[:0]
		return nil
	}
	err := l.read(ctx, req, req.GetCursor(), 0, func(item listItem) error {
		if page = append(page, item); len(page) == streamPage {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if writeErr != nil && !errors.As(writeErr, new(encodeError)) {
		c.record(http.StatusOK, nil, lager.Data{"items_sent": sent, "ended": "write failed: " + writeErr.Error()})
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
		c.record(http.StatusOK, failed, lager.Data{"items_sent": sent, "ended": "write failed: " + endErr.Error()})
		return
	}
	c.record(http.StatusOK, failed, lager.Data{"items_sent": sent})
}
