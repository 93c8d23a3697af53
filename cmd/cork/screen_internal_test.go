package main

import (
	"bytes"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("what cork prints for people", func() {
	DescribeTable("shows control characters as escapes, newline and tab as they are",
		func(text, want string) {
			Expect(printable(text)).To(Equal(want))
		},
		Entry("a crash reason that would retitle and clear the terminal",
			"A\x1b]0;PWNED\x07B\x1b[2J\x1b[31mRED", `A\x1b]0;PWNED\aB\x1b[2J\x1b[31mRED`),
		Entry("a carriage return that would write over the line", "ok\rFAILED", `ok\rFAILED`),
		Entry("DEL and a NUL", "a\x7fb\x00c", `a\u007fb\x00c`),
		Entry("a C1 control (CSI) in UTF-8", "a\u009b2Jb", `a\u009b2Jb`),
		Entry("newlines, tabs and other UTF-8 as they are", "row\tcell\nnext é █ ✓", "row\tcell\nnext é █ ✓"),
		Entry("bytes that are not UTF-8 as they are", "a\xc3(\xffb", "a\xc3(\xffb"),
	)

	It("escapes a C1 control split across two writes", func() {
		var out bytes.Buffer
		screen := &screenWriter{w: &out}
		for _, part := range []string{"a\xc2", "\x9b2J", "\xc2", "é"} {
			n, err := screen.Write([]byte(part))
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(Equal(len(part)))
		}
		Expect(out.String()).To(Equal(`a\u009b2J` + "\xc2é"))
	})

	It("keeps a JSON line JSON, the string it holds the same, whatever controls the string has", func() {
		var out bytes.Buffer
		a := newApp(nil, &out)
		annotation := "a\x1b[2J\rb\x7fc\u009bd\u0085e"
		Expect(printJSONLines(a.out, []*models.DesiredLRP{{ProcessGuid: "web", Annotation: annotation}})).To(Succeed())
		Expect(a.out.Flush()).To(Succeed())
		Expect(out.String()).NotTo(ContainSubstring("\x1b"))
		var decoded struct{ Annotation string }
		Expect(json.Unmarshal(out.Bytes(), &decoded)).To(Succeed(), out.String())
		Expect(decoded.Annotation).To(Equal(annotation))
	})

	It("writes every table and line through it, and an instance's log past it as it is", func() {
		var out bytes.Buffer
		a := newApp(nil, &out)
		Expect(printTable(a.out, []string{"INDEX", "REASON"}, [][]string{{"0", "exited\x1b[2J"}})).To(Succeed())
		_, err := rawWriter{a}.Write([]byte("\x1b[32mlog line in green\x1b[0m\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(a.out.Flush()).To(Succeed())
		Expect(out.String()).To(Equal("INDEX  REASON\n0      exited\\x1b[2J\n\x1b[32mlog line in green\x1b[0m\n"))
	})
})
