package sqldb_test

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("coalesced writes", func(b *board) {
	var store *sqldb.SQLDB
	var sink *recordingSink

	BeforeEach(func() {
		// One lane, so that every write queued while it is held is in one
		// group.
		sink = &recordingSink{}
		// Without injected commit faults (CommitFaultsEnv): these specs
		// count groups, and a faulted group's writes run alone.
		store = sqldb.New(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(sink), sqldb.WithCoalescing(1))
		for _, guid := range []string{"a", "b", "c", "d"} {
			_, err := store.DesireLRP(b.ctx, newLRP(guid, "apps", 1))
			Expect(err).NotTo(HaveOccurred())
		}
		sink.take()
	})

	get := func(guid string) *models.DesiredLRP {
		GinkgoHelper()
		lrp, err := store.DesiredLRPByProcessGuid(b.ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		return lrp
	}

	// group runs the writes concurrently while the lane is held, so that
	// they queue, then releases it: they are written as one group. It
	// returns each write's error, in order.
	group := func(writes ...func() error) []error {
		GinkgoHelper()
		release := store.HoldWrites()
		errs := make([]error, len(writes))
		var wg sync.WaitGroup
		for i, write := range writes {
			wg.Go(func() { errs[i] = write() })
		}
		Eventually(store.QueuedWrites).Should(Equal(len(writes)))
		release()
		wg.Wait()
		return errs
	}

	It("keeps each write's own outcome: a stale tag and an invalid route are refused alone, the others commit together", func() {
		stale := get("b").ModificationTag
		_, err := store.UpdateDesiredLRP(b.ctx, "b", &models.DesiredLRPUpdate{Annotation: stringp("moved on")})
		Expect(err).NotTo(HaveOccurred())
		bBefore, cBefore := get("b"), get("c")
		badRoutes, err := structpb.NewStruct(map[string]any{
			"http": []any{map[string]any{"hostname": "c.example.com", "port": 7070}},
		})
		Expect(err).NotTo(HaveOccurred())
		sink.take()
		groupsBefore, groupedBefore, _ := store.CoalescedWrites()

		var aAfter, dAfter *models.DesiredLRP
		errs := group(
			func() (err error) {
				aAfter, err = store.UpdateDesiredLRP(b.ctx, "a", &models.DesiredLRPUpdate{Annotation: stringp("a, grouped")})
				return err
			},
			func() error {
				_, err := store.UpdateDesiredLRP(b.ctx, "b", &models.DesiredLRPUpdate{Annotation: stringp("stale"), ModificationTag: stale})
				return err
			},
			func() error {
				_, err := store.UpdateDesiredLRP(b.ctx, "c", &models.DesiredLRPUpdate{Routes: badRoutes})
				return err
			},
			func() (err error) {
				dAfter, err = store.UpdateDesiredLRP(b.ctx, "d", &models.DesiredLRPUpdate{Annotation: stringp("d, grouped"), Instances: int32p(2)})
				return err
			},
			func() error {
				_, err := store.DesireLRP(b.ctx, newLRP("e", "apps", 1))
				return err
			},
		)

		Expect(errs[0]).NotTo(HaveOccurred())
		Expect(errs[1]).To(HaveErrorType(models.Error_ResourceConflict))
		Expect(errs[1].Error()).To(ContainSubstring("modification_tag is stale"))
		Expect(errs[2]).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(errs[2].Error()).To(ContainSubstring("update.routes.http[0].port"))
		Expect(errs[3]).NotTo(HaveOccurred())
		Expect(errs[4]).NotTo(HaveOccurred())

		// The refused writes changed nothing; the others are stored as they
		// were answered.
		Expect(get("b")).To(EqualProto(bBefore))
		Expect(get("c")).To(EqualProto(cBefore))
		Expect(get("a")).To(EqualProto(aAfter))
		Expect(aAfter.Annotation).To(Equal("a, grouped"))
		Expect(get("d")).To(EqualProto(dAfter))
		Expect(dAfter.Instances).To(BeEquivalentTo(2))
		Expect(b.instances("d")).To(HaveLen(2))
		Expect(get("e").Instances).To(BeEquivalentTo(1))

		// The three that committed did so in one group.
		groups, grouped, _ := store.CoalescedWrites()
		Expect(groups - groupsBefore).To(BeEquivalentTo(1))
		Expect(grouped - groupedBefore).To(BeEquivalentTo(3))

		// Each committed write's events are logged once; the refused ones
		// logged nothing.
		var keys []string
		for _, e := range sink.take() {
			if e.Type == models.EventOperationChanged {
				keys = append(keys, e.Key)
			}
		}
		Expect(keys).To(ConsistOf("a", "d", "e"))
	})

	It("answers a write alone as fast as without coalescing: a group of one is the write's own transaction", func() {
		groupsBefore, _, aloneBefore := store.CoalescedWrites()
		_, err := store.UpdateDesiredLRP(b.ctx, "a", &models.DesiredLRPUpdate{Annotation: stringp("alone")})
		Expect(err).NotTo(HaveOccurred())
		groups, _, alone := store.CoalescedWrites()
		Expect(groups).To(Equal(groupsBefore))
		Expect(alone - aloneBefore).To(BeEquivalentTo(1))
	})

	It("writes two writes of one LRP in one group one after the other, the later seeing the earlier", func() {
		tag := get("a").ModificationTag
		groupsBefore, groupedBefore, _ := store.CoalescedWrites()
		var answers [2]*models.DesiredLRP
		errs := group(
			func() (err error) {
				answers[0], err = store.UpdateDesiredLRP(b.ctx, "a", &models.DesiredLRPUpdate{Annotation: stringp("one")})
				return err
			},
			func() (err error) {
				answers[1], err = store.UpdateDesiredLRP(b.ctx, "a", &models.DesiredLRPUpdate{Annotation: stringp("two")})
				return err
			},
		)
		Expect(errs).To(HaveEach(Not(HaveOccurred())))
		groups, grouped, _ := store.CoalescedWrites()
		Expect(groups - groupsBefore).To(BeEquivalentTo(1))
		Expect(grouped - groupedBefore).To(BeEquivalentTo(2))

		// Whichever went first, the second moved the tag on from the
		// first's and is what is stored; their operations are numbered
		// one after the other.
		first, second := answers[0], answers[1]
		if first.ModificationTag.Index > second.ModificationTag.Index {
			first, second = second, first
		}
		Expect(first.ModificationTag.Index).To(Equal(tag.Index + 1))
		Expect(second.ModificationTag.Index).To(Equal(tag.Index + 2))
		Expect(get("a")).To(EqualProto(second))
		ops, _, err := store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "a"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ops[0].Sequence).To(Equal(ops[1].Sequence + 1))
		Expect(ops[0].Kind).To(Equal(models.Operation_UPDATE))
		Expect(ops[1].Kind).To(Equal(models.Operation_UPDATE))
	})
})
