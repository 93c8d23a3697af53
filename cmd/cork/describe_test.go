package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// updateGolden rewrites the golden files from what cork prints:
// CORK_UPDATE_GOLDEN=1 go test ./cmd/cork/...
var updateGolden = os.Getenv("CORK_UPDATE_GOLDEN") != ""

var _ = Describe("cork describe", func() {
	var (
		board string
		store *sqldb.SQLDB
		cell  *client.CellClient
	)
	ctx := context.Background()

	// converge runs one convergence pass over hello as the board's runner
	// would, now.
	converge := func() {
		GinkgoHelper()
		snapshot, err := store.ConvergenceSnapshot(ctx, []string{"hello"})
		Expect(err).NotTo(HaveOccurred())
		plan := convergence.Compute(snapshot, time.Now(), convergence.DefaultConfig())
		if !plan.Writes.Empty() {
			_, err = store.ApplyConvergence(ctx, &plan.Writes)
			Expect(err).NotTo(HaveOccurred())
		}
	}
	// startPlaced has cell-a claim and start every instance placed on it
	// and not yet claimed, as its rep would; it returns their indices.
	startPlaced := func() []int32 {
		GinkgoHelper()
		rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "hello"})
		Expect(err).NotTo(HaveOccurred())
		var started []int32
		for _, row := range rows {
			if row.GetState() != models.ActualLRP_UNCLAIMED || row.GetCellId() != "cell-a" {
				continue
			}
			instance := client.Instance{ProcessGuid: "hello", Index: row.GetIndex(), InstanceGuid: fmt.Sprintf("ig-%d-%s", row.GetIndex(), row.GetDefinitionId())}
			_, err := cell.ClaimActualLRP(ctx, instance)
			Expect(err).NotTo(HaveOccurred())
			_, err = cell.StartActualLRP(ctx, instance, &models.NetInfo{Address: "10.0.0.5"}, true)
			Expect(err).NotTo(HaveOccurred())
			started = append(started, row.GetIndex())
		}
		return started
	}

	BeforeEach(func() {
		board, store = startBoardWithStore(nil)
		Expect(store.RegisterCell(ctx, &models.Cell{
			CellId: "cell-a", RepUrl: "http://10.0.0.5:1800", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 4096, Instances: 20},
		}, time.Minute)).To(Succeed())
		cell = client.NewCellClient(board, "cell-a")
		Expect(runCork(board, "", "desire", fixture("hello-local.json")).code).To(Equal(0))
		converge()
		Expect(startPlaced()).To(HaveLen(4), "every v1 instance runs")

		// Mid-rollout to v2, max_surge 1: one index replaced and its
		// v1 instance told to stop, the next one's v2 instance crashed.
		r := runCork(board, "", "update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
		Expect(r.code).To(Equal(0), r.stderr)
		converge()
		Expect(startPlaced()).To(HaveLen(1), "the first v2 instance")
		converge()
		next := startPlaced()
		Expect(next).To(HaveLen(1), "the second v2 instance")
		_, err := cell.CrashActualLRP(ctx, client.Instance{ProcessGuid: "hello", Index: next[0], InstanceGuid: fmt.Sprintf("ig-%d-v2", next[0])}, "exited with status 1: listen tcp :8080: address already in use")
		Expect(err).NotTo(HaveOccurred())
	})

	It("prints one page with every section, the same page each time but for times and names", func() {
		r := runCork(board, "", "describe", "hello", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stderr).To(BeEmpty())
		compareGolden("describe-mid-rollout.txt", normalizeDescribe(r.stdout))
	})

	It("prints one JSON object with every section, each part decoding as its message", func() {
		r := runCork(board, "", "describe", "hello")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.lines()).To(HaveLen(1))
		var page map[string]json.RawMessage
		Expect(json.Unmarshal([]byte(r.lines()[0]), &page)).To(Succeed())
		Expect(page).To(HaveLen(6), "no cells_refused on a board without TLS")

		var lrp models.DesiredLRP
		Expect(protojson.Unmarshal(page["desired_lrp"], &lrp)).To(Succeed())
		Expect(lrp.GetActiveDefinitionId()).To(Equal("v2"))
		var rollout models.RolloutStatus
		Expect(protojson.Unmarshal(page["rollout"], &rollout)).To(Succeed())
		Expect(rollout.GetState()).To(Equal(models.RolloutStatus_PROGRESSING))
		Expect(rollout.GetUpdatedInstances()).To(BeEquivalentTo(1))

		var definitions, actualLRPs, operations, cells []json.RawMessage
		for name, into := range map[string]*[]json.RawMessage{"definitions": &definitions, "actual_lrps": &actualLRPs, "operations": &operations, "cells": &cells} {
			Expect(json.Unmarshal(page[name], into)).To(Succeed(), name)
		}
		Expect(definitions).To(HaveLen(2))
		var newest models.DefinitionSummary
		Expect(protojson.Unmarshal(definitions[0], &newest)).To(Succeed())
		Expect(newest.GetDefinitionId()).To(Equal("v2"))
		Expect(newest.GetActive()).To(BeTrue())

		Expect(actualLRPs).To(HaveLen(6), "4 indices, one of them RETIRING, one RETIRING next to its crashed replacement")
		presences := map[models.ActualLRP_Presence]int{}
		for _, raw := range actualLRPs {
			var instance models.ActualLRP
			Expect(protojson.Unmarshal(raw, &instance)).To(Succeed())
			presences[instance.GetPresence()]++
		}
		Expect(presences).To(Equal(map[models.ActualLRP_Presence]int{models.ActualLRP_ORDINARY: 4, models.ActualLRP_RETIRING: 2}))

		Expect(operations).To(HaveLen(2))
		var update models.Operation
		Expect(protojson.Unmarshal(operations[0], &update)).To(Succeed())
		Expect(update.GetKind()).To(Equal(models.Operation_UPDATE_DEFINITION))
		Expect(update.GetHistory()).NotTo(BeEmpty(), "operations come with their history")

		Expect(cells).To(HaveLen(1))
		var placed models.Cell
		Expect(protojson.Unmarshal(cells[0], &placed)).To(Succeed())
		Expect(placed.GetZone()).To(Equal("z1"))
	})

	It("fails with the board's ResourceNotFound for an unknown guid, printing nothing", func() {
		for _, format := range []string{"json", "table"} {
			r := runCork(board, "", "describe", "nobody", "-o", format)
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(HavePrefix("cork: ResourceNotFound: "))
			Expect(r.stdout).To(BeEmpty())
		}
	})
})

