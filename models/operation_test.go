package models_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Operation status transitions", func() {
	const (
		pending    = models.Operation_PENDING
		inProgress = models.Operation_IN_PROGRESS
		finished   = models.Operation_FINISHED
		failed     = models.Operation_ERROR
		canceled   = models.Operation_CANCELED
		evicted    = models.Operation_EVICTED
	)
	all := []models.Operation_Status{pending, inProgress, finished, failed, canceled, evicted}
	allowed := map[[2]models.Operation_Status]bool{
		{pending, inProgress}:  true,
		{pending, evicted}:     true,
		{pending, canceled}:    true,
		{inProgress, finished}: true,
		{inProgress, failed}:   true,
		{inProgress, canceled}: true,
	}

	DescribeTable("allows exactly Maestro's edges",
		func(from, to models.Operation_Status, ok bool) {
			err := models.CheckOperationTransition(from, to)
			if ok {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(HaveOccurred())
			Expect(models.IsErrorType(err, models.Error_InvalidStateTransition)).To(BeTrue())
			Expect(err.Error()).To(ContainSubstring(from.String()))
		},
		func() []TableEntry {
			var entries []TableEntry
			for _, from := range all {
				for _, to := range all {
					entries = append(entries, Entry(from.String()+" → "+to.String(), from, to, allowed[[2]models.Operation_Status{from, to}]))
				}
			}
			return entries
		}(),
	)

	It("says an ended operation has ended", func() {
		err := models.CheckOperationTransition(finished, canceled)
		Expect(err).To(MatchError(ContainSubstring("it has ended")))
		for _, s := range all {
			Expect(models.OperationEnded(s)).To(Equal(s != pending && s != inProgress), s.String())
		}
	})
})

var _ = Describe("Operation ids", func() {
	It("sort in creation order and validate", func() {
		t := time.Unix(1_700_000_000, 0)
		first, second := models.NewOperationID(t), models.NewOperationID(t.Add(time.Nanosecond))
		Expect(first < second).To(BeTrue())
		Expect((&models.OperationRequest{Id: first}).Validate()).To(Succeed())
	})
})

var _ = DescribeTable("operation request validation",
	func(req interface{ Validate() error }, field string) {
		err := req.Validate()
		if field == "" {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).To(HaveOccurred())
		Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue())
		Expect(models.ConvertError(err).GetMessage()).To(HavePrefix(field + ":"))
	},
	Entry("every operation", &models.OperationsRequest{}, ""),
	Entry("filters and a page", &models.OperationsRequest{ProcessGuid: "web", Status: models.Operation_FINISHED,
		Kind: models.Operation_DESIRE, Cursor: "0000000000000001abcdef01", Limit: 50}, ""),
	Entry("a bad process guid", &models.OperationsRequest{ProcessGuid: "no spaces"}, "process_guid"),
	Entry("an unknown status", &models.OperationsRequest{Status: 42}, "status"),
	Entry("an unknown kind", &models.OperationsRequest{Kind: 42}, "kind"),
	Entry("a cursor that is no id", &models.OperationsRequest{Cursor: "page-2"}, "cursor"),
	Entry("a negative limit", &models.OperationsRequest{Limit: -1}, "limit"),
	Entry("a limit over the page size", &models.OperationsRequest{Limit: 1001}, "limit"),
	Entry("get without id", &models.OperationRequest{}, "id"),
	Entry("get with a bad id", &models.OperationRequest{Id: "42"}, "id"),
	Entry("cancel without id", &models.CancelOperationRequest{}, "id"),
)
