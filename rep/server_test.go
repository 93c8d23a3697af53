package rep_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// The rep's HTTP API over a real executor. The agent behind it is not
// running (no board here); what it does with a board is in e2e/.
var _ = Describe("the rep's HTTP server", func() {
	var (
		exe      *executor.Executor
		url      string
		logger   *lagertest.TestLogger
		endpoint *rep.InstanceEndpoint
	)

	BeforeEach(func() {
		exe = reptest.StartExecutor(newConfig())
		// Nothing listens on port 1: the agent is never started here.
		board := "http://127.0.0.1:1"
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell:       &models.Cell{CellId: "cell-a"},
			Board:      client.New(board),
			CellClient: client.NewCellClient(board, "cell-a"),
			Executor:   exe,
		})
		Expect(err).NotTo(HaveOccurred())
		logger = lagertest.NewTestLogger("rep")
		endpoint = rep.NewInstanceEndpoint("", []byte("0123456789abcdef0123456789abcdef"))
		server := httptest.NewServer(rep.NewServer(logger, agent, exe, endpoint))
		DeferCleanup(server.Close)
		url = server.URL
	})

	get := func(path string) (int, string) {
		GinkgoHelper()
		resp, err := http.Get(url + path)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	post := func(path, body string) (int, string) {
		GinkgoHelper()
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(answer)
	}

	It("lists what the executor runs, with pids and ports, and serves an instance's log", func() {
		code, body := get("/v1/instances")
		Expect(code).To(Equal(http.StatusOK))
		Expect(strings.TrimSpace(body)).To(Equal("[]"))

		st := reptest.RunHealthy(exe, reptest.Spec("ig-1", reptest.HelloDefinition(reptest.HTTPCheck())))
		code, body = get("/v1/instances")
		Expect(code).To(Equal(http.StatusOK))
		var list []rep.InstanceInfo
		Expect(json.Unmarshal([]byte(body), &list)).To(Succeed())
		Expect(list).To(HaveLen(1))
		Expect(list[0].InstanceGuid).To(Equal("ig-1"))
		Expect(list[0].Pid).To(Equal(st.Pid))
		Expect(list[0].Healthy).To(BeTrue())
		Expect(list[0].Ports).To(Equal([]rep.PortMapping{{ContainerPort: 8080, HostPort: reptest.HostPort(st)}}))

		Eventually(func() string { _, body := get("/v1/logs?instance_guid=ig-1&lines=50"); return body }).
			Should(ContainSubstring("listening on"))
		code, body = get("/v1/logs?instance_guid=ig-1&lines=1")
		Expect(code).To(Equal(http.StatusOK))
		Expect(strings.Count(body, "\n")).To(Equal(1))
	})

	It("refuses bad log requests and names what is wrong", func() {
		code, body := get("/v1/logs")
		Expect(code).To(Equal(http.StatusBadRequest))
		Expect(body).To(ContainSubstring("instance_guid: required"))

		code, body = get("/v1/logs?instance_guid=ig-1&lines=0")
		Expect(code).To(Equal(http.StatusBadRequest))
		Expect(body).To(ContainSubstring(`lines: want a number from 1 to 10000, got "0"`))

		code, body = get("/v1/logs?instance_guid=nope")
		Expect(code).To(Equal(http.StatusNotFound))
		Expect(body).To(ContainSubstring("instance nope: no log on this cell"))
	})

	Describe("the log of an index", func() {
		// getLog GETs a log and returns the status, the instance guid and
		// end time headers, and the body.
		getLog := func(query string) (int, string, string, string) {
			GinkgoHelper()
			resp, err := http.Get(url + "/v1/logs?" + query)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, resp.Header.Get(rep.HeaderInstanceGuid), resp.Header.Get(rep.HeaderEndedAt), string(body)
		}
		indexSpec := func(guid string, index int32, def *models.LRPDefinition) executor.InstanceSpec {
			return executor.InstanceSpec{ProcessGuid: "hello", Index: index, InstanceGuid: guid, Definition: def}
		}

		It("serves the kept log of a crashed instance, headed by a line saying it crashed and why", func() {
			reptest.RunHealthy(exe, indexSpec("ig-crash", 1, reptest.HelloDefinition(reptest.HTTPCheck(), "CRASH_AFTER", "1s")))
			Eventually(exe.Events()).Should(Receive(HaveField("Kind", executor.Crashed)))

			code, guid, endedAt, body := getLog("process_guid=hello&index=1&lines=50")
			Expect(code).To(Equal(http.StatusOK), body)
			Expect(guid).To(Equal("ig-crash"))
			ended, err := time.Parse(time.RFC3339Nano, endedAt)
			Expect(err).NotTo(HaveOccurred())
			Expect(ended).To(BeTemporally("~", time.Now(), time.Minute))
			lines := strings.Split(body, "\n")
			Expect(lines[0]).To(MatchRegexp(`^--- previous instance ig-crash of hello/1, ended \S+Z: crashed: exited with code 3 ---$`))
			Expect(body).To(ContainSubstring("CRASH_AFTER=1s passed: exiting with code 3"))
			Expect(body).To(ContainSubstring("crashed: exited with code 3"))

			By("asked for by its instance guid, it is marked the same way")
			code, _, endedAt, body = getLog("instance_guid=ig-crash")
			Expect(code).To(Equal(http.StatusOK))
			Expect(endedAt).NotTo(BeEmpty())
			Expect(body).To(HavePrefix("--- previous instance ig-crash of hello/1"))

			By("another index has none")
			code, _, _, body = getLog("process_guid=hello&index=2")
			Expect(code).To(Equal(http.StatusNotFound))
			Expect(body).To(ContainSubstring("hello/2: no instance of it runs or ended on this cell"))
		})

		It("serves a running instance of the index rather than the kept one, and keeps only the last to end", func() {
			reptest.RunHealthy(exe, indexSpec("ig-first", 0, reptest.HelloDefinition(reptest.HTTPCheck())))
			Expect(exe.Stop("ig-first")).To(Succeed())
			Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Exited))
			code, guid, _, body := getLog("process_guid=hello&index=0")
			Expect(code).To(Equal(http.StatusOK))
			Expect(guid).To(Equal("ig-first"))
			Expect(body).To(MatchRegexp(`^--- previous instance ig-first of hello/0, ended \S+: stopped: exited with code 0 ---\n`))

			reptest.RunHealthy(exe, indexSpec("ig-second", 0, reptest.HelloDefinition(reptest.HTTPCheck())))
			code, guid, endedAt, body := getLog("process_guid=hello&index=0")
			Expect(code).To(Equal(http.StatusOK))
			Expect(guid).To(Equal("ig-second"))
			Expect(endedAt).To(BeEmpty())
			Expect(body).NotTo(ContainSubstring("--- previous instance"))

			// The second one ending replaces the first one's kept log.
			Expect(exe.Stop("ig-second")).To(Succeed())
			Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Exited))
			_, guid, _, _ = getLog("process_guid=hello&index=0")
			Expect(guid).To(Equal("ig-second"))
			code, _, _, body = getLog("instance_guid=ig-first")
			Expect(code).To(Equal(http.StatusNotFound))
			Expect(body).To(ContainSubstring("instance ig-first: no log on this cell"))
		})

		It("refuses a bad process guid or index, and both ways of asking at once", func() {
			code, _, _, body := getLog("process_guid=a.b&index=0")
			Expect(code).To(Equal(http.StatusBadRequest))
			Expect(body).To(ContainSubstring("process_guid: must match"))
			code, _, _, body = getLog("process_guid=hello&index=-1")
			Expect(code).To(Equal(http.StatusBadRequest))
			Expect(body).To(ContainSubstring(`index: want a number of 0 or more, got "-1"`))
			code, _, _, body = getLog("process_guid=hello")
			Expect(code).To(Equal(http.StatusBadRequest))
			Expect(body).To(ContainSubstring(`index: want a number of 0 or more, got ""`))
			code, _, _, body = getLog("instance_guid=ig-1&process_guid=hello&index=0")
			Expect(code).To(Equal(http.StatusBadRequest))
			Expect(body).To(ContainSubstring("instance_guid: give it, or process_guid and index, not both"))
		})
	})

	It("takes occupancy only for instances the agent runs, and only as {\"occupied\": bool}", func() {
		occupancy := endpoint.URL("ig-9") + "/occupancy"
		code, body := post(occupancy, `{"occupied":true}`)
		Expect(code).To(Equal(http.StatusNotFound))
		Expect(body).To(ContainSubstring("instance ig-9 does not run on this cell"))

		code, body = post(occupancy, `{"busy":true}`)
		Expect(code).To(Equal(http.StatusBadRequest))
		Expect(body).To(ContainSubstring(`unknown field "busy"`))

		code, body = post(occupancy, `{}`)
		Expect(code).To(Equal(http.StatusBadRequest))
		Expect(body).To(ContainSubstring("occupied: required"))
	})

	It("takes occupancy only at an instance's own URL: another process knowing its guid cannot speak for it", func() {
		Expect(endpoint.URL("ig-9")).To(MatchRegexp(`^/v1/instances/ig-9/[A-Za-z0-9_-]{22}$`))
		Expect(endpoint.URL("ig-9")).NotTo(Equal(endpoint.URL("ig-8")))
		Expect(rep.NewInstanceEndpoint("", []byte("another key, another rep........")).URL("ig-9")).NotTo(Equal(endpoint.URL("ig-9")))

		for _, path := range []string{
			"/v1/instances/ig-9/occupancy",
			"/v1/instances/ig-9/" + strings.TrimPrefix(endpoint.URL("ig-8"), "/v1/instances/ig-8/") + "/occupancy",
		} {
			code, body := post(path, `{"occupied":true}`)
			Expect(code).To(Equal(http.StatusForbidden), path)
			Expect(body).To(HavePrefix("forbidden: "), path)
		}
	})

	It("accepts a drain", func() {
		code, body := post("/v1/drain", "")
		Expect(code).To(Equal(http.StatusAccepted))
		Expect(body).To(MatchJSON(`{"draining":true}`))
	})

	It("refuses a drain a browser sends from another origin, before the drain is asked of the agent", func() {
		req, err := http.NewRequest(http.MethodPost, url+"/v1/drain", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		answer, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
		Expect(string(answer)).To(ContainSubstring("cross-origin request from a browser"))
		Expect(logger.LogMessages()).To(ContainElement("rep.server.cross-origin-refused"))
		Expect(logger.LogMessages()).NotTo(ContainElement("rep.server.drain-requested"))

		code, _ := post("/v1/drain", "")
		Expect(code).To(Equal(http.StatusAccepted), "a program's drain goes through")
		Expect(logger.LogMessages()).To(ContainElement("rep.server.drain-requested"))
	})
})
