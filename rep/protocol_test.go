package rep_test

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

var _ = DescribeTable("Answered: whether the board decided anything about a call",
	func(err error, answered bool) {
		Expect(rep.Answered(err)).To(Equal(answered))
	},
	Entry("success", nil, true),
	Entry("a refusal of the board's", models.NewError(models.Error_InvalidStateTransition, "not yours"), true),
	Entry("not found", models.NewError(models.Error_ResourceNotFound, "gone"), true),
	Entry("a refusal, wrapped", fmt.Errorf("claim: %w", models.NewError(models.Error_ResourceNotFound, "gone")), true),
	Entry("Unavailable: its database is away", models.NewError(models.Error_Unavailable, "database unreachable"), false),
	Entry("Unavailable, wrapped", fmt.Errorf("crash: %w", models.NewError(models.Error_Unavailable, "shutting down")), false),
	Entry("a transport failure", errors.New("connection refused"), false),
)

var _ = Describe("CallGate", func() {
	var gate *rep.CallGate[string]

	BeforeEach(func() {
		gate = rep.NewCallGate[string]()
	})

	It("leaves an instance with a call in flight out of a report until the call ends", func() {
		gate.BeginCall("a")
		Expect(gate.InCall("a")).To(BeTrue())
		Expect(gate.Report("a")).To(BeFalse())
		Expect(gate.Report("b")).To(BeTrue())
		Expect(gate.InReport("a")).To(BeFalse())
		Expect(gate.InReport("b")).To(BeTrue())

		gate.EndCall("a")
		Expect(gate.InCall("a")).To(BeFalse())
		Expect(gate.Report("a")).To(BeTrue())
	})

	It("keeps an instance out of reports until the outermost of nested calls ends", func() {
		gate.BeginCall("a")
		gate.BeginCall("a")
		gate.EndCall("a")
		Expect(gate.InCall("a")).To(BeTrue())
		Expect(gate.Report("a")).To(BeFalse())

		gate.EndCall("a")
		Expect(gate.InCall("a")).To(BeFalse())
		Expect(gate.Report("a")).To(BeTrue())
	})

	It("holds a call about an instance in the report in flight until the report is answered, and only that one", func() {
		Expect(gate.Report("a")).To(BeTrue())
		began := make(chan string, 2)
		go func() {
			gate.BeginCall("a")
			began <- "a"
		}()
		go func() {
			gate.BeginCall("b")
			began <- "b"
		}()
		Eventually(began).Should(Receive(Equal("b")))
		Consistently(began).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())

		gate.ReportAnswered("a")
		Eventually(began).Should(Receive(Equal("a")))
		Expect(gate.InReport("a")).To(BeFalse())
		Expect(gate.InCall("a")).To(BeTrue())
	})
})
