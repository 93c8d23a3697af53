package migrations_test

import (
	"context"
	"fmt"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The import writes rows in the board's storage format; this reads them back
// through the board's own storage, and changes one, to show they are usable.
var _ = Describe("An imported classic database, through the board's storage", func() {
	for _, dialect := range testdb.MustDialects() {
		It("serves every LRP, definition and instance on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			loadFixture(conn, fixturePath(dialect))
			Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
			board := sqldb.New(conn, dialect)

			for _, want := range fixtureLRPs {
				lrp, err := board.DesiredLRPByProcessGuid(ctx, want.guid)
				Expect(err).NotTo(HaveOccurred(), want.guid)
				Expect(lrp.Domain).To(Equal(want.domain))
				Expect(lrp.Instances).To(BeEquivalentTo(want.instances))
				Expect(lrp.PlacementTags).To(ConsistOf(want.tags))
				Expect(lrp.Annotation).To(Equal(want.annotation))
				Expect(lrp.ActiveDefinitionId).To(Equal(migrations.LegacyDefinitionID))
				Expect(lrp.HealthyDefinitionId).To(Equal(migrations.LegacyDefinitionID))
				Expect(lrp.ModificationTag.GetEpoch()).To(Equal(want.epoch))
				Expect(lrp.ModificationTag.GetIndex()).To(BeEquivalentTo(want.tagIndex))
				if want.routes == "" {
					Expect(lrp.Routes).To(BeNil(), want.guid)
				} else {
					routes, err := protojson.Marshal(lrp.Routes)
					Expect(err).NotTo(HaveOccurred())
					Expect(routes).To(MatchJSON(want.routes), want.guid)
				}
				def := proto.CloneOf(lrp.Definition)
				Expect(def.DefinitionId).To(Equal(migrations.LegacyDefinitionID))
				def.DefinitionId, def.CreatedAt = "", 0
				Expect(proto.Equal(def, want.definition)).To(BeTrue(), "%s: got %v", want.guid, def)

				summaries, err := board.Definitions(ctx, want.guid)
				Expect(err).NotTo(HaveOccurred())
				Expect(summaries).To(HaveLen(1))
				Expect(summaries[0].DefinitionId).To(Equal(migrations.LegacyDefinitionID))
				Expect(summaries[0].Active).To(BeTrue())
				Expect(summaries[0].Healthy).To(BeTrue())
			}

			actual, err := board.ActualLRPs(ctx, db.ActualLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(actual).To(HaveLen(len(fixtureInstances)))
			byKey := map[string]*models.ActualLRP{}
			for _, a := range actual {
				byKey[fmt.Sprintf("%s/%d/%s", a.ProcessGuid, a.Index, a.Presence)] = a
			}
			for _, want := range fixtureInstances {
				got := byKey[fmt.Sprintf("%s/%d/%s", want.guid, want.index, want.presence)]
				Expect(got).NotTo(BeNil(), "%s/%d %s", want.guid, want.index, want.presence)
				Expect(got.State.String()).To(Equal(want.state))
				Expect(got.DefinitionId).To(Equal(migrations.LegacyDefinitionID))
				Expect(got.CellId).To(Equal(want.cellID))
				Expect(got.InstanceGuid).To(Equal(want.instanceGuid))
				Expect(got.CrashCount).To(BeEquivalentTo(want.crashCount))
				Expect(got.Since).To(Equal(want.since))
				Expect(got.Routable).To(Equal(want.routable))
				Expect(proto.Equal(got.NetInfo, want.netInfo)).To(BeTrue(), "%s/%d net_info: got %v", want.guid, want.index, got.NetInfo)
			}

			// A new definition rolls in beside the imported one.
			next := proto.CloneOf(fixtureLRPs[3].definition)
			next.Action.Args = []string{"--fast"}
			updated, err := board.UpdateDesiredLRP(ctx, "worker", &models.DesiredLRPUpdate{Definition: next, UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.ActiveDefinitionId).To(Equal("v2"))
			Expect(updated.HealthyDefinitionId).To(Equal(migrations.LegacyDefinitionID))
			summaries, err := board.Definitions(ctx, "worker")
			Expect(err).NotTo(HaveOccurred())
			Expect(summaries).To(HaveLen(2))
		})
	}
})
