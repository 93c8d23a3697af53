package client_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Freeze windows", func() {
	It("adds, lists with the active one, and removes windows", func() {
		ctx := context.Background()
		c := client.New(startBoard().URL)
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		added, err := c.AddFreezeWindow(ctx, &models.FreezeWindow{Name: "release",
			From: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), Until: until.Format(time.RFC3339)})
		Expect(err).NotTo(HaveOccurred())
		Expect(added.GetCreatedAt()).NotTo(BeZero())
		_, err = c.AddFreezeWindow(ctx, &models.FreezeWindow{Name: "weekend", Schedule: "0 18 * * 5", DurationMs: 1000})
		Expect(err).NotTo(HaveOccurred())

		list, err := c.FreezeWindows(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(list.GetWindows()).To(HaveLen(2))
		Expect(list.GetWindows()[0].GetName()).To(Equal("release"))
		Expect(list.GetActive()).To(Equal("release"))
		Expect(list.GetActiveUntil()).To(Equal(until.UnixNano()))

		_, err = c.AddFreezeWindow(ctx, &models.FreezeWindow{Name: "weekend", Schedule: "0 18 * * 5", DurationMs: 1000})
		Expect(err).To(errorOfType(models.Error_ResourceExists))
		_, err = c.AddFreezeWindow(ctx, &models.FreezeWindow{Name: "bad", Schedule: "0 18 * * 5"})
		Expect(err).To(errorOfType(models.Error_InvalidRequest))

		Expect(c.RemoveFreezeWindow(ctx, "release")).To(Succeed())
		Expect(c.RemoveFreezeWindow(ctx, "release")).To(errorOfType(models.Error_ResourceNotFound))
		list, err = c.FreezeWindows(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(list.GetWindows()).To(HaveLen(1))
		Expect(list.GetActive()).To(BeEmpty())
	})
})
