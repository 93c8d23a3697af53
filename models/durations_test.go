package models_test

import (
	"fmt"
	"math"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

// durationField is one duration field reachable from a validated message:
// its path there (as errors name it) and its descriptor.
type durationField struct {
	path  []protoreflect.FieldDescriptor
	field protoreflect.FieldDescriptor
}

func (d durationField) name() string {
	names := make([]string, 0, len(d.path)+1)
	for _, fd := range d.path {
		name := string(fd.Name())
		if fd.IsList() {
			name += "[0]" // setDuration sets the list's first message
		}
		names = append(names, name)
	}
	return strings.Join(append(names, string(d.field.Name())), ".")
}

// isDuration is how a duration field is named: "_ms" or "_seconds" at the
// end of an integer field.
func isDuration(fd protoreflect.FieldDescriptor) bool {
	name := string(fd.Name())
	integer := fd.Kind() == protoreflect.Int64Kind || fd.Kind() == protoreflect.Int32Kind
	return integer && (strings.HasSuffix(name, "_ms") || strings.HasSuffix(name, "_seconds"))
}

// durationFields walks md's fields, through singular messages of this
// package, to every duration field.
func durationFields(md protoreflect.MessageDescriptor) []durationField {
	var found []durationField
	var walk func(md protoreflect.MessageDescriptor, path []protoreflect.FieldDescriptor)
	walk = func(md protoreflect.MessageDescriptor, path []protoreflect.FieldDescriptor) {
		if md.ParentFile().Package() != "corkboard.models" || len(path) > 8 {
			return
		}
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			switch {
			case fd.Message() != nil && !fd.IsMap():
				walk(fd.Message(), append(path[:len(path):len(path)], fd))
			case isDuration(fd):
				found = append(found, durationField{path: path, field: fd})
			}
		}
	}
	walk(md, nil)
	return found
}

// durationFixtures are valid messages, one for each validated message that
// holds a duration field, with every message on the way to one set, and
// the health check's interval at its most so that its timeout may be too.
func durationFixtures() map[string]func() proto.Message {
	definition := func() *models.LRPDefinition {
		d := validDefinition()
		d.HealthCheck.IntervalMs = models.MaxHealthCheckIntervalMs
		return d
	}
	lrp := func() *models.DesiredLRP {
		l := validDesiredLRP()
		l.Definition = definition()
		l.Instances = 0
		l.Autoscaling = validAutoscaling()
		return l
	}
	rate := func() *models.SafeRate { return &models.SafeRate{Percent: 5, PerMs: time.Hour.Milliseconds()} }
	update := func() *models.DesiredLRPUpdate {
		return &models.DesiredLRPUpdate{
			Definition:     definition(),
			UpdateStrategy: &models.UpdateStrategy{MinReadyMs: 1000, ProgressDeadlineMs: 60000},
			Staged:         &models.StagedRollout{TargetPercent: 50, SafeRate: rate()},
			Autoscaling:    validAutoscaling(),
			Analysis: &models.RolloutAnalysis{IntervalMs: 1000, Checks: []*models.AnalysisCheck{
				{Name: "gate", Provider: "webhook", Url: "http://gate.example/", TimeoutMs: 1000},
			}},
			BakeMs: 1000,
		}
	}
	return map[string]func() proto.Message{
		"Autoscaling":      func() proto.Message { return validAutoscaling() },
		"DesireLRPRequest": func() proto.Message { return &models.DesireLRPRequest{DesiredLrp: lrp()} },
		"DesiredLRP":       func() proto.Message { return lrp() },
		"LRPDefinition":    func() proto.Message { return definition() },
		"EditRolloutRequest": func() proto.Message {
			return &models.EditRolloutRequest{ProcessGuid: "web", MinReadyMs: proto.Int64(1000), ProgressDeadlineMs: proto.Int64(60000), SafeRate: rate()}
		},
		"PromoteRolloutRequest": func() proto.Message {
			return &models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 50, SafeRate: rate()}
		},
		"RolloutPlanRequest": func() proto.Message {
			return &models.RolloutPlanRequest{ProcessGuid: "web", Update: update(), ReadyAfterMs: 1000}
		},
		"UpdateDesiredLRPRequest": func() proto.Message {
			return &models.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: update()}
		},
		"UpdateStrategy": func() proto.Message { return &models.UpdateStrategy{MinReadyMs: 1000} },
		"AddFreezeWindowRequest": func() proto.Message {
			return &models.AddFreezeWindowRequest{Window: &models.FreezeWindow{Name: "weekend", Schedule: "0 18 * * 5", DurationMs: 1000}}
		},
		"UpsertDomainRequest": func() proto.Message { return &models.UpsertDomainRequest{Domain: "apps", TtlSeconds: 60} },
		"DrainCellRequest":    func() proto.Message { return &models.DrainCellRequest{CellId: "cell-1", DeadlineMs: 1000} },
	}
}

