package sqldb_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Names (process guids, domains, cell ids, zones, placement tags) must mean
// the same on SQLite, Postgres and MySQL: one input, one answer, whichever
// database the board runs on. These specs run the same inputs through the
// store's calls that take names on every dialect and hold every dialect to
// one expectation.
//
// The API validates names before the store sees them (models.ValidateName:
// valid UTF-8, printable, no leading or trailing space), and the store
// applies the same rules itself (checkName) to every name it keys or
// filters on, so that a caller of the store alone meets them too. Without
// them the dialects disagreed: MySQL's PAD SPACE took "web " for "web",
// Postgres refused NUL with an UnknownError, SQLite stored invalid UTF-8
// that Postgres and MySQL refused, and SQLite stored zones too long for
// the others' columns.
var _ = forEachDialect("names", func(b *board) {
	Describe("as the API takes them: validated, then stored", func() {
		// nameInput is one way to write a name, given a valid one.
		type nameInput struct {
			what  string
			value func(valid string, maxLength int) string
			// refused is the validation's reason, "" when the name is
			// accepted and must be stored as a name of its own.
			refused string
		}
		inputs := []nameInput{
			{"with a trailing space", func(v string, _ int) string { return v + " " }, "must not start or end with a space"},
			{"with a leading space", func(v string, _ int) string { return " " + v }, "must not start or end with a space"},
			{"holding NUL", func(v string, _ int) string { return v[:1] + "\x00" + v[1:] }, "must be printable"},
			{"holding invalid UTF-8", func(v string, _ int) string { return v + "\xff" }, "must be valid UTF-8"},
			{"differing only in case", func(v string, _ int) string { return strings.ToUpper(v) }, ""},
			{"at the max length", func(v string, n int) string { return v + strings.Repeat("x", n-len(v)) }, ""},
		}

		// nameCall stores valid first, then tries value, and shows what
		// was stored: the names the store holds afterwards.
		type nameCall struct {
			field     string
			valid     string
			maxLength int
			try       func(valid, value string) error
			stored    func() []string
		}
		cell := func(id, zone string, tags ...string) *models.Cell {
			return &models.Cell{CellId: id, RepUrl: "http://10.0.0.5:1800", Zone: zone,
				Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 8}, PlacementTags: tags}
		}
		register := func(c *models.Cell) error {
			request := &models.RegisterCellRequest{Cell: c}
			if err := request.Validate(); err != nil {
				return err
			}
			return b.store.RegisterCell(b.ctx, c, time.Minute)
		}
		desire := func(lrp *models.DesiredLRP) error {
			request := &models.DesireLRPRequest{DesiredLrp: lrp}
			if err := request.Validate(); err != nil {
				return err
			}
			_, err := b.store.DesireLRP(b.ctx, lrp)
			return err
		}
		upsertDomain := func(domain string) error {
			request := &models.UpsertDomainRequest{Domain: domain}
			if err := request.Validate(); err != nil {
				return err
			}
			return b.store.UpsertDomain(b.ctx, domain, 0)
		}
		// filter lists the instances a filter matches, as process guids.
		filter := func(request *models.ActualLRPsRequest) ([]string, error) {
			if err := request.Validate(); err != nil {
				return nil, err
			}
			lrps, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{Domain: request.Domain, CellID: request.CellId})
			var guids []string
			for _, lrp := range lrps {
				guids = append(guids, lrp.ProcessGuid)
			}
			return guids, err
		}
		desiredGuids := func() []string {
			lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, lrp := range lrps {
				names = append(names, lrp.ProcessGuid)
			}
			return names
		}
		desiredDomains := func() []string {
			lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			var names []string
			for _, lrp := range lrps {
				names = append(names, lrp.Domain)
			}
			return names
		}
		cells := func(name func(*models.Cell) []string) func() []string {
			return func() []string {
				all, err := b.store.Cells(b.ctx)
				Expect(err).NotTo(HaveOccurred())
				var names []string
				for _, c := range all {
					names = append(names, name(c)...)
				}
				return names
			}
		}

		calls := []nameCall{
			{"desired_lrp.process_guid", "web", 128, func(valid, value string) error {
				Expect(desire(plainLRP(valid, "apps"))).To(Succeed())
				return desire(plainLRP(value, "apps"))
			}, desiredGuids},
			{"desired_lrp.domain", "apps", 255, func(valid, value string) error {
				Expect(desire(plainLRP("first", valid))).To(Succeed())
				return desire(plainLRP("second", value))
			}, desiredDomains},
			{"desired_lrp.placement_tags[0]", "ssd", 255, func(valid, value string) error {
				first := plainLRP("first", "apps")
				first.PlacementTags = []string{valid}
				Expect(desire(first)).To(Succeed())
				second := plainLRP("second", "apps")
				second.PlacementTags = []string{value}
				return desire(second)
			}, func() []string {
				lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
				Expect(err).NotTo(HaveOccurred())
				var tags []string
				for _, lrp := range lrps {
					tags = append(tags, lrp.PlacementTags...)
				}
				return tags
			}},
			{"domain", "apps", 255, func(valid, value string) error {
				Expect(upsertDomain(valid)).To(Succeed())
				return upsertDomain(value)
			}, func() []string {
				domains, err := b.store.FreshDomains(b.ctx)
				Expect(err).NotTo(HaveOccurred())
				var names []string
				for _, d := range domains {
					names = append(names, d.Domain)
				}
				return names
			}},
			{"cell.cell_id", "cell-1", 255, func(valid, value string) error {
				Expect(register(cell(valid, "z1"))).To(Succeed())
				return register(cell(value, "z1"))
			}, cells(func(c *models.Cell) []string { return []string{c.CellId} })},
			// A zone or a tag is not a key: the cell registers again with
			// it changed, and must then hold exactly the new value (MySQL
			// would take "z1 " for "z1" and keep the old one).
			{"cell.zone", "z1", 255, func(valid, value string) error {
				Expect(register(cell("cell-1", valid))).To(Succeed())
				b.clock.Advance(time.Second)
				return register(cell("cell-1", value))
			}, cells(func(c *models.Cell) []string { return []string{c.Zone} })},
			{"cell.placement_tags[0]", "gpu", 255, func(valid, value string) error {
				Expect(register(cell("cell-1", "z1", valid))).To(Succeed())
				b.clock.Advance(time.Second)
				return register(cell("cell-1", "z1", value))
			}, cells(func(c *models.Cell) []string { return c.PlacementTags })},
		}

		for _, call := range calls {
			for _, input := range inputs {
				It("answers "+call.field+" "+input.what+" alike", func() {
					value := input.value(call.valid, call.maxLength)
					err := call.try(call.valid, value)
					if input.refused != "" {
						Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
						Expect(err.Error()).To(HavePrefix("InvalidRequest: " + call.field + ": " + input.refused + ", got "))
						Expect(call.stored()).To(ConsistOf(call.valid), "nothing stored")
						return
					}
					Expect(err).NotTo(HaveOccurred())
					Expect(call.stored()).To(ContainElements(value), "stored as given")
					if call.field == "cell.zone" || call.field == "cell.placement_tags[0]" {
						Expect(call.stored()).To(ConsistOf(value), "the new value replaces the old one")
					} else {
						Expect(call.stored()).To(ConsistOf(call.valid, value), "two names, two rows")
					}
				})
			}
		}

		Describe("the actual LRP filters", func() {
			BeforeEach(func() {
				_, err := b.store.DesireLRP(b.ctx, plainLRP("web", "apps"))
				Expect(err).NotTo(HaveOccurred())
				b.setState("web", 0, models.ActualLRP_CLAIMED, "cell-1")
			})

			for _, input := range inputs {
				It("answers a domain filter "+input.what+" alike", func() {
					Expect(filter(&models.ActualLRPsRequest{Domain: "apps"})).To(ConsistOf("web"))
					guids, err := filter(&models.ActualLRPsRequest{Domain: input.value("apps", 255)})
					if input.refused != "" {
						Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
						Expect(err.Error()).To(HavePrefix("InvalidRequest: domain: " + input.refused + ", got "))
						return
					}
					Expect(err).NotTo(HaveOccurred())
					Expect(guids).To(BeEmpty(), "another name matches nothing")
				})

				It("answers a cell_id filter "+input.what+" alike", func() {
					Expect(filter(&models.ActualLRPsRequest{CellId: "cell-1"})).To(ConsistOf("web"))
					guids, err := filter(&models.ActualLRPsRequest{CellId: input.value("cell-1", 255)})
					if input.refused != "" {
						Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
						Expect(err.Error()).To(HavePrefix("InvalidRequest: cell_id: " + input.refused + ", got "))
						return
					}
					Expect(err).NotTo(HaveOccurred())
					Expect(guids).To(BeEmpty(), "another name matches nothing")
				})
			}
		})
	})

	// What already agrees when a caller skips the API's validation.
	Describe("straight into the store", func() {
		It("keeps names that differ only in case apart", func() {
			for _, guid := range []string{"web", "Web", "WEB"} {
				_, err := b.store.DesireLRP(b.ctx, plainLRP(guid, strings.ToLower(guid)+"-"+guid))
				Expect(err).NotTo(HaveOccurred())
			}
			for _, guid := range []string{"web", "Web", "WEB"} {
				lrp, err := b.store.DesiredLRPByProcessGuid(b.ctx, guid)
				Expect(err).NotTo(HaveOccurred())
				Expect(lrp.ProcessGuid).To(Equal(guid))
			}
			Expect(b.count("SELECT COUNT(*) FROM desired_lrps")).To(Equal(3))

			Expect(b.store.UpsertDomain(b.ctx, "apps", 0)).To(Succeed())
			Expect(b.store.UpsertDomain(b.ctx, "Apps", 0)).To(Succeed())
			Expect(b.count("SELECT COUNT(*) FROM domains")).To(Equal(2))

			Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: "cell-1", RepUrl: "http://10.0.0.5:1800", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}, time.Minute)).To(Succeed())
			Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: "Cell-1", RepUrl: "http://10.0.0.6:1800", Zone: "Z1",
				Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}, time.Minute)).To(Succeed())
			all, err := b.store.Cells(b.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(2))

			b.setState("web", 0, models.ActualLRP_CLAIMED, "cell-1")
			byCell, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{CellID: "Cell-1"})
			Expect(err).NotTo(HaveOccurred())
			Expect(byCell).To(BeEmpty())
			byDomain, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{Domain: "WEB-WEB"})
			Expect(err).NotTo(HaveOccurred())
			Expect(byDomain).To(BeEmpty(), "the domain is web-WEB")
		})

		It("stores names at the max length, in characters, and reads them back exactly", func() {
			guid := strings.Repeat("g", 128)
			asciiDomain := strings.Repeat("d", 255)
			wideDomain := strings.Repeat("é", 255) // 510 bytes; the columns count characters
			cellID := strings.Repeat("c", 255)

			_, err := b.store.DesireLRP(b.ctx, plainLRP(guid, asciiDomain))
			Expect(err).NotTo(HaveOccurred())
			_, err = b.store.DesireLRP(b.ctx, plainLRP("wide", wideDomain))
			Expect(err).NotTo(HaveOccurred())
			lrp, err := b.store.DesiredLRPByProcessGuid(b.ctx, guid)
			Expect(err).NotTo(HaveOccurred())
			Expect(lrp.Domain).To(Equal(asciiDomain))
			wide, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{Domain: wideDomain})
			Expect(err).NotTo(HaveOccurred())
			Expect(wide).To(HaveLen(1))
			Expect(wide[0].Domain).To(Equal(wideDomain))

			Expect(b.store.UpsertDomain(b.ctx, wideDomain, 0)).To(Succeed())
			domains, err := b.store.FreshDomains(b.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(domains).To(HaveLen(1))
			Expect(domains[0].Domain).To(Equal(wideDomain))

			Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: cellID, RepUrl: "http://10.0.0.5:1800", Zone: strings.Repeat("z", 255),
				Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}, time.Minute)).To(Succeed())
			all, err := b.store.Cells(b.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(1))
			Expect(all[0].CellId).To(Equal(cellID))
		})

		It("refuses names over the max length as InvalidRequest, storing nothing", func() {
			_, err := b.store.DesireLRP(b.ctx, plainLRP(strings.Repeat("g", 129), "apps"))
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			_, err = b.store.DesireLRP(b.ctx, plainLRP("web", strings.Repeat("é", 256)))
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(b.store.UpsertDomain(b.ctx, strings.Repeat("d", 256), 0)).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: strings.Repeat("c", 256), RepUrl: "http://10.0.0.5:1800", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}, time.Minute)).To(HaveErrorType(models.Error_InvalidRequest))
			for _, table := range []string{"desired_lrps", "actual_lrps", "domains", "cells"} {
				Expect(b.count("SELECT COUNT(*) FROM "+table)).To(BeZero(), table)
			}
		})

		It("refuses a trailing space, NUL or invalid UTF-8 in any name it keys or filters on as InvalidRequest, storing nothing", func() {
			for _, bad := range []string{"web ", " web", "w\x00eb", "web\xff"} {
				_, err := b.store.DesireLRP(b.ctx, plainLRP(bad, "apps"))
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest), "guid %q", bad)
				_, err = b.store.DesireLRP(b.ctx, plainLRP("web", bad))
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest), "domain %q", bad)
				Expect(b.store.UpsertDomain(b.ctx, bad, 0)).To(HaveErrorType(models.Error_InvalidRequest), "domain %q", bad)
				Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: bad, RepUrl: "http://10.0.0.5:1800", Zone: "z1",
					Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}, time.Minute)).To(HaveErrorType(models.Error_InvalidRequest), "cell %q", bad)
				Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: "cell-1", RepUrl: "http://10.0.0.5:1800", Zone: bad,
					Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}, time.Minute)).To(HaveErrorType(models.Error_InvalidRequest), "zone %q", bad)
				for _, filter := range []db.ActualLRPFilter{{Domain: bad}, {CellID: bad}, {ProcessGuid: bad}} {
					_, err := b.store.ActualLRPs(b.ctx, filter)
					Expect(err).To(HaveErrorType(models.Error_InvalidRequest), "filter %+v", filter)
				}
			}
			Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: "cell-1", RepUrl: "http://10.0.0.5:1800", Zone: strings.Repeat("z", 256),
				Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}, time.Minute)).To(HaveErrorType(models.Error_InvalidRequest))
			for _, table := range []string{"desired_lrps", "actual_lrps", "run_infos", "operations", "domains", "cells"} {
				Expect(b.count("SELECT COUNT(*) FROM "+table)).To(BeZero(), table)
			}
		})

		It("refuses invalid UTF-8 in a desired LRP's guid or domain as InvalidRequest, storing nothing", func() {
			_, err := b.store.DesireLRP(b.ctx, plainLRP("web\xff", "apps"))
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			_, err = b.store.DesireLRP(b.ctx, plainLRP("web", "apps\xff"))
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			for _, table := range []string{"desired_lrps", "actual_lrps", "run_infos", "operations"} {
				Expect(b.count("SELECT COUNT(*) FROM "+table)).To(BeZero(), table)
			}
		})
	})
})

// plainLRP is a one-instance LRP with no routes, so that any guid fits
// (newLRP puts the guid in a route's host name).
func plainLRP(guid, domain string) *models.DesiredLRP {
	return &models.DesiredLRP{ProcessGuid: guid, Domain: domain, Instances: 1, Definition: newDefinition("v1", "/bin/app")}
}
