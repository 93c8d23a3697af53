package e2e_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
)

// Mutual TLS end to end: the board and both reps serve HTTPS and require
// client certificates, the reps call the board with their cells'
// certificates, and cork and the Go client are the operator. The board
// authorizes each call by the identity in the certificate (handlers'
// policy); the rep authorizes its own routes the same way.
var _ = Describe("a cluster with mutual TLS", func() {
	var (
		cluster *tlsCluster
		b       *board
		z1, z2  *runningRep
		both    = []string{"cell-z1", "cell-z2"}
	)

	BeforeEach(func() {
		cluster = newTLSCluster()
		b = cluster.startBoard()
		b.cork("set-domain", "cork")
		z1 = cluster.startRep(b, "cell-z1", "z1")
		z2 = cluster.startRep(b, "cell-z2", "z2")
	})

	It("desires hello, rolls it out and drains a cell, as the operator through cork and the Go client", func() {
		b.cork("desire", helloSpec)
		rows := steady(b, "hello", 4, both...)
		Expect(z1.instances()).To(HaveLen(2))
		Expect(z2.instances()).To(HaveLen(2))

		By("an instance reports itself occupied through the rep's plain loopback endpoint")
		Expect(z1.session.Out.Contents()).To(MatchRegexp(`rep\.instance-server\.listening.*"url":"http://127\.0\.0\.1:\d+"`))
		Expect(post(rows[1], "/occupied")).To(Equal(http.StatusNoContent))
		Eventually(func() bool { return b.lrps("hello")[1].GetOccupied() }).Should(BeTrue())
		Expect(post(rows[1], "/ready")).To(Equal(http.StatusNoContent))
		Eventually(func() bool { return b.lrps("hello")[1].GetOccupied() }).Should(BeFalse())

		By("cork logs reads an instance's log from its rep over TLS")
		out := b.cork("logs", "hello/0", "-n", "20")
		Expect(out).To(ContainSubstring("listening on"))
		Expect(out).To(ContainSubstring(rows[0].GetInstanceGuid()))

		By("a rollout to v2")
		b.cork("update", "hello", "--definition", definitionSpec("hello-local-v2-definition.json"), "--id", "v2")
		waitForRollout(b, "hello", 2*time.Minute, complete())
		Eventually(func() error {
			rows := b.lrps("hello")
			if err := checkSteady(rows, 4, both); err != nil {
				return err
			}
			for _, row := range rows {
				if row.GetDefinitionId() != "v2" {
					return fmt.Errorf("%d runs %s", row.GetIndex(), row.GetDefinitionId())
				}
			}
			return nil
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		expectVersion(b.lrps("hello"), "v2", "v2")

		By("a drain of cell-z1 moves its instances to cell-z2")
		b.cork("cell", "drain", "cell-z1")
		Eventually(z1.session).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		rows = steady(b, "hello", 4, "cell-z2")
		expectVersion(rows, "v2", "v2")
		cells, err := b.client().Cells(context.Background())
		Expect(err).NotTo(HaveOccurred())
		for _, cell := range cells {
			Expect(cell.GetRepUrl()).To(HavePrefix("https://"), cell.GetCellId())
		}
	})

	It("refuses callers without a certificate of the CA, and certificates outside their identity, changing nothing", func() {
		b.cork("desire", helloSpec)
		rows := steady(b, "hello", 4, both...)
		var onZ2 *models.ActualLRP
		for _, row := range rows {
			if row.GetCellId() == "cell-z2" {
				onZ2 = row
			}
		}
		Expect(onZ2).NotTo(BeNil())
		before := boardState(b)
		ctx := context.Background()
		zeroTLS := func(config *tls.Config) *client.Client {
			return client.New(b.url, client.WithTLSConfig(config), client.WithRetries(0))
		}

		By("no client certificate: no handshake, through the Go client and cork")
		pool, err := certs.LoadPool(cluster.path("ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		anonymous := zeroTLS(&tls.Config{RootCAs: pool})
		_, err = anonymous.DesireLRP(ctx, intruderLRP())
		Expect(err).To(MatchError(ContainSubstring("certificate required")))
		_, err = anonymous.ActualLRPs(ctx, client.ActualLRPFilter{})
		Expect(err).To(MatchError(ContainSubstring("certificate required")))
		_, stderr, code := corkAs(b, nil, "desire", helloSpec)
		Expect(code).To(Equal(2), "a usage error")
		Expect(stderr).To(ContainSubstring("--ca-cert (or BBS_CA_CERT) is needed for an https board URL"))
		_, err = http.Get(strings.Replace(b.url, "https://", "http://", 1) + models.RouteActualLRPs)
		if err == nil {
			// Plain HTTP to the TLS port gets net/http's 400 and no more.
			resp, _ := http.Post(strings.Replace(b.url, "https://", "http://", 1)+models.RouteRemoveDesiredLRP, "application/json", strings.NewReader(`{"process_guid":"hello"}`))
			Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
			resp.Body.Close()
		}

		By("a certificate of another CA: no handshake")
		other := newTLSCluster()
		stranger := zeroTLS(certs.ClientConfig(mustKeyPair(other.path("operator.crt"), other.path("operator.key")), pool))
		_, err = stranger.DesireLRP(ctx, intruderLRP())
		Expect(err).To(MatchError(MatchRegexp(`remote error: tls: (bad certificate|unknown certificate authority)`)))
		err = stranger.RemoveDesiredLRP(ctx, "hello")
		Expect(err).To(HaveOccurred())
		_, stderr, code = corkAs(b, []string{"BBS_CA_CERT=" + cluster.path("ca.crt"), "BBS_CERT=" + other.path("operator.crt"), "BBS_KEY=" + other.path("operator.key")}, "remove", "hello")
		Expect(code).To(Equal(1))
		Expect(stderr).To(MatchRegexp(`remote error: tls: (bad certificate|unknown certificate authority)`))
		Eventually(b.session.Out).Should(gbytes.Say(`bbs\.api-server\.http-server-error.*TLS handshake error`))

		By("cell-z1's certificate acting for cell-z2's instance")
		z1TLS := cluster.clientTLS("cell-z1")
		asZ2 := client.NewCellClient(b.url, "cell-z2", client.WithTLSConfig(z1TLS), client.WithRetries(0))
		instance := client.Instance{ProcessGuid: "hello", Index: onZ2.GetIndex(), InstanceGuid: onZ2.GetInstanceGuid()}
		_, err = asZ2.ClaimActualLRP(ctx, client.Instance{ProcessGuid: "hello", Index: onZ2.GetIndex(), InstanceGuid: "stolen-guid"})
		expectUnauthorized(err, "claim")
		_, err = asZ2.ClaimActualLRP(ctx, instance)
		expectUnauthorized(err, "claim with its instance guid")
		_, err = asZ2.StartActualLRP(ctx, instance, onZ2.GetNetInfo(), true)
		expectUnauthorized(err, "start")
		_, err = asZ2.SetRoutable(ctx, instance, models.ActualLRP_ORDINARY, onZ2.GetNetInfo(), false)
		expectUnauthorized(err, "unroutable")
		err = asZ2.RemoveActualLRP(ctx, instance, models.ActualLRP_ORDINARY)
		expectUnauthorized(err, "remove")
		_, err = asZ2.CrashActualLRP(ctx, instance, "crashed by a neighbour")
		expectUnauthorized(err, "crash")
		_, err = asZ2.EvacuateActualLRP(ctx, instance)
		expectUnauthorized(err, "evacuate")
		_, err = asZ2.BulkReport(ctx, nil)
		expectUnauthorized(err, "an empty bulk report for cell-z2")
		_, err = asZ2.ReportOccupancy(ctx, []*models.OccupancyChange{{ProcessGuid: "hello", Index: onZ2.GetIndex(), Presence: models.ActualLRP_ORDINARY, InstanceGuid: onZ2.GetInstanceGuid(), Occupied: true}})
		expectUnauthorized(err, "occupancy")

		By("cell-z1's certificate registering cell-z2, or draining it")
		_, err = asZ2.RegisterCell(ctx, &models.Cell{
			CellId: "cell-z2", Zone: "z2", RepUrl: "https://127.0.0.1:1",
			Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1},
		})
		expectUnauthorized(err, "register")
		err = zeroTLS(z1TLS).DrainCell(ctx, "cell-z2")
		expectUnauthorized(err, "drain another cell")

		By("an API client's certificate on a cell route")
		asAPIClient := client.NewCellClient(b.url, "cell-z1", client.WithTLSConfig(cluster.clientTLS("client")), client.WithRetries(0))
		_, err = asAPIClient.BulkReport(ctx, nil)
		expectUnauthorized(err, "an API client's bulk report")
		_, err = asAPIClient.RegisterCell(ctx, &models.Cell{
			CellId: "cell-z1", Zone: "z1", RepUrl: "https://127.0.0.1:1",
			Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1},
		})
		expectUnauthorized(err, "an API client's registration")
		err = asAPIClient.RemoveActualLRP(ctx, instance, models.ActualLRP_ORDINARY)
		expectUnauthorized(err, "an API client's remove")

		By("a cell's certificate desiring, updating or removing an LRP")
		asCell := zeroTLS(z1TLS)
		_, err = asCell.DesireLRP(ctx, intruderLRP())
		expectUnauthorized(err, "desire")
		err = asCell.RemoveDesiredLRP(ctx, "hello")
		expectUnauthorized(err, "remove an LRP")
		instances := int32(1)
		_, err = asCell.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Instances: &instances})
		expectUnauthorized(err, "update an LRP")

		By("a cell's certificate on another rep")
		resp, err := cluster.httpClient("cell-z1").Get(z2.url + "/v1/instances")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
		resp, err = cluster.httpClient("cell-z1").Post(z2.url+"/v1/drain", "application/json", nil)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))

		By("nothing changed")
		Expect(boardState(b)).To(Equal(before))
		Consistently(func() error { return checkSteady(b.lrps("hello"), 4, both) }).WithTimeout(2 * time.Second).Should(Succeed())
		Expect(z2.instances()).To(HaveLen(2))
		Expect(z2.session.ExitCode()).To(Equal(-1), "cell-z2's rep still runs: not drained")
	})
})

