package models_test

import (
	"math"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

type validator interface {
	proto.Message
	Validate() error
}

// validDefinition uses every field, so that each rule is exercised on an
// otherwise valid value.
func validDefinition() *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId: "v1",
		Action: &models.RunAction{
			Path: "/usr/bin/server",
			Args: []string{"--port", "8080"},
			Env:  []*models.EnvironmentVariable{{Name: "GREETING", Value: "hello"}, {Name: "EMPTY", Value: ""}},
			Dir:  "/srv",
		},
		Ports: []uint32{8080, 9090},
		HealthCheck: &models.HealthCheck{
			Type: models.HealthCheck_HTTP, Port: 8080, Path: "/healthz",
			IntervalMs: 5000, TimeoutMs: 1000, FailureThreshold: 5,
		},
		StartTimeoutMs: 60000,
		MemoryMb:       256,
		DiskMb:         1024,
	}
}

func validDesiredLRP() *models.DesiredLRP {
	routes, err := structpb.NewStruct(map[string]any{
		"http": []any{map[string]any{"hostname": "web.example", "port": 8080}},
	})
	Expect(err).NotTo(HaveOccurred())
	return &models.DesiredLRP{
		ProcessGuid:   "web-app_1",
		Domain:        "apps",
		Instances:     3,
		PlacementTags: []string{"zone-a"},
		Routes:        routes,
		Annotation:    "build 42",
		UpdateStrategy: &models.UpdateStrategy{
			MaxSurge: "25%", MaxUnavailable: "1", MinReadyMs: 1000,
			ProgressDeadlineMs: 600000, AutoRevert: true, HistoryLimit: 10,
		},
		Definition: validDefinition(),
	}
}

// routesOfJSONSize is a routes Struct whose compact JSON encoding,
// {"k":"aaa…"}, is exactly size bytes.
func routesOfJSONSize(size int) *structpb.Struct {
	const overhead = len(`{"k":""}`)
	routes, err := structpb.NewStruct(map[string]any{"k": strings.Repeat("a", size-overhead)})
	Expect(err).NotTo(HaveOccurred())
	return routes
}

// routesNested is a routes Struct that nests depth levels: {"a": [[…]]},
// the object level 1 and each list one more, the deepest holding a
// string in a list of one, or an object of one when objects is true.
func routesNested(depth int, objects bool) *structpb.Struct {
	inner := structpb.NewStringValue("deep")
	for level := depth; level > 1; level-- {
		if objects {
			inner = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"k": inner}})
		} else {
			inner = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{inner}})
		}
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{"a": inner}}
}

// expectValidation runs Validate and checks it answered want: "" for a
// valid message, otherwise an InvalidRequest whose message is exactly
// want. It also checks that validating left the message as it was.
func expectValidation(message validator, want string) {
	GinkgoHelper()
	before := proto.Clone(message)
	err := message.Validate()
	Expect(proto.Equal(before, message)).To(BeTrue(), "Validate changed the message")
	if want == "" {
		Expect(err).NotTo(HaveOccurred())
		return
	}
	Expect(err).To(HaveOccurred())
	Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue(), "want InvalidRequest, got %v", err)
	Expect(models.ConvertError(err).GetMessage()).To(Equal(want))
}

