package admission_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/admission"
)

var _ = Describe("Decide", func() {
	limits := admission.Limits{
		RequestsInFlight:      10,
		ReservedForCells:      3,
		RequestsPerClient:     4,
		ListStreamsPerClient:  2,
		BodyReadersPerClient:  5,
		EventStreamsPerClient: 3,
	}
	DescribeTable("admits or names the limit that refuses",
		func(stage admission.Stage, cellCall bool, used admission.InUse, refusedBy string) {
			Expect(admission.Decide(limits, stage, cellCall, used)).To(Equal(refusedBy))
		},
		Entry("a body, nothing in use", admission.Body, false, admission.InUse{}, ""),
		Entry("a body, the client one below its cap", admission.Body, false, admission.InUse{Client: 4}, ""),
		Entry("a body, the client at its cap", admission.Body, false, admission.InUse{Client: 5}, admission.BodyReadersPerClient),
		Entry("a cell's body, the cell at its cap: no reservation for bodies", admission.Body, true, admission.InUse{Client: 5}, admission.BodyReadersPerClient),
		Entry("a body, the board's requests all taken: bodies do not count as in flight", admission.Body, false, admission.InUse{Board: 10, Client: 0}, ""),

		Entry("an API call, nothing in use", admission.Request, false, admission.InUse{}, ""),
		Entry("an API call, the last place outside the reservation", admission.Request, false, admission.InUse{Board: 6}, ""),
		Entry("an API call, only reserved places left", admission.Request, false, admission.InUse{Board: 7}, admission.RequestsInFlight),
		Entry("a cell call, only reserved places left", admission.Request, true, admission.InUse{Board: 7}, ""),
		Entry("a cell call, the last reserved place", admission.Request, true, admission.InUse{Board: 9}, ""),
		Entry("a cell call, the board full", admission.Request, true, admission.InUse{Board: 10}, admission.RequestsInFlight),
		Entry("an API call, the client at its cap", admission.Request, false, admission.InUse{Board: 4, Client: 4}, admission.RequestsPerClient),
		Entry("a cell call, the cell at its cap", admission.Request, true, admission.InUse{Board: 4, Client: 4}, admission.RequestsPerClient),
		Entry("the client's cap is named before the board's", admission.Request, false, admission.InUse{Board: 10, Client: 4}, admission.RequestsPerClient),

		Entry("a list stream, none open", admission.ListStream, false, admission.InUse{}, ""),
		Entry("a list stream, the client one below its cap", admission.ListStream, false, admission.InUse{Board: 50, Client: 1}, ""),
		Entry("a list stream, the client at its cap", admission.ListStream, false, admission.InUse{Client: 2}, admission.ListStreamsPerClient),
		Entry("an event stream, none open", admission.EventStream, false, admission.InUse{}, ""),
		Entry("an event stream, the client one below its cap", admission.EventStream, false, admission.InUse{Board: 500, Client: 2}, ""),
		Entry("an event stream, the client at its cap", admission.EventStream, false, admission.InUse{Client: 3}, admission.EventStreamsPerClient),
		Entry("a cell's event stream, the cell at its cap: no reservation for streams", admission.EventStream, true, admission.InUse{Client: 3}, admission.EventStreamsPerClient),
	)

	It("with no reservation, lets API calls use every place", func() {
		open := limits
		open.ReservedForCells = 0
		Expect(admission.Decide(open, admission.Request, false, admission.InUse{Board: 9})).To(BeEmpty())
		Expect(admission.Decide(open, admission.Request, false, admission.InUse{Board: 10})).To(Equal(admission.RequestsInFlight))
	})
})

var _ = Describe("Refusal", func() {
	limits := admission.Limits{RequestsInFlight: 10, ReservedForCells: 3, RequestsPerClient: 4, ListStreamsPerClient: 2, BodyReadersPerClient: 5, EventStreamsPerClient: 3}
	DescribeTable("names the limit and its value",
		func(limit string, cellCall bool, message string) {
			Expect(admission.Refusal(limits, limit, cellCall)).To(Equal(message))
		},
		Entry("the board, to an API call", admission.RequestsInFlight, false, "requests_in_flight: the board serves at most 10 requests (event streams aside) at once, 3 of them kept for cells; retry later"),
		Entry("the board, to a cell call", admission.RequestsInFlight, true, "requests_in_flight: the board serves at most 10 requests (event streams aside) at once; retry later"),
		Entry("a client's requests", admission.RequestsPerClient, false, "requests_per_client: the board serves at most 4 requests at once to one client; retry later"),
		Entry("a client's list streams", admission.ListStreamsPerClient, false, "list_streams_per_client: the board answers at most 2 list calls (whole lists or pages) at once to one client; retry once one has been read"),
		Entry("a client's bodies", admission.BodyReadersPerClient, false, "body_readers_per_client: the board reads at most 5 request bodies at once from one client; retry later"),
		Entry("a client's event streams", admission.EventStreamsPerClient, false, "event_streams_per_client: the board serves at most 3 event streams at once to one client; retry later"),
	)
})

var _ = Describe("Limits.Check", func() {
	DescribeTable("names the field that is wrong",
		func(change func(*admission.Limits), field string) {
			l := admission.DefaultLimits()
			change(&l)
			if field == "" {
				Expect(l.Check()).To(Succeed())
				return
			}
			Expect(l.Check()).To(MatchError(HavePrefix(field + ":")))
		},
		Entry("the defaults", func(*admission.Limits) {}, ""),
		Entry("no requests", func(l *admission.Limits) { l.RequestsInFlight = 0 }, "RequestsInFlight"),
		Entry("a reservation of every place", func(l *admission.Limits) { l.ReservedForCells = l.RequestsInFlight }, "ReservedForCells"),
		Entry("a negative reservation", func(l *admission.Limits) { l.ReservedForCells = -1 }, "ReservedForCells"),
		Entry("no reservation", func(l *admission.Limits) { l.ReservedForCells = 0 }, ""),
		Entry("no requests per client", func(l *admission.Limits) { l.RequestsPerClient = 0 }, "RequestsPerClient"),
		Entry("no list streams per client", func(l *admission.Limits) { l.ListStreamsPerClient = 0 }, "ListStreamsPerClient"),
		Entry("no bodies per client", func(l *admission.Limits) { l.BodyReadersPerClient = 0 }, "BodyReadersPerClient"),
		Entry("no event streams per client", func(l *admission.Limits) { l.EventStreamsPerClient = 0 }, "EventStreamsPerClient"),
	)
})