// definitionSpec is the path of a definition fixture, as cork takes it.
func definitionSpec(name string) string {
	return strings.Replace(helloSpec, "hello-local.json", name, 1)
}

// intruderLRP is an LRP that nobody allowed to should get to desire.
func intruderLRP() *models.DesiredLRP {
	lrp := &models.DesiredLRP{}
	readFixture("hello-local.json", lrp)
	lrp.ProcessGuid = "intruder"
	return lrp
}

// corkAs runs cork against b with env instead of b's own TLS settings.
func corkAs(b *board, env []string, args ...string) (string, string, int) {
	GinkgoHelper()
	saved := b.corkEnv
	b.corkEnv = env
	defer func() { b.corkEnv = saved }()
	return b.corkResult(args...)
}

func expectUnauthorized(err error, what string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), what)
	var boardErr *models.Error
	Expect(errors.As(err, &boardErr)).To(BeTrue(), "%s: %v", what, err)
	Expect(boardErr.GetType()).To(Equal(models.Error_Unauthorized), "%s: %v", what, err)
}

func mustKeyPair(certPath, keyPath string) tls.Certificate {
	GinkgoHelper()
	pair, err := certs.LoadKeyPair(certPath, keyPath)
	Expect(err).NotTo(HaveOccurred())
	return pair
}

