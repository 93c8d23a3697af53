package migrations_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
)

// What fixtures/legacy/<dialect>.sql holds, written out again by hand, in
// the board's terms.

type expectedLRP struct {
	guid, domain string
	instances    int
	tags         []string
	routes       string // JSON, "" for none
	annotation   string
	epoch        string
	tagIndex     int64
	definition   *models.LRPDefinition
	memory, disk int
}

type expectedInstance struct {
	guid         string
	index        int
	presence     string
	domain       string
	instanceGuid string
	cellID       string
	state        string
	netInfo      *models.NetInfo
	crashCount   int
	crashReason  string
	since        int64
	placementErr string
	routable     bool
	epoch        string
	tagIndex     int64
}

var fixtureLRPs = []expectedLRP{
	{
		guid: "api", domain: "cf-tasks", instances: 1, tags: []string{}, routes: `{"tcp-router":[{"external_port":9000}]}`,
		annotation: "it's the api", epoch: "epoch-api", tagIndex: 12, memory: 512, disk: 2048,
		definition: &models.LRPDefinition{
			Action:         &models.RunAction{Path: "/app/api", Args: []string{"serve"}, Dir: "/app"},
			Ports:          []uint32{9000, 9001},
			HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 9000},
			StartTimeoutMs: 30000, MemoryMb: 512, DiskMb: 2048,
		},
	},
	{
		guid: "idle", domain: "cf-apps", instances: 0, tags: []string{"zone-b"}, routes: `{}`,
		annotation: "", epoch: "epoch-idle", tagIndex: 1, memory: 64, disk: 64,
		definition: &models.LRPDefinition{
			Action:      &models.RunAction{Path: "/bin/sleep", Args: []string{"infinity"}},
			HealthCheck: &models.HealthCheck{Type: models.HealthCheck_PROCESS},
			MemoryMb:    64, DiskMb: 64,
		},
	},
	{
		guid: "web-app", domain: "cf-apps", instances: 3, tags: []string{"zone-a", "ssd"},
		routes:     `{"cf-router":[{"hostnames":["web.example.com"],"port":8080}]}`,
		annotation: "etag-3f2a", epoch: "epoch-web", tagIndex: 4, memory: 256, disk: 1024,
		definition: &models.LRPDefinition{
			Action: &models.RunAction{
				Path: "/usr/local/bin/web", Args: []string{"--port", "8080"}, Dir: "/home/vcap/app",
				Env: []*models.EnvironmentVariable{{Name: "PORT", Value: "8080"}, {Name: "GREETING", Value: "héllo wörld"}},
			},
			Ports:          []uint32{8080},
			HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/healthz"},
			StartTimeoutMs: 60000, MemoryMb: 256, DiskMb: 1024,
		},
	},
	{
		guid: "worker", domain: "cf-apps", instances: 2, tags: []string{}, routes: "",
		annotation: "", epoch: "epoch-worker", tagIndex: 0, memory: 128, disk: 512,
		definition: &models.LRPDefinition{Action: &models.RunAction{Path: "/bin/worker"}, MemoryMb: 128, DiskMb: 512},
	},
}

func ports(pairs ...uint32) []*models.PortMapping {
	var out []*models.PortMapping
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, &models.PortMapping{ContainerPort: pairs[i], HostPort: pairs[i+1]})
	}
	return out
}

