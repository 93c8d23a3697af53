package handlers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("A cell's event stream, over TLS", func() {
	It("carries only the events about the cell, while an operator's carries every one", func() {
		hub := newHub()
		b := newTLSBoard(authStore, protobufWire, handlers.WithEvents(hub))
		open := func(who string) *client.EventStream {
			GinkgoHelper()
			c := client.New(b.server.URL, client.WithHTTPClient(b.clientAs(who)))
			stream, err := c.Events(context.Background(), client.EventsOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(stream.Close)
			return stream
		}
		cellStream, operatorStream := open(asCell1), open(asOperator)

		row := func(cellID string) *models.ActualLRP {
			return &models.ActualLRP{ProcessGuid: "web", Index: 0, CellId: cellID}
		}
		published := []models.Event{
			models.ActualLRPCreated(row(cell2)),
			models.ActualLRPChanged(row(""), row(cell1)), // placed on cell-1
			models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "web"}),
			models.ActualLRPChanged(row(cell1), row(cell2)), // taken from cell-1
			models.CellChanged(nil, &models.Cell{CellId: cell2}),
			models.CellChanged(nil, &models.Cell{CellId: cell1}),
			models.ActualLRPCrashed(row(cell2)),
			models.ActualLRPRemoved(row(cell1)),
		}
		hub.Publish(published...)
		first := hub.LastID() - uint64(len(published)) + 1

		var ids []uint64
		for range 4 {
			e, err := cellStream.Next()
			Expect(err).NotTo(HaveOccurred())
			ids = append(ids, e.ID-first)
		}
		Expect(ids).To(Equal([]uint64{1, 3, 5, 7}), "by index in published")

		for i := range published {
			e, err := operatorStream.Next()
			Expect(err).NotTo(HaveOccurred())
			Expect(e.ID - first).To(BeEquivalentTo(i))
		}
	})
})