// normalizeDescribe replaces what differs from run to run in a describe
// page with placeholders of the same width, so that the columns after
// them stay where they were: times, operation ids (16 hex digits of time,
// 8 random), how long an operation took, the time left to a deadline, and
// who cork's user is.
func normalizeDescribe(page string) string {
	for _, r := range []struct {
		pattern     *regexp.Regexp
		placeholder string
	}{
		{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`), "YYYY-MM-DDThh:mm:ss.mmmZ"},
		{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`), "YYYY-MM-DDThh:mm:ssZ"},
		{regexp.MustCompile(`\b[0-9a-f]{24}\b`), "TTTTTTTTTTTTTTTTRRRRRRRR"},
		{regexp.MustCompile(`deadline in \d[0-9hms.]*`), "deadline in <left>"},
		{regexp.MustCompile(`((?:FINISHED|ERROR|CANCELED|EVICTED) +YYYY-MM-DDThh:mm:ssZ +)\d\S* +`), "$1<took>"},
		{regexp.MustCompile(`cork \(\S+\) from 127\.0\.0\.1:\d+`), "cork (<user@host>) from 127.0.0.1:<port>"},
	} {
		page = r.pattern.ReplaceAllStringFunc(page, func(match string) string {
			replaced := r.pattern.ReplaceAllString(match, r.placeholder)
			if n := len(match) - len(replaced); n > 0 && strings.HasSuffix(match, " ") {
				replaced += strings.Repeat(" ", n)
			}
			return replaced
		})
	}
	return page
}

// compareGolden compares got with testdata/name, or writes it there with
// CORK_UPDATE_GOLDEN set.
func compareGolden(name, got string) {
	GinkgoHelper()
	path := filepath.Join("testdata", name)
	if updateGolden {
		Expect(os.MkdirAll("testdata", 0o755)).To(Succeed())
		Expect(os.WriteFile(path, []byte(got), 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "CORK_UPDATE_GOLDEN=1 writes it")
	Expect(got).To(Equal(string(want)))
}
