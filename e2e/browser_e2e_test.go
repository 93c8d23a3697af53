//go:build browser

package e2e_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/models"
)

// The dashboard (ui/) in a real browser: ui/browsertest/dashboard.test.mjs
// drives Debian's Chromium with playwright-core against a board and two
// reps running hello, through a rollout started from the page. Built only
// with -tags browser (make test-browser), since it needs node, chromium
// and ui/browsertest/node_modules; without any of them it fails, saying
// which.
var _ = Describe("the dashboard in Chromium", Label("browser"), func() {
	const (
		guid      = "hello"
		instances = 4
		// chromium is where Debian's package puts it; .ci/run installs it.
		chromium = "/usr/bin/chromium"
		// scriptLimit bounds the whole browser run. It is a deadline
		// against hanging, not a speed requirement.
		scriptLimit = 110 * time.Second
	)

	It("follows a rollout started from the LRP page to its end, live", func() {
		node, err := exec.LookPath("node")
		Expect(err).NotTo(HaveOccurred(), "node is needed for the browser test (Debian: apt-get install nodejs npm)")
		_, err = os.Stat(chromium)
		Expect(err).NotTo(HaveOccurred(), "Chromium is needed at %s for the browser test (Debian: apt-get install chromium)", chromium)
		script, err := filepath.Abs(filepath.Join("..", "ui", "browsertest"))
		Expect(err).NotTo(HaveOccurred())
		_, err = os.Stat(filepath.Join(script, "node_modules", "playwright-core"))
		Expect(err).NotTo(HaveOccurred(), "playwright-core is not installed: run npm ci in ui/browsertest (make test-browser does)")

		artefacts := os.Getenv("CORKBOARD_ARTIFACTS")
		if artefacts == "" {
			artefacts, err = os.MkdirTemp("", "corkboard-dashboard-")
			Expect(err).NotTo(HaveOccurred())
		}
		AddReportEntry("screenshots", artefacts)
		GinkgoWriter.Println("screenshots go to", artefacts)

		b := startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		startRep(b, "cell-z2", "z2")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		// One at a time, each new instance serving 2 s before its
		// predecessor goes: a rollout of some seconds, long enough for
		// the page to be seen mid-way.
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0", MinReadyMs: 2000}
		_, err = b.client().DesireLRP(context.Background(), lrp)
		Expect(err).NotTo(HaveOccurred())
		v1 := steady(b, guid, instances, "cell-z1", "cell-z2")[0].GetDefinitionId()

		cmd := exec.Command(node, "dashboard.test.mjs")
		cmd.Dir = script
		cmd.Env = append(os.Environ(), "BOARD_URL="+b.url, "CHROMIUM="+chromium, "LRP_GUID="+guid, "CORKBOARD_ARTIFACTS="+artefacts)
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session, scriptLimit).Should(gexec.Exit(), "the browser test did not finish")
		Expect(session.ExitCode()).To(Equal(0), "the browser test failed:\n%s", session.Err.Contents())

		// What the page showed is what the board holds: every instance on
		// the new definition, answering as v3 (the staged update the page promoted).
		status, err := b.client().RolloutStatus(context.Background(), guid)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.GetState()).To(Equal(models.RolloutStatus_COMPLETE))
		Expect(status.GetActiveDefinitionId()).NotTo(Equal(v1))
		expectVersion(steady(b, guid, instances, "cell-z1", "cell-z2"), status.GetActiveDefinitionId(), "v3")
		for _, name := range []string{"lrps.png", "lrp-mid-rollout.png", "lrp-done.png", "cells.png"} {
			_, err := os.Stat(filepath.Join(artefacts, name))
			Expect(errors.Is(err, os.ErrNotExist)).To(BeFalse(), "screenshot %s", name)
		}
	})
})