var _ = Describe("Validation", func() {
	DescribeTable("DesireLRPRequest",
		func(mutate func(*models.DesiredLRP), want string) {
			lrp := validDesiredLRP()
			mutate(lrp)
			expectValidation(&models.DesireLRPRequest{DesiredLrp: lrp}, want)
		},
		Entry("a spec using every field", func(*models.DesiredLRP) {}, ""),
		Entry("a minimal spec", func(d *models.DesiredLRP) {
			*d = models.DesiredLRP{
				ProcessGuid: "g", Domain: "d",
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}},
			}
		}, ""),
		Entry("fields the board owns are not checked", func(d *models.DesiredLRP) {
			d.ActiveDefinitionId = "not checked!"
			d.HealthyDefinitionId = "nor this!"
			d.ModificationTag = &models.ModificationTag{Epoch: "e", Index: 9}
			d.CreatedAt = -1
		}, ""),

		Entry("process_guid empty", func(d *models.DesiredLRP) { d.ProcessGuid = "" },
			"desired_lrp.process_guid: required"),
		Entry("process_guid of 128 characters", func(d *models.DesiredLRP) { d.ProcessGuid = strings.Repeat("a", 128) }, ""),
		Entry("process_guid of 129 characters", func(d *models.DesiredLRP) { d.ProcessGuid = strings.Repeat("a", 129) },
			`desired_lrp.process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "`+strings.Repeat("a", 64)+`"...`),
		Entry("process_guid with a dot", func(d *models.DesiredLRP) { d.ProcessGuid = "a.b" },
			`desired_lrp.process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "a.b"`),
		Entry("process_guid with a space", func(d *models.DesiredLRP) { d.ProcessGuid = "a b" },
			`desired_lrp.process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "a b"`),
		Entry("process_guid with a non-ASCII letter", func(d *models.DesiredLRP) { d.ProcessGuid = "café" },
			`desired_lrp.process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "café"`),

		Entry("domain empty", func(d *models.DesiredLRP) { d.Domain = "" },
			"desired_lrp.domain: required"),
		Entry("domain of 255 bytes", func(d *models.DesiredLRP) { d.Domain = strings.Repeat("d", 255) }, ""),
		Entry("domain of 256 bytes", func(d *models.DesiredLRP) { d.Domain = strings.Repeat("d", 256) },
			"desired_lrp.domain: must be at most 255 bytes, got 256"),

		Entry("zero instances", func(d *models.DesiredLRP) { d.Instances = 0 }, ""),
		Entry("the most instances", func(d *models.DesiredLRP) { d.Instances = models.MaxInstances }, ""),
		Entry("negative instances", func(d *models.DesiredLRP) { d.Instances = -1 },
			"desired_lrp.instances: must be between 0 and 100000, got -1"),
		Entry("too many instances", func(d *models.DesiredLRP) { d.Instances = models.MaxInstances + 1 },
			"desired_lrp.instances: must be between 0 and 100000, got 100001"),

		Entry("an empty placement tag", func(d *models.DesiredLRP) { d.PlacementTags = []string{"zone-a", ""} },
			"desired_lrp.placement_tags[1]: must not be empty"),
		Entry("65 placement tags", func(d *models.DesiredLRP) { d.PlacementTags = numberedTags(65, 10) },
			"desired_lrp.placement_tags: must be at most 64 tags, got 65"),

		Entry("no routes", func(d *models.DesiredLRP) { d.Routes = nil }, ""),
		Entry("routes of exactly 128 KiB as JSON", func(d *models.DesiredLRP) { d.Routes = routesOfJSONSize(128 * 1024) }, ""),
		Entry("routes one byte over 128 KiB as JSON", func(d *models.DesiredLRP) { d.Routes = routesOfJSONSize(128*1024 + 1) },
			"desired_lrp.routes: must be at most 131072 bytes as JSON, got 131073"),
		Entry("routes holding every kind of JSON value", func(d *models.DesiredLRP) {
			routes, err := structpb.NewStruct(map[string]any{
				"n": nil, "b": true, "f": 1.5, "s": "x", "l": []any{1, "two"}, "o": map[string]any{"k": []any{}},
			})
			Expect(err).NotTo(HaveOccurred())
			d.Routes = routes
		}, ""),
		Entry("routes holding NaN", func(d *models.DesiredLRP) {
			d.Routes = &structpb.Struct{Fields: map[string]*structpb.Value{"weight": structpb.NewNumberValue(math.NaN())}}
		}, "desired_lrp.routes.weight: must be a finite number, got NaN"),
		Entry("routes holding infinity deep inside", func(d *models.DesiredLRP) {
			d.Routes = &structpb.Struct{Fields: map[string]*structpb.Value{
				"http": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
					structpb.NewStringValue("ok"),
					structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
						"port": structpb.NewNumberValue(math.Inf(1)),
					}}),
				}}),
			}}
		}, "desired_lrp.routes.http[1].port: must be a finite number, got +Inf"),
		Entry("routes holding a value of no kind", func(d *models.DesiredLRP) {
			d.Routes = &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewBoolValue(true), "b": {}}}
		}, "desired_lrp.routes.b: must hold a value (null, a number, a string, a bool, an object or a list)"),
		Entry("routes with several bad values report the first key in order", func(d *models.DesiredLRP) {
			d.Routes = &structpb.Struct{Fields: map[string]*structpb.Value{
				"z": structpb.NewNumberValue(math.NaN()), "m": {}, "a": structpb.NewNumberValue(math.Inf(-1)),
			}}
		}, "desired_lrp.routes.a: must be a finite number, got -Inf"),

		Entry("routes a router would send, four levels deep", func(d *models.DesiredLRP) {
			routes, err := structpb.NewStruct(map[string]any{"cf-router": []any{map[string]any{"hostnames": []any{"a.example.com"}, "port": 8080}}})
			Expect(err).NotTo(HaveOccurred())
			d.Routes = routes
		}, ""),
		Entry("routes nesting 32 levels of lists", func(d *models.DesiredLRP) { d.Routes = routesNested(32, false) }, ""),
		Entry("routes nesting 33 levels of lists", func(d *models.DesiredLRP) { d.Routes = routesNested(33, false) },
			"desired_lrp.routes: must nest at most 32 levels deep"),
		Entry("routes nesting 33 levels of objects", func(d *models.DesiredLRP) { d.Routes = routesNested(33, true) },
			"desired_lrp.routes: must nest at most 32 levels deep"),
		Entry("routes nesting 5,000 levels, past protobuf's recursion limit", func(d *models.DesiredLRP) {
			d.Routes = routesNested(5000, false)
		}, "desired_lrp.routes: must nest at most 32 levels deep"),

		Entry("annotation of exactly 10 KiB", func(d *models.DesiredLRP) { d.Annotation = strings.Repeat("x", 10*1024) }, ""),
		Entry("annotation one byte over 10 KiB", func(d *models.DesiredLRP) { d.Annotation = strings.Repeat("x", 10*1024+1) },
			"desired_lrp.annotation: must be at most 10240 bytes, got 10241"),

		Entry("no update strategy", func(d *models.DesiredLRP) { d.UpdateStrategy = nil }, ""),
		Entry("an invalid update strategy", func(d *models.DesiredLRP) { d.UpdateStrategy.MaxSurge = "lots" },
			`desired_lrp.update_strategy.max_surge: must be a count like "2" or a percent like "25%" (0-100%), got "lots"`),
		Entry("a disruption budget", func(d *models.DesiredLRP) {
			d.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: "25%"}
		}, ""),
		Entry("an invalid disruption budget", func(d *models.DesiredLRP) {
			d.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: "1.5"}
		}, `desired_lrp.disruption_budget.max_unavailable: must be a count like "2" or a percent like "25%" (0-100%), got "1.5"`),
		Entry("a disruption budget group only", func(d *models.DesiredLRP) {
			d.DisruptionBudget = &models.DisruptionBudget{Group: "checkout"}
		}, ""),
		Entry("a disruption budget group with a control character", func(d *models.DesiredLRP) {
			d.DisruptionBudget = &models.DisruptionBudget{Group: "check\tout"}
		}, `desired_lrp.disruption_budget.group: must be printable, got "check\tout"`),
		Entry("a disruption budget group over 128 bytes", func(d *models.DesiredLRP) {
			d.DisruptionBudget = &models.DisruptionBudget{Group: strings.Repeat("g", 129)}
		}, `desired_lrp.disruption_budget.group: must be at most 128 bytes, got 129`),

		Entry("no definition", func(d *models.DesiredLRP) { d.Definition = nil },
			"desired_lrp.definition: required"),
		Entry("an invalid definition", func(d *models.DesiredLRP) { d.Definition.Ports = []uint32{8080, 80, 70000} },
			"desired_lrp.definition.ports[2]: must be 1-65535, got 70000"),
		Entry("a health check on a port the definition does not have", func(d *models.DesiredLRP) { d.Definition.HealthCheck.Port = 8000 },
			"desired_lrp.definition.health_check.port: must be one of the definition's ports [8080 9090], got 8000"),
		Entry("a health check with a negative failure threshold", func(d *models.DesiredLRP) { d.Definition.HealthCheck.FailureThreshold = -1 },
			"desired_lrp.definition.health_check.failure_threshold: must be 0 (the default, 3) or from 1 to 100, got -1"),
		Entry("a definition without an id (the board generates one)", func(d *models.DesiredLRP) { d.Definition.DefinitionId = "" }, ""),
		Entry("a definition id of the wrong format", func(d *models.DesiredLRP) { d.Definition.DefinitionId = "v 2" },
			`desired_lrp.definition.definition_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "v 2"`),

		Entry("the first problem in proto field order is the one reported", func(d *models.DesiredLRP) {
			d.Definition = nil
			d.Instances = -5
			d.Domain = ""
		}, "desired_lrp.domain: required"),
	)

	DescribeTable("LRPDefinition",
		func(mutate func(*models.LRPDefinition), want string) {
			def := validDefinition()
			mutate(def)
			expectValidation(def, want)
		},
		Entry("a definition using every field", func(*models.LRPDefinition) {}, ""),
		Entry("created_at is the board's and not checked", func(d *models.LRPDefinition) { d.CreatedAt = -1 }, ""),

		Entry("definition_id of 64 characters", func(d *models.LRPDefinition) { d.DefinitionId = strings.Repeat("v", 64) }, ""),
		Entry("definition_id with dots, dashes and underscores", func(d *models.LRPDefinition) { d.DefinitionId = "v1.2_rc-3" }, ""),
		Entry("definition_id of 65 characters", func(d *models.LRPDefinition) { d.DefinitionId = strings.Repeat("v", 65) },
			`definition_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "`+strings.Repeat("v", 64)+`"...`),
		Entry("definition_id starting with a dash", func(d *models.LRPDefinition) { d.DefinitionId = "-v1" },
			`definition_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "-v1"`),
		Entry("definition_id with a slash", func(d *models.LRPDefinition) { d.DefinitionId = "v1/2" },
			`definition_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "v1/2"`),

		Entry("no action", func(d *models.LRPDefinition) { d.Action = nil },
			"action: required"),
		Entry("an action without a path", func(d *models.LRPDefinition) { d.Action.Path = "" },
			"action.path: required"),
		Entry("an argument that is not UTF-8", func(d *models.LRPDefinition) { d.Action.Args = []string{"ok", "\xff"} },
			"action.args[1]: must be valid UTF-8"),
		Entry("an environment variable without a name", func(d *models.LRPDefinition) {
			d.Action.Env = append(d.Action.Env, &models.EnvironmentVariable{Value: "orphan"})
		}, "action.env[2].name: must not be empty"),
		Entry("an environment variable name holding =", func(d *models.LRPDefinition) {
			d.Action.Env[0].Name = "A=B"
		}, `action.env[0].name: must not contain "=", got "A=B"`),
		Entry("a dir that is not UTF-8", func(d *models.LRPDefinition) { d.Action.Dir = "/srv/\xfe" },
			"action.dir: must be valid UTF-8"),

		Entry("no ports", func(d *models.LRPDefinition) { d.Ports = nil; d.HealthCheck = nil }, ""),
		Entry("eight ports", func(d *models.LRPDefinition) { d.Ports = []uint32{1, 2, 3, 4, 5, 6, 7, 8080} }, ""),
		Entry("nine ports", func(d *models.LRPDefinition) { d.Ports = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 8080} },
			"ports: must hold at most 8 ports, got 9"),
		Entry("port 65535", func(d *models.LRPDefinition) { d.Ports = []uint32{8080, 65535} }, ""),
		Entry("port 0", func(d *models.LRPDefinition) { d.Ports = []uint32{8080, 0} },
			"ports[1]: must be 1-65535, got 0"),
		Entry("port 65536", func(d *models.LRPDefinition) { d.Ports = []uint32{65536} },
			"ports[0]: must be 1-65535, got 65536"),
		Entry("a port listed twice", func(d *models.LRPDefinition) { d.Ports = []uint32{8080, 9090, 8080} },
			"ports[2]: duplicates ports[0] (8080)"),

		Entry("no health check", func(d *models.LRPDefinition) { d.HealthCheck = nil }, ""),
		Entry("a process health check needs no port", func(d *models.LRPDefinition) {
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_PROCESS}
		}, ""),
		Entry("a tcp health check", func(d *models.LRPDefinition) {
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 9090}
		}, ""),
		Entry("a tcp health check without a port", func(d *models.LRPDefinition) {
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_TCP}
		}, "health_check.port: must be 1-65535 when type is TCP, got 0"),
		Entry("an http health check on port 65536", func(d *models.LRPDefinition) { d.HealthCheck.Port = 65536 },
			"health_check.port: must be 1-65535 when type is HTTP, got 65536"),
		Entry("an http health check without a path", func(d *models.LRPDefinition) { d.HealthCheck.Path = "" },
			`health_check.path: must start with "/" when type is HTTP, got ""`),
		Entry("an http health check with a relative path", func(d *models.LRPDefinition) { d.HealthCheck.Path = "healthz" },
			`health_check.path: must start with "/" when type is HTTP, got "healthz"`),
		Entry("a health check of an unknown type", func(d *models.LRPDefinition) { d.HealthCheck.Type = 7 },
			"health_check.type: unknown health check type 7"),

		Entry("an http health check on the definition's other port", func(d *models.LRPDefinition) { d.HealthCheck.Port = 9090 }, ""),
		Entry("an http health check on a port the definition does not have", func(d *models.LRPDefinition) { d.HealthCheck.Port = 8081 },
			"health_check.port: must be one of the definition's ports [8080 9090], got 8081"),
		Entry("a tcp health check on a port the definition does not have", func(d *models.LRPDefinition) {
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 22}
		}, "health_check.port: must be one of the definition's ports [8080 9090], got 22"),
		Entry("a tcp health check in a definition without ports", func(d *models.LRPDefinition) {
			d.Ports = nil
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 8080}
		}, "health_check.port: must be one of the definition's ports, got 8080, and the definition has no ports"),
		Entry("a process health check ignores the port", func(d *models.LRPDefinition) {
			d.Ports = nil
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_PROCESS, Port: 8080}
		}, ""),

		Entry("health check timing left to the defaults", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs, d.HealthCheck.FailureThreshold = 0, 0, 0
		}, ""),
		Entry("the smallest interval and timeout", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs = 100, 100
		}, ""),
		Entry("the largest interval, timeout and threshold", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs, d.HealthCheck.FailureThreshold = 600000, 60000, 100
		}, ""),
		Entry("a timeout equal to the interval", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs = 3000, 3000
		}, ""),
		Entry("a negative interval", func(d *models.LRPDefinition) { d.HealthCheck.IntervalMs = -1 },
			"health_check.interval_ms: must be 0 (the default, 2000) or from 100 to 600000, got -1"),
		Entry("an interval below the least", func(d *models.LRPDefinition) { d.HealthCheck.IntervalMs = 99 },
			"health_check.interval_ms: must be 0 (the default, 2000) or from 100 to 600000, got 99"),
		Entry("an interval above the most", func(d *models.LRPDefinition) { d.HealthCheck.IntervalMs = 600001 },
			"health_check.interval_ms: must be 0 (the default, 2000) or from 100 to 600000, got 600001"),
		Entry("a negative timeout", func(d *models.LRPDefinition) { d.HealthCheck.TimeoutMs = -5 },
			"health_check.timeout_ms: must be 0 (the default, 2000) or from 100 to 60000, got -5"),
		Entry("a timeout above the most", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs = 600000, 60001
		}, "health_check.timeout_ms: must be 0 (the default, 2000) or from 100 to 60000, got 60001"),
		Entry("a timeout above the interval", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs = 1000, 1500
		}, "health_check.timeout_ms: must not be above interval_ms (1000), got 1500"),
		Entry("a timeout above the default interval", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs = 0, 2500
		}, "health_check.timeout_ms: must not be above the default interval_ms (2000), got 2500"),
		Entry("an interval below the default timeout", func(d *models.LRPDefinition) {
			d.HealthCheck.IntervalMs, d.HealthCheck.TimeoutMs = 1000, 0
		}, "health_check.timeout_ms: must not be above interval_ms (1000), got 2000"),
		Entry("a negative failure threshold", func(d *models.LRPDefinition) { d.HealthCheck.FailureThreshold = -1 },
			"health_check.failure_threshold: must be 0 (the default, 3) or from 1 to 100, got -1"),
		Entry("a failure threshold above the most", func(d *models.LRPDefinition) { d.HealthCheck.FailureThreshold = 101 },
			"health_check.failure_threshold: must be 0 (the default, 3) or from 1 to 100, got 101"),
		Entry("a tcp health check with timing", func(d *models.LRPDefinition) {
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 9090, IntervalMs: 500, TimeoutMs: 250, FailureThreshold: 1}
		}, ""),
		Entry("a tcp health check with a bad threshold", func(d *models.LRPDefinition) {
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 9090, FailureThreshold: -3}
		}, "health_check.failure_threshold: must be 0 (the default, 3) or from 1 to 100, got -3"),
		Entry("a process health check ignores the timing", func(d *models.LRPDefinition) {
			d.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_PROCESS, IntervalMs: -1, FailureThreshold: -1}
		}, ""),

		Entry("no start timeout", func(d *models.LRPDefinition) { d.StartTimeoutMs = 0 }, ""),
		Entry("a negative start timeout", func(d *models.LRPDefinition) { d.StartTimeoutMs = -1 },
			"start_timeout_ms: must not be negative, got -1"),
		Entry("no memory or disk limits", func(d *models.LRPDefinition) { d.MemoryMb = 0; d.DiskMb = 0 }, ""),
		Entry("negative memory", func(d *models.LRPDefinition) { d.MemoryMb = -1 },
			"memory_mb: must not be negative, got -1"),
		Entry("negative disk", func(d *models.LRPDefinition) { d.DiskMb = -2 },
			"disk_mb: must not be negative, got -2"),
	)

	DescribeTable("UpdateStrategy",
		func(strategy *models.UpdateStrategy, want string) {
			expectValidation(strategy, want)
		},
		Entry("all defaults", &models.UpdateStrategy{}, ""),
		Entry("counts", &models.UpdateStrategy{MaxSurge: "0", MaxUnavailable: "3"}, ""),
		Entry("both zero (the rollout surges by one)", &models.UpdateStrategy{MaxSurge: "0", MaxUnavailable: "0"}, ""),
		Entry("percent bounds", &models.UpdateStrategy{MaxSurge: "100%", MaxUnavailable: "0%"}, ""),
		Entry("durations and history", &models.UpdateStrategy{MinReadyMs: 5, ProgressDeadlineMs: 60000, HistoryLimit: 3}, ""),

		Entry("max_surge over 100%", &models.UpdateStrategy{MaxSurge: "101%"},
			`max_surge: must be a count like "2" or a percent like "25%" (0-100%), got "101%"`),
		Entry("max_surge negative", &models.UpdateStrategy{MaxSurge: "-1"},
			`max_surge: must be a count like "2" or a percent like "25%" (0-100%), got "-1"`),
		Entry("max_surge with a plus sign", &models.UpdateStrategy{MaxSurge: "+1"},
			`max_surge: must be a count like "2" or a percent like "25%" (0-100%), got "+1"`),
		Entry("max_surge a fraction", &models.UpdateStrategy{MaxSurge: "1.5"},
			`max_surge: must be a count like "2" or a percent like "25%" (0-100%), got "1.5"`),
		Entry("max_surge a bare percent sign", &models.UpdateStrategy{MaxSurge: "%"},
			`max_surge: must be a count like "2" or a percent like "25%" (0-100%), got "%"`),
		Entry("max_surge with a space", &models.UpdateStrategy{MaxSurge: " 2"},
			`max_surge: must be a count like "2" or a percent like "25%" (0-100%), got " 2"`),
		Entry("max_surge too long to keep", &models.UpdateStrategy{MaxSurge: "99999999999999999999"},
			`max_surge: must be at most 16 characters, got 20`),
		Entry("max_unavailable a word", &models.UpdateStrategy{MaxUnavailable: "half"},
			`max_unavailable: must be a count like "2" or a percent like "25%" (0-100%), got "half"`),
		Entry("max_unavailable a fractional percent", &models.UpdateStrategy{MaxUnavailable: "12.5%"},
			`max_unavailable: must be a count like "2" or a percent like "25%" (0-100%), got "12.5%"`),

		Entry("negative min_ready_ms", &models.UpdateStrategy{MinReadyMs: -1},
			"min_ready_ms: must not be negative, got -1"),
		Entry("negative progress_deadline_ms", &models.UpdateStrategy{ProgressDeadlineMs: -1},
			"progress_deadline_ms: must not be negative, got -1"),
		Entry("negative history_limit", &models.UpdateStrategy{HistoryLimit: -1},
			"history_limit: must not be negative, got -1"),
	)

	DescribeTable("UpdateDesiredLRPRequest",
		func(request *models.UpdateDesiredLRPRequest, want string) {
			expectValidation(request, want)
		},
		Entry("an empty update (changes nothing)",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{}}, ""),
		Entry("a classic update",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Instances: proto.Int32(0), Routes: routesOfJSONSize(100), Annotation: proto.String(""),
			}}, ""),
		Entry("a new definition with an identifier",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: validDefinition(), UpdateIdentifier: "v1",
				UpdateStrategy:  &models.UpdateStrategy{MaxSurge: "2"},
				ModificationTag: &models.ModificationTag{Epoch: "e", Index: 4},
			}}, ""),
		Entry("a new definition without any id (the board generates one)",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}},
			}}, ""),
		Entry("an identifier naming a definition without its own id",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition:       &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}},
				UpdateIdentifier: "v2",
			}}, ""),

		Entry("no process_guid",
			&models.UpdateDesiredLRPRequest{Update: &models.DesiredLRPUpdate{}},
			"process_guid: required"),
		Entry("no update",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g"},
			"update: required"),
		Entry("negative instances",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Instances: proto.Int32(-1)}},
			"update.instances: must be between 0 and 100000, got -1"),
		Entry("too many instances",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Instances: proto.Int32(100001)}},
			"update.instances: must be between 0 and 100000, got 100001"),
		Entry("routes over 128 KiB",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Routes: routesOfJSONSize(200000)}},
			"update.routes: must be at most 131072 bytes as JSON, got 200000"),
		Entry("annotation over 10 KiB",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Annotation: proto.String(strings.Repeat("x", 10241))}},
			"update.annotation: must be at most 10240 bytes, got 10241"),
		Entry("an invalid definition",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{}}},
			"update.definition.action: required"),
		Entry("a definition whose health check is on a port it does not have",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{
				Action: &models.RunAction{Path: "sleep"}, Ports: []uint32{8080},
				HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 80, Path: "/health"},
			}}},
			"update.definition.health_check.port: must be one of the definition's ports [8080], got 80"),
		Entry("a definition whose health check times out after its interval",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{
				Action: &models.RunAction{Path: "sleep"}, Ports: []uint32{8080},
				HealthCheck: &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 8080, IntervalMs: 500},
			}}},
			"update.definition.health_check.timeout_ms: must not be above interval_ms (500), got 2000"),
		Entry("an identifier without a definition",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{UpdateIdentifier: "v2"}},
			"update.update_identifier: requires a definition"),
		Entry("validate without a definition",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Validate: true}},
			"update.validate: requires a definition"),
		Entry("staged without a definition",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Staged: &models.StagedRollout{TargetPercent: 50}}},
			"update.staged: requires a definition"),
		Entry("a staged target of 0",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}}, Staged: &models.StagedRollout{}}},
			"update.staged.target_percent: must be above 0 and at most 100, got 0"),
		Entry("a staged target over 100",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}}, Staged: &models.StagedRollout{TargetPercent: 150}}},
			"update.staged.target_percent: must be above 0 and at most 100, got 150"),
		Entry("a safe rate without a period",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}},
				Staged:     &models.StagedRollout{TargetPercent: 50, SafeRate: &models.SafeRate{Percent: 5}}}},
			"update.staged.safe_rate.per_ms: must be above 0, got 0"),
		Entry("a safe rate of 0%",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}},
				Staged:     &models.StagedRollout{TargetPercent: 50, SafeRate: &models.SafeRate{PerMs: 1000}}}},
			"update.staged.safe_rate.percent: must be above 0 and at most 100, got 0"),
		Entry("a seed over 256 bytes",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}},
				Staged:     &models.StagedRollout{TargetPercent: 50, Seed: strings.Repeat("s", 257)}}},
			"update.staged.seed: must be at most 256 bytes, got 257"),
		Entry("queue without a definition",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{Queue: true, Instances: proto.Int32(3)}},
			"update.queue: requires a definition"),
		Entry("an identifier of the wrong format",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "sleep"}}, UpdateIdentifier: "v2!",
			}},
			`update.update_identifier: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "v2!"`),
		Entry("an identifier that disagrees with the definition's own id",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				Definition: validDefinition(), UpdateIdentifier: "v2",
			}},
			`update.update_identifier: must equal definition.definition_id "v1", got "v2"`),
		Entry("an invalid update strategy",
			&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: &models.DesiredLRPUpdate{
				UpdateStrategy: &models.UpdateStrategy{MaxUnavailable: "200%"},
			}},
			`update.update_strategy.max_unavailable: must be a count like "2" or a percent like "25%" (0-100%), got "200%"`),
	)

	DescribeTable("the other requests",
		func(request validator, want string) {
			expectValidation(request, want)
		},
		Entry("DesireLRPRequest without a desired_lrp", &models.DesireLRPRequest{}, "desired_lrp: required"),

		Entry("DesiredLRPByProcessGuidRequest", &models.DesiredLRPByProcessGuidRequest{ProcessGuid: "g-1"}, ""),
		Entry("DesiredLRPByProcessGuidRequest without a guid", &models.DesiredLRPByProcessGuidRequest{},
			"process_guid: required"),
		Entry("DesiredLRPByProcessGuidRequest with a bad guid", &models.DesiredLRPByProcessGuidRequest{ProcessGuid: "g/1"},
			`process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "g/1"`),

		Entry("DesiredLRPsRequest without filters", &models.DesiredLRPsRequest{}, ""),
		Entry("DesiredLRPsRequest with filters", &models.DesiredLRPsRequest{Domain: "apps", ProcessGuids: []string{"a", "b"}}, ""),
		Entry("DesiredLRPsRequest with a domain too long", &models.DesiredLRPsRequest{Domain: strings.Repeat("d", 256)},
			"domain: must be at most 255 bytes, got 256"),
		Entry("DesiredLRPsRequest with a bad guid", &models.DesiredLRPsRequest{ProcessGuids: []string{"a", ""}},
			"process_guids[1]: required"),

		Entry("DesiredLRPSchedulingInfosRequest without filters", &models.DesiredLRPSchedulingInfosRequest{}, ""),
		Entry("DesiredLRPSchedulingInfosRequest with a domain too long", &models.DesiredLRPSchedulingInfosRequest{Domain: strings.Repeat("d", 300)},
			"domain: must be at most 255 bytes, got 300"),
		Entry("DesiredLRPSchedulingInfosRequest with a bad guid", &models.DesiredLRPSchedulingInfosRequest{ProcessGuids: []string{"a b"}},
			`process_guids[0]: must match ^[a-zA-Z0-9_-]{1,128}$, got "a b"`),

		Entry("RemoveDesiredLRPRequest", &models.RemoveDesiredLRPRequest{ProcessGuid: "g"}, ""),
		Entry("RemoveDesiredLRPRequest without a guid", &models.RemoveDesiredLRPRequest{}, "process_guid: required"),

		Entry("DefinitionsRequest", &models.DefinitionsRequest{ProcessGuid: "g"}, ""),
		Entry("DefinitionsRequest without a guid", &models.DefinitionsRequest{}, "process_guid: required"),

		Entry("DefinitionRequest", &models.DefinitionRequest{ProcessGuid: "g", DefinitionId: "d-0123456789abcdef"}, ""),
		Entry("DefinitionRequest without a guid", &models.DefinitionRequest{DefinitionId: "v1"}, "process_guid: required"),
		Entry("DefinitionRequest without a definition id", &models.DefinitionRequest{ProcessGuid: "g"}, "definition_id: required"),
		Entry("DefinitionRequest with a bad definition id", &models.DefinitionRequest{ProcessGuid: "g", DefinitionId: "v 1"},
			`definition_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "v 1"`),

		Entry("ActualLRPsRequest without filters", &models.ActualLRPsRequest{}, ""),
		Entry("ActualLRPsRequest with every filter",
			&models.ActualLRPsRequest{Domain: "apps", CellId: "cell-1", ProcessGuid: "g", Index: proto.Int32(0)}, ""),
		Entry("ActualLRPsRequest with a negative index", &models.ActualLRPsRequest{Index: proto.Int32(-1)},
			"index: must not be negative, got -1"),
		Entry("ActualLRPsRequest with a bad guid", &models.ActualLRPsRequest{ProcessGuid: "g!"},
			`process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "g!"`),
		Entry("ActualLRPsRequest with a domain too long", &models.ActualLRPsRequest{Domain: strings.Repeat("d", 256)},
			"domain: must be at most 255 bytes, got 256"),
		Entry("ActualLRPsRequest with a cell id too long", &models.ActualLRPsRequest{CellId: strings.Repeat("c", 256)},
			`cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got "`+strings.Repeat("c", 64)+`"...`),
		Entry("ActualLRPsRequest with a cell id no cell can have", &models.ActualLRPsRequest{CellId: "z1/cell"},
			`cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got "z1/cell"`),

		Entry("UpsertDomainRequest", &models.UpsertDomainRequest{Domain: "apps", TtlSeconds: 120}, ""),
		Entry("UpsertDomainRequest fresh forever", &models.UpsertDomainRequest{Domain: "apps"}, ""),
		Entry("UpsertDomainRequest for ten years", &models.UpsertDomainRequest{Domain: "apps", TtlSeconds: models.MaxDomainTTLSeconds}, ""),
		Entry("UpsertDomainRequest without a domain", &models.UpsertDomainRequest{TtlSeconds: 5}, "domain: required"),
		Entry("UpsertDomainRequest with a domain too long", &models.UpsertDomainRequest{Domain: strings.Repeat("d", 256)},
			"domain: must be at most 255 bytes, got 256"),
		Entry("UpsertDomainRequest with a negative ttl", &models.UpsertDomainRequest{Domain: "apps", TtlSeconds: -1},
			"ttl_seconds: must be between 0 and 315360000, got -1"),
		Entry("UpsertDomainRequest with a ttl beyond ten years", &models.UpsertDomainRequest{Domain: "apps", TtlSeconds: models.MaxDomainTTLSeconds + 1},
			"ttl_seconds: must be between 0 and 315360000, got 315360001"),

		Entry("DomainsRequest", &models.DomainsRequest{}, ""),
		Entry("PingRequest", &models.PingRequest{}, ""),
	)

	// A handler may be handed a nil message (an empty body decodes to an
	// empty one, but Go callers can pass nil); Validate answers, never panics.
	DescribeTable("nil messages",
		func(message validator, want string) {
			err := message.Validate()
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue(), "want InvalidRequest, got %v", err)
			Expect(models.ConvertError(err).GetMessage()).To(Equal(want))
		},
		Entry("DesireLRPRequest", (*models.DesireLRPRequest)(nil), "desired_lrp: required"),
		Entry("DesiredLRPByProcessGuidRequest", (*models.DesiredLRPByProcessGuidRequest)(nil), "process_guid: required"),
		Entry("DesiredLRPsRequest", (*models.DesiredLRPsRequest)(nil), ""),
		Entry("DesiredLRPSchedulingInfosRequest", (*models.DesiredLRPSchedulingInfosRequest)(nil), ""),
		Entry("UpdateDesiredLRPRequest", (*models.UpdateDesiredLRPRequest)(nil), "process_guid: required"),
		Entry("RemoveDesiredLRPRequest", (*models.RemoveDesiredLRPRequest)(nil), "process_guid: required"),
		Entry("DefinitionsRequest", (*models.DefinitionsRequest)(nil), "process_guid: required"),
		Entry("DefinitionRequest", (*models.DefinitionRequest)(nil), "process_guid: required"),
		Entry("ActualLRPsRequest", (*models.ActualLRPsRequest)(nil), ""),
		Entry("UpsertDomainRequest", (*models.UpsertDomainRequest)(nil), "domain: required"),
		Entry("DomainsRequest", (*models.DomainsRequest)(nil), ""),
		Entry("PingRequest", (*models.PingRequest)(nil), ""),
		Entry("DesiredLRP", (*models.DesiredLRP)(nil), "process_guid: required"),
		Entry("LRPDefinition", (*models.LRPDefinition)(nil), "action: required"),
		Entry("UpdateStrategy", (*models.UpdateStrategy)(nil), ""),
	)

	Describe("a DesiredLRP validated on its own", func() {
		It("names fields from the DesiredLRP itself", func() {
			lrp := validDesiredLRP()
			lrp.Definition.Action.Env[1].Name = ""
			expectValidation(lrp, "definition.action.env[1].name: must not be empty")
		})
	})

	DescribeTable("Rollout control requests",
		func(request validator, want string) {
			expectValidation(request, want)
		},
		Entry("a promote without a guid",
			&models.PromoteRolloutRequest{ToPercent: 50},
			"process_guid: required"),
		Entry("a promote to 0%",
			&models.PromoteRolloutRequest{ProcessGuid: "g"},
			"to_percent: must be above 0 and at most 100, got 0"),
		Entry("a promote with a rate of no period",
			&models.PromoteRolloutRequest{ProcessGuid: "g", ToPercent: 50, SafeRate: &models.SafeRate{Percent: 5, PerMs: -1}},
			"safe_rate.per_ms: must be above 0, got -1"),
		Entry("a pause without a guid", &models.PauseRolloutRequest{}, "process_guid: required"),
		Entry("a resume without a guid", &models.ResumeRolloutRequest{}, "process_guid: required"),
	)

	DescribeTable("ValidateProcessGuid",
		func(guid string, valid bool) {
			err := models.ValidateProcessGuid(guid)
			if valid {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue())
			Expect(err.Error()).To(HavePrefix("InvalidRequest: process_guid: "))
		},
		Entry("letters, digits, dash and underscore", "Web-app_01", true),
		Entry("one character", "a", true),
		Entry("128 characters", strings.Repeat("z", 128), true),
		Entry("empty", "", false),
		Entry("129 characters", strings.Repeat("z", 129), false),
		Entry("a colon", "a:b", false),
		Entry("a newline", "a\n", false),
	)

	DescribeTable("ValidateUpdateIdentifier",
		func(id string, valid bool) {
			err := models.ValidateUpdateIdentifier(id)
			if valid {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue())
			Expect(err.Error()).To(HavePrefix("InvalidRequest: update_identifier: "))
		},
		Entry("a version", "v2", true),
		Entry("a digit first", "2024.06.01", true),
		Entry("a generated id", "d-0123456789abcdef", true),
		Entry("64 characters", strings.Repeat("a", 64), true),
		Entry("empty", "", false),
		Entry("65 characters", strings.Repeat("a", 65), false),
		Entry("a dot first", ".v2", false),
		Entry("an underscore first", "_v2", false),
		Entry("a space", "v 2", false),
		Entry("a non-ASCII letter", "vé", false),
	)

	DescribeTable("HealthCheck timing with the defaults applied",
		func(check *models.HealthCheck, interval, timeout time.Duration, threshold int) {
			Expect(check.Interval()).To(Equal(interval))
			Expect(check.Timeout()).To(Equal(timeout))
			Expect(check.Threshold()).To(Equal(threshold))
		},
		Entry("no health check at all", nil, 2*time.Second, 2*time.Second, 3),
		Entry("zeros", &models.HealthCheck{Type: models.HealthCheck_HTTP}, 2*time.Second, 2*time.Second, 3),
		Entry("values of its own", &models.HealthCheck{IntervalMs: 500, TimeoutMs: 250, FailureThreshold: 1},
			500*time.Millisecond, 250*time.Millisecond, 1),
	)
})
