package models_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// hack/generate.sh records the checksum of every .proto it compiled in
// models/proto.sum. When a .proto changes without regenerating, the
// committed .pb.go files no longer match it; this catches that even where
// protoc is not installed.
var _ = Describe("committed generated code is current (models/proto.sum)", func() {
	It("matches every models/*.proto, with a .pb.go beside each", func() {
		Expect(generatedCodeProblems(".")).To(BeEmpty(), "run make generate")
	})

	Describe("the check itself", func() {
		var dir string

		BeforeEach(func() {
			dir = GinkgoT().TempDir()
			for name, content := range map[string]string{
				"a.proto": "syntax = \"proto3\";\n", "a.pb.go": "package models\n",
				"b.proto": "syntax = \"proto3\";\n// b\n", "b.pb.go": "package models\n",
			} {
				Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
			}
			writeProtoSum(dir)
		})

		It("passes right after generating", func() {
			Expect(generatedCodeProblems(dir)).To(BeEmpty())
		})

		It("catches an edited .proto", func() {
			Expect(os.WriteFile(filepath.Join(dir, "b.proto"), []byte("syntax = \"proto3\";\n// edited\n"), 0o644)).To(Succeed())
			Expect(generatedCodeProblems(dir)).To(ConsistOf("b.proto changed since its code was generated"))
		})

		It("catches a new .proto", func() {
			Expect(os.WriteFile(filepath.Join(dir, "c.proto"), []byte("syntax = \"proto3\";\n"), 0o644)).To(Succeed())
			Expect(generatedCodeProblems(dir)).To(ConsistOf(
				"c.proto is missing from proto.sum",
				"c.proto has no generated c.pb.go",
			))
		})

		It("catches a deleted .proto", func() {
			Expect(os.Remove(filepath.Join(dir, "a.proto"))).To(Succeed())
			Expect(generatedCodeProblems(dir)).To(ConsistOf("proto.sum lists a.proto, which is gone"))
		})

		It("catches a missing proto.sum", func() {
			Expect(os.Remove(filepath.Join(dir, "proto.sum"))).To(Succeed())
			Expect(generatedCodeProblems(dir)).To(ConsistOf(HavePrefix("cannot read proto.sum:")))
		})

		It("catches a malformed line", func() {
			Expect(os.WriteFile(filepath.Join(dir, "proto.sum"), []byte("not a checksum\n"), 0o644)).To(Succeed())
			Expect(generatedCodeProblems(dir)).To(ContainElement(`malformed proto.sum line "not a checksum"`))
		})
	})
})

// writeProtoSum writes what `sha256sum *.proto` would, as generate.sh does.
func writeProtoSum(dir string) {
	GinkgoHelper()
	protos, err := filepath.Glob(filepath.Join(dir, "*.proto"))
	Expect(err).NotTo(HaveOccurred())
	var sum strings.Builder
	for _, proto := range protos {
		digest, err := sha256File(proto)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(&sum, "%s  %s\n", digest, filepath.Base(proto))
	}
	Expect(os.WriteFile(filepath.Join(dir, "proto.sum"), []byte(sum.String()), 0o644)).To(Succeed())
}

var sumLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *](.+)$`)

// generatedCodeProblems compares dir/proto.sum (sha256sum output, one
// "<hex>  <file>.proto" per line) with the .proto files in dir, and checks
// that each has its .pb.go. It returns one line per problem.
func generatedCodeProblems(dir string) []string {
	sum, err := os.ReadFile(filepath.Join(dir, "proto.sum"))
	if err != nil {
		return []string{"cannot read proto.sum: " + err.Error()}
	}
	var problems []string
	recorded := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(string(sum), "\n"), "\n") {
		match := sumLine.FindStringSubmatch(line)
		if match == nil {
			problems = append(problems, fmt.Sprintf("malformed proto.sum line %q", line))
			continue
		}
		recorded[match[2]] = match[1]
	}

	paths, err := filepath.Glob(filepath.Join(dir, "*.proto"))
	if err != nil {
		return append(problems, err.Error())
	}
	var protos []string
	for _, path := range paths {
		proto := filepath.Base(path)
		protos = append(protos, proto)
		digest, err := sha256File(path)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case recorded[proto] == "":
			problems = append(problems, proto+" is missing from proto.sum")
		case recorded[proto] != digest:
			problems = append(problems, proto+" changed since its code was generated")
		}
		generated := strings.TrimSuffix(proto, ".proto") + ".pb.go"
		if _, err := os.Stat(filepath.Join(dir, generated)); err != nil {
			problems = append(problems, proto+" has no generated "+generated)
		}
	}
	for proto := range recorded {
		if !slices.Contains(protos, proto) {
			problems = append(problems, "proto.sum lists "+proto+", which is gone")
		}
	}
	return problems
}

func sha256File(path string) (string, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	digest := sha256.Sum256(content)
	return hex.EncodeToString(digest[:]), nil
}
