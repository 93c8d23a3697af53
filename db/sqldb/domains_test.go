package sqldb_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("domains", func(b *board) {
	fresh := func() []string {
		domains, err := b.store.FreshDomains(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, d := range domains {
			names = append(names, d.Domain)
		}
		return names
	}

	It("keeps a domain fresh until its ttl runs out", func() {
		Expect(b.store.UpsertDomain(b.ctx, "apps", time.Minute)).To(Succeed())
		domains, err := b.store.FreshDomains(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(domains).To(HaveLen(1))
		Expect(domains[0]).To(EqualProto(&models.Domain{Domain: "apps", ExpiresAt: b.clock.Now().Add(time.Minute).UnixNano()}))

		b.clock.Advance(time.Minute - time.Nanosecond)
		Expect(fresh()).To(Equal([]string{"apps"}))
		b.clock.Advance(time.Nanosecond)
		Expect(fresh()).To(BeEmpty())
	})

	It("keeps a domain with ttl 0 fresh forever", func() {
		Expect(b.store.UpsertDomain(b.ctx, "apps", 0)).To(Succeed())
		b.clock.Advance(100 * 365 * 24 * time.Hour)
		domains, err := b.store.FreshDomains(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(domains).To(HaveLen(1))
		Expect(domains[0].ExpiresAt).To(BeZero())
	})

	It("moves the expiry on each upsert", func() {
		Expect(b.store.UpsertDomain(b.ctx, "apps", time.Minute)).To(Succeed())
		b.clock.Advance(50 * time.Second)
		Expect(b.store.UpsertDomain(b.ctx, "apps", time.Minute)).To(Succeed())
		b.clock.Advance(50 * time.Second)
		Expect(fresh()).To(Equal([]string{"apps"}))

		Expect(b.store.UpsertDomain(b.ctx, "apps", 0)).To(Succeed())
		Expect(b.store.UpsertDomain(b.ctx, "apps", time.Second)).To(Succeed())
		b.clock.Advance(time.Second)
		Expect(fresh()).To(BeEmpty(), "a ttl replaces forever too")
		Expect(b.count("SELECT COUNT(*) FROM domains")).To(Equal(1))
	})

	It("lists only fresh domains, by name", func() {
		Expect(b.store.UpsertDomain(b.ctx, "zeta", time.Hour)).To(Succeed())
		Expect(b.store.UpsertDomain(b.ctx, "Alpha", 0)).To(Succeed())
		Expect(b.store.UpsertDomain(b.ctx, "beta", time.Second)).To(Succeed())
		Expect(b.store.UpsertDomain(b.ctx, "gone", -time.Second)).To(Succeed())
		Expect(fresh()).To(Equal([]string{"Alpha", "beta", "zeta"}))
		b.clock.Advance(time.Minute)
		Expect(fresh()).To(Equal([]string{"Alpha", "zeta"}))
	})

	It("keeps a domain whose ttl reaches past int64 nanoseconds fresh forever", func() {
		Expect(b.store.UpsertDomain(b.ctx, "apps", time.Duration(1<<63-1))).To(Succeed())
		b.clock.Advance(200 * 365 * 24 * time.Hour)
		Expect(fresh()).To(Equal([]string{"apps"}))
	})

	DescribeTable("refuses a domain name that would not store, naming the field, and stores nothing",
		func(name string) {
			err := b.store.UpsertDomain(b.ctx, name, time.Minute)
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(HavePrefix("InvalidRequest: domain: "))
			Expect(b.count("SELECT COUNT(*) FROM domains")).To(BeZero())
		},
		Entry("empty", ""),
		Entry("wider than its column", strings.Repeat("d", 256)),
	)
})
