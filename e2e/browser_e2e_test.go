//go:build browser

package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
		// against hanging, not a speed requirement: the freeze banner and
		// quarantine steps added some seconds to a run that took close to
		// the earlier 110 s on a loaded machine.
		scriptLimit = 180 * time.Second
	)

	// browserRun is what a run of the script needs: node, the script's
	// folder, and where its screenshots go.
	type browserRun struct{ node, script, artefacts string }

	// prerequisites finds node, Chromium and the script's node_modules,
	// failing (never skipping) with what to install when something is
	// missing, and makes the screenshot folder.
	prerequisites := func() browserRun {
		GinkgoHelper()
		var run browserRun
		var err error
		run.node, err = exec.LookPath("node")
		Expect(err).NotTo(HaveOccurred(), "node is needed for the browser test (Debian: apt-get install nodejs npm)")
		_, err = os.Stat(chromium)
		Expect(err).NotTo(HaveOccurred(), "Chromium is needed at %s for the browser test (Debian: apt-get install chromium)", chromium)
		run.script, err = filepath.Abs(filepath.Join("..", "ui", "browsertest"))
		Expect(err).NotTo(HaveOccurred())
		_, err = os.Stat(filepath.Join(run.script, "node_modules", "playwright-core"))
		Expect(err).NotTo(HaveOccurred(), "playwright-core is not installed: run npm ci in ui/browsertest (make test-browser does)")
		run.artefacts = os.Getenv("CORKBOARD_ARTIFACTS")
		if run.artefacts == "" {
			run.artefacts, err = os.MkdirTemp("", "corkboard-dashboard-")
			Expect(err).NotTo(HaveOccurred())
		}
		AddReportEntry("screenshots", run.artefacts)
		GinkgoWriter.Println("screenshots go to", run.artefacts)
		return run
	}

	// runScript runs dashboard.test.mjs against b with env added, and
	// requires it to pass. When the script says RESTART THE BOARD, the
	// board is stopped and started again on its database and address.
	runScript := func(run browserRun, b *board, env ...string) {
		GinkgoHelper()
		cmd := exec.Command(run.node, "dashboard.test.mjs")
		cmd.Dir = run.script
		cmd.Env = append(os.Environ(), "BOARD_URL="+b.url, "CHROMIUM="+chromium, "LRP_GUID="+guid, "CORKBOARD_ARTIFACTS="+run.artefacts)
		cmd.Env = append(cmd.Env, env...)
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		deadline := time.Now().Add(scriptLimit)
		restarted := false
		Eventually(func() bool {
			if !restarted && strings.Contains(string(session.Out.Contents()), "RESTART THE BOARD") {
				restarted = true
				stopProcess(b.session, syscall.SIGTERM)
				b.start()
			}
			return session.ExitCode() != -1
		}).WithTimeout(time.Until(deadline)).Should(BeTrue(), "the browser test did not finish")
		Expect(session.ExitCode()).To(Equal(0), "the browser test failed:\n%s", session.Err.Contents())
	}

	It("follows a rollout started from the LRP page to its end, live", func() {
		run := prerequisites() // before the cluster starts: a missing tool fails at once
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
		_, err := b.client().DesireLRP(context.Background(), lrp)
		Expect(err).NotTo(HaveOccurred())
		v1 := steady(b, guid, instances, "cell-z1", "cell-z2")[0].GetDefinitionId()

		runScript(run, b)

		// What the page showed is what the board holds: every instance on
		// the new definition, answering as v5 (the staged update the page
		// promoted to v3, v4 canceled, then v5 judged by its analysis), and
		// on cell-z2 (the page drained cell-z1).
		status := waitForRollout(b, guid, time.Minute, complete())
		Expect(status.GetActiveDefinitionId()).NotTo(Equal(v1))
		expectVersion(steady(b, guid, instances, "cell-z2"), status.GetActiveDefinitionId(), "v5")
		for _, name := range []string{"lrps.png", "freeze.png", "lrp-loading.png", "unreachable.png", "lrp-mid-rollout.png", "lrp-staged-holding.png", "lrp-done.png", "lrp-verdicts.png", "cells.png", "cells-quarantined.png"} {
			_, err := os.Stat(filepath.Join(run.artefacts, name))
			Expect(err).NotTo(HaveOccurred(), "screenshot %s", name)
		}
	})

	It("works over mutual TLS with the certificate the browser presents", func() {
		run := prerequisites()
		cluster := newTLSCluster()
		b := cluster.startBoard()
		b.cork("set-domain", "cork")
		cluster.startRep(b, "cell-z1", "z1")
		cluster.startRep(b, "cell-z2", "z2")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = 2
		_, err := b.client().DesireLRP(context.Background(), lrp)
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, 2, "cell-z1", "cell-z2")

		runScript(run, b, "MODE=tls",
			"CLIENT_CERT="+cluster.path("operator.crt"), "CLIENT_KEY="+cluster.path("operator.key"),
			"API_CLIENT_CERT="+cluster.path("client.crt"), "API_CLIENT_KEY="+cluster.path("client.key"))
		// Asked in plain HTTP, the TLS port answered with its page.
		_, err = os.Stat(filepath.Join(run.artefacts, "tls-plain-http.png"))
		Expect(err).NotTo(HaveOccurred(), "screenshot tls-plain-http.png")
	})
})