var fixtureInstances = []expectedInstance{
	{guid: "api", index: 0, presence: "ORDINARY", domain: "cf-tasks", instanceGuid: "ig-api-0", cellID: "cell-2", state: "RUNNING",
		netInfo: &models.NetInfo{Address: "10.0.0.12", InstanceAddress: "172.16.0.7", Ports: ports(9000, 61100, 9001, 61101)},
		since:   1700000500000000000, routable: true, epoch: "ae-api-0", tagIndex: 2},
	{guid: "removed-app", index: 0, presence: "ORDINARY", domain: "cf-apps", instanceGuid: "ig-removed-0", cellID: "cell-3", state: "RUNNING",
		netInfo: &models.NetInfo{Address: "10.0.0.13", Ports: ports(8080, 61200)},
		since:   1700000600000000000, routable: true, epoch: "ae-removed-0", tagIndex: 6},
	{guid: "web-app", index: 0, presence: "EVACUATING", domain: "cf-apps", instanceGuid: "ig-web-0-old", cellID: "cell-2", state: "RUNNING",
		netInfo: &models.NetInfo{Address: "10.0.0.12", InstanceAddress: "172.16.0.9", Ports: ports(8080, 61077)},
		since:   1699999000000000000, routable: true, epoch: "ae-web-0-old", tagIndex: 7},
	{guid: "web-app", index: 0, presence: "ORDINARY", domain: "cf-apps", instanceGuid: "ig-web-0", cellID: "cell-1", state: "RUNNING",
		netInfo: &models.NetInfo{Address: "10.0.0.11", InstanceAddress: "172.16.0.5", Ports: ports(8080, 61001)},
		since:   1700000000000000000, routable: true, epoch: "ae-web-0", tagIndex: 3},
	{guid: "web-app", index: 1, presence: "ORDINARY", domain: "cf-apps", state: "CRASHED",
		crashCount: 3, crashReason: "APP/PROC/WEB: Exited with status 1", since: 1700000100000000000, epoch: "ae-web-1", tagIndex: 9},
	{guid: "web-app", index: 2, presence: "ORDINARY", domain: "cf-apps", state: "UNCLAIMED",
		since: 1700000200000000000, placementErr: "insufficient resources: memory", epoch: "ae-web-2", tagIndex: 1},
	{guid: "worker", index: 0, presence: "ORDINARY", domain: "cf-apps", instanceGuid: "ig-worker-0", cellID: "cell-3", state: "CLAIMED",
		crashCount: 1, crashReason: "out of memory", since: 1700000300000000000, epoch: "ae-worker-0", tagIndex: 2},
	{guid: "worker", index: 1, presence: "ORDINARY", domain: "cf-apps", instanceGuid: "ig-worker-1", cellID: "cell-1", state: "RUNNING",
		netInfo: &models.NetInfo{Address: "10.0.0.11", Ports: ports(8080, 61002, 2222, 61003)},
		since:   1700000400000000000, routable: true, epoch: "ae-worker-1", tagIndex: 5},
}

var fixtureDomains = map[string]int64{"cf-apps": 4102444800000000000, "cf-tasks": 0}

func fixturePath(dialect string) string {
	return filepath.Join("..", "fixtures", "legacy", dialect+".sql")
}