// setDuration sets the field at d's path in msg, whose messages on the
// way are set already.
func setDuration(msg proto.Message, d durationField, value int64) {
	m := msg.ProtoReflect()
	for _, fd := range d.path {
		Expect(m.Has(fd)).To(BeTrue(), "the fixture sets %s on the way to %s", fd.Name(), d.name())
		if fd.IsList() {
			// The list's first message stands for all of them.
			m = m.Mutable(fd).List().Get(0).Message()
			continue
		}
		m = m.Mutable(fd).Message()
	}
	if d.field.Kind() == protoreflect.Int32Kind {
		m.Set(d.field, protoreflect.ValueOfInt32(int32(value)))
		return
	}
	m.Set(d.field, protoreflect.ValueOfInt64(value))
}

var _ = Describe("Duration fields", func() {
	// Every validated message, every duration field in it however deep:
	// a new one without a bound, or a new validated message holding one
	// without a fixture here, fails.
	It("are each refused above their bound and accepted at it, by construction", func() {
		fixtures := durationFixtures()
		checked := 0
		for _, mt := range validatedTypes() {
			fields := durationFields(mt.Descriptor())
			if len(fields) == 0 {
				continue
			}
			root := string(mt.Descriptor().Name())
			fixture, ok := fixtures[root]
			Expect(ok).To(BeTrue(), "no duration fixture for %s, which holds %s", root, fields[0].name())
			Expect(fixture().(validator).Validate()).To(Succeed(), "the %s fixture is valid", root)
			for _, d := range fields {
				limit, ok := models.DurationLimit(string(d.field.FullName()))
				Expect(ok).To(BeTrue(), "%s (%s in %s) has no bound", d.field.FullName(), d.name(), root)
				for _, value := range []int64{limit + 1, math.MaxInt64, -1} {
					msg := fixture()
					setDuration(msg, d, value)
					err := msg.(validator).Validate()
					Expect(err).To(HaveOccurred(), "%s.%s = %d", root, d.name(), value)
					Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_InvalidRequest))
					Expect(err.Error()).To(ContainSubstring(d.name()+": "), "%s.%s = %d", root, d.name(), value)
					Expect(err.Error()).To(ContainSubstring(fmt.Sprint(value)))
				}
				msg := fixture()
				setDuration(msg, d, limit)
				Expect(msg.(validator).Validate()).To(Succeed(), "%s.%s = %d", root, d.name(), limit)
				checked++
			}
		}
		// Autoscaling (1), DesireLRPRequest and DesiredLRP (7 each),
		// EditRolloutRequest (3), LRPDefinition (4), PromoteRolloutRequest
		// (1), RolloutPlanRequest (12), UpdateDesiredLRPRequest (11),
		// UpdateStrategy (2), UpsertDomainRequest (1), AddFreezeWindowRequest
		// (1), DrainCellRequest (1).
		Expect(checked).To(Equal(51))
	})

	DescribeTable("are bounded where the rest of their message is not checked",
		func(mutate func(*models.DesiredLRP), want string) {
			lrp := validDesiredLRP()
			mutate(lrp)
			err := lrp.Validate()
			Expect(err).To(HaveOccurred())
			Expect(models.ConvertError(err).GetMessage()).To(Equal(want))
		},
		Entry("a process health check's interval", func(l *models.DesiredLRP) {
			l.Definition.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_PROCESS, IntervalMs: math.MaxInt64}
		}, "definition.health_check.interval_ms: must be at most 600000 (10m0s), got 9223372036854775807"),
		Entry("a process health check's timeout", func(l *models.DesiredLRP) {
			l.Definition.HealthCheck = &models.HealthCheck{Type: models.HealthCheck_PROCESS, TimeoutMs: 60001}
		}, "definition.health_check.timeout_ms: must be at most 60000 (1m0s), got 60001"),
		Entry("disabled autoscaling's window", func(l *models.DesiredLRP) {
			l.Autoscaling = &models.Autoscaling{ScaleDownStabilizationMs: math.MaxInt64}
		}, "autoscaling.scale_down_stabilization_ms: must be between 0 (the board's default) and 86400000, got 9223372036854775807"),
	)

	DescribeTable("Millis saturates instead of overflowing",
		func(ms int64, want time.Duration) {
			Expect(models.Millis(ms)).To(Equal(want))
		},
		Entry("zero", int64(0), time.Duration(0)),
		Entry("a second", int64(1000), time.Second),
		Entry("negative", int64(-5), time.Duration(0)),
		Entry("ten years", int64(models.MaxMillis), time.Duration(models.MaxMillis)*time.Millisecond),
		Entry("the largest int64", int64(math.MaxInt64), time.Duration(models.MaxMillis)*time.Millisecond),
	)

	It("keeps every bound within what Millis returns unchanged", func() {
		for _, mt := range validatedTypes() {
			for _, d := range durationFields(mt.Descriptor()) {
				limit, ok := models.DurationLimit(string(d.field.FullName()))
				if ok && strings.HasSuffix(d.name(), "_ms") {
					Expect(limit).To(BeNumerically("<=", models.MaxMillis), "%s", d.field.FullName())
				}
			}
		}
	})
})