// boardState is what the negative specs compare before and after: the
// desired LRPs, every row with its modification tag, and the cells.
func boardState(b *board) []string {
	GinkgoHelper()
	ctx := context.Background()
	api := b.client()
	var state []string
	lrps, err := api.DesiredLRPs(ctx, client.DesiredLRPFilter{})
	Expect(err).NotTo(HaveOccurred())
	for _, lrp := range lrps {
		state = append(state, fmt.Sprintf("lrp %s instances=%d tag=%v", lrp.GetProcessGuid(), lrp.GetInstances(), lrp.GetModificationTag()))
	}
	rows, err := api.ActualLRPs(ctx, client.ActualLRPFilter{})
	Expect(err).NotTo(HaveOccurred())
	for _, row := range rows {
		state = append(state, fmt.Sprintf("row %s/%d %s %s on %q as %s def %s routable=%v occupied=%v crashes=%d",
			row.GetProcessGuid(), row.GetIndex(), row.GetPresence(), row.GetState(), row.GetCellId(), row.GetInstanceGuid(),
			row.GetDefinitionId(), row.GetRoutable(), row.GetOccupied(), row.GetCrashCount()))
	}
	cells, err := api.Cells(ctx)
	Expect(err).NotTo(HaveOccurred())
	for _, cell := range cells {
		state = append(state, fmt.Sprintf("cell %s %s %s draining=%v capacity=%v", cell.GetCellId(), cell.GetZone(), cell.GetRepUrl(), cell.GetDraining(), cell.GetCapacity()))
	}
	slices.Sort(state)
	return state
}