var _ = Describe("Importing a classic BBS database", func() {
	for _, dialect := range testdb.MustDialects() {
		Context("on "+dialect, func() {
			var (
				ctx    context.Context
				conn   *sql.DB
				runner *migrations.Runner
			)

			BeforeEach(func() {
				ctx = context.Background()
				conn, _ = freshDB(dialect)
				runner = newRunner(conn, dialect)
				loadFixture(conn, fixturePath(dialect))
			})

			It("is recognised, and previewed without changing anything", func() {
				st, err := runner.Status(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(st.Classic).To(BeTrue())
				Expect(st.Pending()).To(HaveLen(runner.Latest()))

				preview, err := runner.Preview(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.MoveClassicAway).NotTo(BeEmpty())
				text := preview.SQL()
				Expect(text).To(ContainSubstring("legacy_desired_lrps"))
				Expect(text).To(ContainSubstring("legacy_actual_lrps"))
				Expect(text).To(ContainSubstring("4 rows of desired_lrps, 8 rows of actual_lrps, 2 rows of domains"))

				Expect(tables(conn, dialect)).To(Equal([]string{"actual_lrps", "desired_lrps", "domains"}))
			})

			It("keeps every LRP, definition, instance and domain", func() {
				Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())

				Expect(tables(conn, dialect)).To(Equal(boardTablesOf(dialect)), "the classic tables are gone")
				Expect(indexTable(conn, dialect, "desired_lrps_domain_key")).To(Equal("desired_lrps"),
					"the board's indexes exist even though the classic schema had ones named like its first ones")
				Expect(runner.Validate(ctx)).To(Succeed())
				expectImported(conn, dialect)
			})

			It("is a no-op when Up runs again", func() {
				Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
				before := versionRows(conn)
				applied, err := runner.Up(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(applied).To(BeEmpty())
				Expect(versionRows(conn)).To(Equal(before))
				expectImported(conn, dialect)
			})

			if dialect == testdb.MySQL {
				It("re-runs safely over rows an interrupted MySQL import already wrote", func() {
					// The state a crash between the import's commit and its DROPs leaves:
					// every row written, the classic tables still there, version 2 dirty.
					_, err := runner.Up(ctx, migrations.UpOptions{Target: 1})
					Expect(err).NotTo(HaveOccurred())
					for _, t := range []string{"legacy_desired_lrps", "legacy_actual_lrps", "legacy_domains"} {
						execSQL(conn, dialect, "CREATE TABLE saved_"+t+" LIKE "+t)
						execSQL(conn, dialect, "INSERT INTO saved_"+t+" SELECT * FROM "+t)
					}
					_, err = runner.Up(ctx, migrations.UpOptions{Target: 2})
					Expect(err).NotTo(HaveOccurred())
					for _, t := range []string{"legacy_desired_lrps", "legacy_actual_lrps", "legacy_domains"} {
						execSQL(conn, dialect, "RENAME TABLE saved_"+t+" TO "+t)
					}
					execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = TRUE WHERE version = 2")

					_, err = runner.Up(ctx, migrations.UpOptions{RetryDirty: true})
					Expect(err).NotTo(HaveOccurred())
					Expect(tables(conn, dialect)).To(Equal(boardTablesOf(dialect)))
					Expect(runner.Validate(ctx)).To(Succeed())
					expectImported(conn, dialect)
				})
			}

			Describe("a run_info blob the import cannot read", func() {
				BeforeEach(func() {
					execSQL(conn, dialect, "UPDATE desired_lrps SET run_info = ? WHERE process_guid = ?",
						[]byte(`{"action":{"path":"/bin/worker"},"cpu_weight":5}`), "worker")
				})

				It("fails naming the LRP and the field", func() {
					err := migrations.Up(ctx, conn, dialect)
					Expect(err).To(MatchError(ContainSubstring(`classic desired LRP "worker"`)))
					Expect(err).To(MatchError(ContainSubstring(`unknown field "cpu_weight"`)))
				})

				if dialect == testdb.MySQL {
					It("leaves MySQL dirty at the import, which re-runs once the row is fixed", func() {
						Expect(migrations.Up(ctx, conn, dialect)).To(HaveOccurred())
						err := migrations.Up(ctx, conn, dialect)
						var dirty *migrations.DirtyError
						Expect(errors.As(err, &dirty)).To(BeTrue())
						Expect(dirty.Version).To(Equal(2))

						execSQL(conn, dialect, "UPDATE legacy_desired_lrps SET run_info = ? WHERE process_guid = ?",
							[]byte(`{"action":{"path":"/bin/worker"}}`), "worker")
						_, err = runner.Up(ctx, migrations.UpOptions{RetryDirty: true})
						Expect(err).NotTo(HaveOccurred())
						Expect(tables(conn, dialect)).To(Equal(boardTablesOf(dialect)))
						expectImported(conn, dialect)
					})
				} else {
					It("changes nothing: the classic schema is still there, untouched", func() {
						Expect(migrations.Up(ctx, conn, dialect)).To(HaveOccurred())
						Expect(tables(conn, dialect)).To(Equal([]string{"actual_lrps", "desired_lrps", "domains"}))
						st, err := runner.Status(ctx)
						Expect(err).NotTo(HaveOccurred())
						Expect(st.Classic).To(BeTrue())
						Expect(strings1(conn, "SELECT process_guid FROM desired_lrps ORDER BY process_guid")).
							To(Equal([]string{"api", "idle", "web-app", "worker"}))
					})
				}
			})
		})
	}
})

func expectImported(conn *sql.DB, dialect string) {
	var lrpRows []expectedLRP
	type runInfoRow struct {
		hash         string
		memory, disk int
		blob         []byte
		createdAt    int64
	}
	runInfos := map[string]runInfoRow{}
	rows, err := conn.Query(`SELECT process_guid, definition_id, content_hash, memory_mb, disk_mb, definition, created_at
	                           FROM run_infos ORDER BY process_guid`)
	Expect(err).NotTo(HaveOccurred())
	for rows.Next() {
		var guid, id string
		var ri runInfoRow
		Expect(rows.Scan(&guid, &id, &ri.hash, &ri.memory, &ri.disk, &ri.blob, &ri.createdAt)).To(Succeed())
		Expect(id).To(Equal(migrations.LegacyDefinitionID))
		runInfos[guid] = ri
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	rows.Close()
	Expect(runInfos).To(HaveLen(len(fixtureLRPs)), "one definition per classic LRP")
	Expect(strings1(conn, "SELECT COUNT(*) FROM run_infos WHERE became_healthy AND NOT failed_validation")).
		To(Equal([]string{fmt.Sprint(len(fixtureLRPs))}), "an imported definition ran: it counts as having become healthy (0014)")

	rows, err = conn.Query(`SELECT process_guid, domain, instances, placement_tags, routes, annotation,
	                               active_definition_id, healthy_definition_id, modification_tag_epoch, modification_tag_index
	                          FROM desired_lrps ORDER BY process_guid`)
	Expect(err).NotTo(HaveOccurred())
	for rows.Next() {
		var l expectedLRP
		var tags, active, healthy string
		Expect(rows.Scan(&l.guid, &l.domain, &l.instances, &tags, &l.routes, &l.annotation, &active, &healthy, &l.epoch, &l.tagIndex)).To(Succeed())
		Expect(json.Unmarshal([]byte(tags), &l.tags)).To(Succeed(), "placement_tags is a JSON array: %q", tags)
		Expect(active).To(Equal(migrations.LegacyDefinitionID), l.guid)
		Expect(healthy).To(Equal(migrations.LegacyDefinitionID), l.guid)

		ri := runInfos[l.guid]
		l.memory, l.disk = ri.memory, ri.disk
		l.definition = &models.LRPDefinition{}
		Expect(proto.Unmarshal(ri.blob, l.definition)).To(Succeed())
		Expect(l.definition.DefinitionId).To(Equal(migrations.LegacyDefinitionID))
		Expect(l.definition.CreatedAt).To(Equal(ri.createdAt))
		Expect(ri.createdAt).To(BeNumerically(">", 0))
		Expect(ri.hash).To(Equal(models.DefinitionContentHash(l.definition)), l.guid)
		l.definition.DefinitionId, l.definition.CreatedAt = "", 0
		lrpRows = append(lrpRows, l)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	rows.Close()

	Expect(lrpRows).To(HaveLen(len(fixtureLRPs)))
	for i, want := range fixtureLRPs {
		got := lrpRows[i]
		Expect(got.guid).To(Equal(want.guid))
		Expect(got.domain).To(Equal(want.domain), want.guid)
		Expect(got.instances).To(Equal(want.instances), want.guid)
		Expect(got.tags).To(Equal(want.tags), want.guid)
		if want.routes == "" {
			Expect(got.routes).To(BeEmpty(), want.guid)
		} else {
			Expect(got.routes).To(MatchJSON(want.routes), want.guid)
		}
		Expect(got.annotation).To(Equal(want.annotation), want.guid)
		Expect(got.epoch).To(Equal(want.epoch), want.guid)
		Expect(got.tagIndex).To(Equal(want.tagIndex), want.guid)
		Expect(got.memory).To(Equal(want.memory), want.guid)
		Expect(got.disk).To(Equal(want.disk), want.guid)
		Expect(proto.Equal(got.definition, want.definition)).To(BeTrue(), "%s: got %v, want %v", want.guid, got.definition, want.definition)
		Expect(models.DefinitionContentHash(got.definition)).To(Equal(models.DefinitionContentHash(want.definition)))
	}

	rows, err = conn.Query(`SELECT process_guid, instance_index, presence, domain, instance_guid, cell_id, definition_id, state,
	                               net_info, crash_count, crash_reason, since, placement_error, routable, occupied,
	                               modification_tag_epoch, modification_tag_index
	                          FROM actual_lrps ORDER BY process_guid, instance_index, presence`)
	Expect(err).NotTo(HaveOccurred())
	var instances []expectedInstance
	for rows.Next() {
		var a expectedInstance
		var definitionID string
		var netInfo []byte
		var occupied bool
		Expect(rows.Scan(&a.guid, &a.index, &a.presence, &a.domain, &a.instanceGuid, &a.cellID, &definitionID, &a.state,
			&netInfo, &a.crashCount, &a.crashReason, &a.since, &a.placementErr, &a.routable, &occupied,
			&a.epoch, &a.tagIndex)).To(Succeed())
		Expect(definitionID).To(Equal(migrations.LegacyDefinitionID), "%s/%d", a.guid, a.index)
		Expect(occupied).To(BeFalse())
		if netInfo != nil {
			a.netInfo = &models.NetInfo{}
			Expect(proto.Unmarshal(netInfo, a.netInfo)).To(Succeed())
		}
		instances = append(instances, a)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	rows.Close()

	Expect(instances).To(HaveLen(len(fixtureInstances)))
	for i, want := range fixtureInstances {
		got := instances[i]
		Expect(proto.Equal(got.netInfo, want.netInfo)).To(BeTrue(), "%s/%d %s net_info: got %v, want %v",
			want.guid, want.index, want.presence, got.netInfo, want.netInfo)
		got.netInfo, want.netInfo = nil, nil
		Expect(got).To(Equal(want))
	}

	domains := map[string]int64{}
	rows, err = conn.Query("SELECT domain, expires_at FROM domains")
	Expect(err).NotTo(HaveOccurred())
	for rows.Next() {
		var d string
		var at int64
		Expect(rows.Scan(&d, &at)).To(Succeed())
		domains[d] = at
	}
	rows.Close()
	Expect(domains).To(Equal(fixtureDomains))
}
