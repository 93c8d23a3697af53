package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// cork completion is cobra's: each script asks the cork on PATH for its
// candidates ("cork __complete <words>") at every Tab, so the scripts
// themselves name no subcommand; these specs check the scripts and what
// they get back, and drive the bash one through bash itself.
var _ = Describe("cork completion", func() {
	// No board answers here: completion must not need one.
	const noBoard = "http://127.0.0.1:1"

	for _, shell := range []string{"bash", "zsh", "fish"} {
		It("prints a "+shell+" script that completes cork through cork __complete", func() {
			r := runCork(noBoard, "", "completion", shell)
			Expect(r.code).To(Equal(0), r.stderr)
			Expect(r.stdout).NotTo(BeEmpty())
			Expect(r.stdout).To(ContainSubstring("cork"))
			Expect(r.stdout).To(ContainSubstring("__complete"))
		})
	}

	It("completes subcommands, without a board and whatever the TLS settings", func() {
		r := runCork(noBoard, "", "__complete", "")
		Expect(r.code).To(Equal(0), r.stderr)
		for _, sub := range []string{"desire", "actual-lrps", "rollout", "cell", "logs", "completion"} {
			Expect(r.stdout).To(MatchRegexp(`(?m)^`+sub+`\t`), "a candidate %q", sub)
		}

		// A half TLS setting fails every command that talks to a board,
		// but not a Tab.
		cmd := exec.Command(corkPath, "__complete", "act")
		cmd.Env = append(os.Environ(), "BBS_URL=https://127.0.0.1:1", "BBS_CERT=/nonexistent.crt")
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(MatchRegexp(`(?m)^actual-lrps\t`))
	})

	It("completes a subcommand in bash from the bash script", func() {
		bash, err := exec.LookPath("bash")
		Expect(err).NotTo(HaveOccurred(), "bash is needed for this spec")
		script := filepath.Join(GinkgoT().TempDir(), "cork.bash")
		r := runCork(noBoard, "", "completion", "bash")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(os.WriteFile(script, []byte(r.stdout), 0o600)).To(Succeed())

		// What bash does at "cork desi<Tab>": set the COMP_ variables and
		// call the function the script registered for cork. The script
		// splits the line with _get_comp_words_by_ref of the bash-completion
		// package, which an interactive Debian shell loads; without the
		// package here, a stand-in gives the same words for this line.
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `
if ! declare -F _get_comp_words_by_ref >/dev/null; then
  _get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
fi
source "$1"
COMP_WORDS=(cork desi); COMP_CWORD=1; COMP_LINE="cork desi"; COMP_POINT=${#COMP_LINE}
__start_cork
printf '%s\n' "${COMPREPLY[@]}"`, "bash", script)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(corkPath)+string(os.PathListSeparator)+os.Getenv("PATH"), "BBS_URL="+noBoard)
		// stderr has bash's word that compopt works only while bash
		// itself completes; the candidates are on stdout.
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), stderr.String())
		Expect(strings.Fields(string(out))).To(Equal([]string{"desire"}), stderr.String())
	})
})
