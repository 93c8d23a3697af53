package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corkboard/corkboard/internal/certs"
)

// The set itself is specified in internal/certs; these are the flags.

func TestWritesTheSetAndKeepsItOnASecondRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-out", dir, "-cells", "cell-z1, cell-z2", "-hosts", "board.internal"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, name := range []string{"ca", "board", "cell-z1", "cell-z2", "client", "operator"} {
		for _, ext := range []string{".crt", ".key"} {
			if _, err := os.Stat(filepath.Join(dir, name+ext)); err != nil {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
	}
	board, err := certs.ReadCertificate(filepath.Join(dir, "board.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := board.VerifyHostname("board.internal"); err != nil {
		t.Errorf("board.crt: %v", err)
	}
	if !strings.Contains(stdout.String(), "(new CA)") {
		t.Errorf("first run: %s", stdout.String())
	}

	stdout.Reset()
	if code := run([]string{"-out", dir, "-cells", "cell-z1,cell-z2", "-hosts", "board.internal"}, &stdout, &stderr); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stdout.String(), "wrote") {
		t.Errorf("a second run wrote something:\n%s", stdout.String())
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"-out"}, {"-out", t.TempDir(), "extra"}, {"-bogus"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-out", t.TempDir(), "-cells", "z1,cell-z1"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "cell-z1.crt") {
		t.Errorf("colliding cells: exit %d, %s", code, stderr.String())
	}
}
