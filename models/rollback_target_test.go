package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("RollbackTarget", func() {
	// def is a kept definition: id, created at, and its marks and history
	// spelled as flags: "A" active, "H" healthy, "B" became healthy, "F"
	// failed validation.
	def := func(id string, at int64, flags string) *models.DefinitionSummary {
		d := &models.DefinitionSummary{DefinitionId: id, CreatedAt: at}
		for _, f := range flags {
			switch f {
			case 'A':
				d.Active = true
			case 'H':
				d.Healthy = true
			case 'B':
				d.BecameHealthy = true
			case 'F':
				d.FailedValidation = true
			}
		}
		return d
	}
	// The worked example in rollback_target.go.
	example := []*models.DefinitionSummary{
		def("v4", 4, "AHB"), def("v3", 3, "F"), def("v2", 2, "B"), def("v1", 1, "B"),
	}

	DescribeTable("the target, a warning, or an error",
		func(kept []*models.DefinitionSummary, requested, target, warning string, errType models.Error_Type) {
			gotTarget, gotWarning, err := models.RollbackTarget("hello", kept, requested)
			if errType != models.Error_UnknownError {
				Expect(models.IsErrorType(err, errType)).To(BeTrue(), "error %v", err)
				Expect(gotTarget).To(BeEmpty())
				Expect(gotWarning).To(BeEmpty())
				return
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(gotTarget).To(Equal(target))
			if warning == "" {
				Expect(gotWarning).To(BeEmpty())
			} else {
				Expect(gotWarning).To(HavePrefix(warning))
			}
		},
		Entry("example 1: plain rollback skips the newer definition that failed validation",
			example, "", "v2", "", models.Error_UnknownError),
		Entry("example 2: v3 named is allowed with a warning",
			example, "v3", "v3", "v3 failed validation", models.Error_UnknownError),
		Entry("example 3: a rollout under way goes back to the healthy definition",
			[]*models.DefinitionSummary{def("v4", 4, "A"), def("v3", 3, "F"), def("v2", 2, "HB"), def("v1", 1, "B")},
			"", "v2", "", models.Error_UnknownError),
		Entry("example 4: nothing that ran besides the active one",
			[]*models.DefinitionSummary{def("v4", 4, "AHB"), def("v1", 1, "F")},
			"", "", "", models.Error_InvalidStateTransition),
		Entry("the healthy definition is preferred to a newer one that ran",
			[]*models.DefinitionSummary{def("v3", 3, "A"), def("v2", 2, "B"), def("v1", 1, "HB")},
			"", "v1", "", models.Error_UnknownError),
		Entry("a healthy definition that once failed validation is not a default target",
			[]*models.DefinitionSummary{def("v3", 3, "A"), def("v2", 2, "HBF"), def("v1", 1, "B")},
			"", "v1", "", models.Error_UnknownError),
		Entry("a definition never healthy is not a default target (a rollout that failed)",
			[]*models.DefinitionSummary{def("v3", 3, "AHB"), def("v2", 2, ""), def("v1", 1, "B")},
			"", "v1", "", models.Error_UnknownError),
		Entry("newer than the active one is fine (after a rollback, forward again)",
			[]*models.DefinitionSummary{def("v2", 2, "B"), def("v1", 1, "AHB")},
			"", "v2", "", models.Error_UnknownError),
		Entry("equal created_at: the greater definition id is newer",
			[]*models.DefinitionSummary{def("c", 5, "AHB"), def("a", 1, "B"), def("b", 1, "B")},
			"", "b", "", models.Error_UnknownError),
		Entry("a removed LRP (no marks): the newest that ran",
			[]*models.DefinitionSummary{def("v2", 2, "B"), def("v1", 1, "B")},
			"", "v2", "", models.Error_UnknownError),
		Entry("only the active definition", []*models.DefinitionSummary{def("v1", 1, "AHB")},
			"", "", "", models.Error_InvalidStateTransition),
		Entry("named: one never healthy is allowed with a warning",
			[]*models.DefinitionSummary{def("v2", 2, "AHB"), def("v1", 1, "")},
			"v1", "v1", "v1 never became healthy", models.Error_UnknownError),
		Entry("named: one that ran, no warning", example, "v1", "v1", "", models.Error_UnknownError),
		Entry("named: the active one", example, "v4", "", "", models.Error_InvalidStateTransition),
		Entry("named: not kept", example, "v9", "", "", models.Error_ResourceNotFound),
	)

	It("names why there is nothing to roll back to", func() {
		_, _, err := models.RollbackTarget("hello", []*models.DefinitionSummary{def("v2", 2, "AHB"), def("v1", 1, "F")}, "")
		Expect(err).To(MatchError(ContainSubstring(`its active definition "v2" that became healthy and did not fail validation`)))
	})

	Describe("AbortTarget", func() {
		lrp := func(active, healthy string) *models.DesiredLRP {
			return &models.DesiredLRP{ProcessGuid: "hello", ActiveDefinitionId: active, HealthyDefinitionId: healthy}
		}
		kept := []*models.DefinitionSummary{def("v3", 3, "A"), def("v2", 2, "HB"), def("v1", 1, "B")}

		DescribeTable("the healthy definition, or why not (the worked example in rollback_target.go)",
			func(d *models.DesiredLRP, kept []*models.DefinitionSummary, target string, abortable bool, errType models.Error_Type, message string) {
				Expect(models.Abortable(d.GetActiveDefinitionId(), d.GetHealthyDefinitionId())).To(Equal(abortable))
				got, err := models.AbortTarget(d, kept)
				Expect(got).To(Equal(target))
				if errType == models.Error_UnknownError {
					Expect(err).NotTo(HaveOccurred())
					return
				}
				Expect(models.IsErrorType(err, errType)).To(BeTrue(), "error %v", err)
				Expect(err).To(MatchError(ContainSubstring(message)))
			},
			Entry("1. a rollout under way goes back to the healthy definition", lrp("v3", "v2"), kept,
				"v2", true, models.Error_UnknownError, ""),
			Entry("2. the healthy definition is active: nothing to abort", lrp("v3", "v3"), kept,
				"", false, models.Error_InvalidStateTransition, `desired_lrp "hello" runs its healthy_definition_id "v3" already`),
			Entry("3. no healthy definition", lrp("v3", ""), kept,
				"", false, models.Error_InvalidStateTransition, `desired_lrp "hello" has no healthy_definition_id to go back to`),
			Entry("the healthy definition is not kept", lrp("v3", "v0"), kept,
				"", true, models.Error_ResourceNotFound, `definition_id "v0": desired_lrp "hello" has no such definition`),
			Entry("no LRP", nil, kept, "", false, models.Error_InvalidStateTransition, "no healthy_definition_id"),
		)
	})
})
