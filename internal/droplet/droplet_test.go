package droplet_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/droplet"
)

// entry is one file of an unpacked droplet.
type entry struct {
	header *tar.Header
	body   []byte
}

// unpack reads a droplet's gzip header and tar entries.
func unpack(b []byte) (*gzip.Header, []entry) {
	GinkgoHelper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	Expect(err).NotTo(HaveOccurred())
	header := gz.Header
	tr := tar.NewReader(gz)
	var entries []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(tr)
		Expect(err).NotTo(HaveOccurred())
		entries = append(entries, entry{header: h, body: body})
	}
	Expect(gz.Close()).To(Succeed())
	return &header, entries
}

// freePort is a loopback port nothing listens on right now.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	port := l.Addr().(*net.TCPAddr).Port
	Expect(l.Close()).To(Succeed())
	return port
}

// runHello starts dir/hello with PORT set (and env), waits until it
// answers, and returns its GET / answer. The process is stopped with
// SIGTERM afterwards and must exit 0, as the rep expects.
func runHello(dir string, env ...string) map[string]any {
	GinkgoHelper()
	port := freePort()
	cmd := exec.Command(filepath.Join(dir, "hello"))
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "PORT=" + strconv.Itoa(port)}, env...)
	cmd.Stdout = GinkgoWriter
	cmd.Stderr = GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		Eventually(exited, 10*time.Second).Should(Receive(BeNil()), "hello exits 0 on SIGTERM")
	}()

	var answer map[string]any
	Eventually(func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /: %s", resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(&answer)
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	return answer
}

var _ = Describe("Pack", func() {
	binary := []byte("#!/bin/sh\necho not really hello\n")

	It("gives the same bytes for the same binary", func() {
		first, err := droplet.Pack(binary)
		Expect(err).NotTo(HaveOccurred())
		second, err := droplet.Pack(bytes.Clone(binary))
		Expect(err).NotTo(HaveOccurred())
		Expect(second).To(Equal(first))
		Expect(droplet.SHA256(second)).To(Equal(droplet.SHA256(first)))

		other, err := droplet.Pack(append(bytes.Clone(binary), '\n'))
		Expect(err).NotTo(HaveOccurred())
		Expect(droplet.SHA256(other)).NotTo(Equal(droplet.SHA256(first)))
	})

	It("holds one executable entry, hello, with nothing of the packing machine", func() {
		b, err := droplet.Pack(binary)
		Expect(err).NotTo(HaveOccurred())
		gzHeader, entries := unpack(b)
		Expect(gzHeader.Name).To(BeEmpty())
		Expect(gzHeader.ModTime.IsZero()).To(BeTrue(), "no gzip mtime, got %s", gzHeader.ModTime)
		Expect(entries).To(HaveLen(1))
		h := entries[0].header
		Expect(h.Name).To(Equal("hello"))
		Expect(h.Typeflag).To(Equal(byte(tar.TypeReg)))
		Expect(h.Mode).To(Equal(int64(0o755)))
		Expect(h.Uid).To(Equal(0))
		Expect(h.Gid).To(Equal(0))
		Expect(h.Uname).To(BeEmpty())
		Expect(h.Gname).To(BeEmpty())
		Expect(h.ModTime.UTC()).To(Equal(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)))
		Expect(h.PAXRecords).To(BeEmpty())
		Expect(entries[0].body).To(Equal(binary))
	})
})

var _ = Describe("SHA256", func() {
	It("is lowercase hex, as an asset's sha256 wants it", func() {
		Expect(droplet.SHA256([]byte("abc"))).To(Equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
	})
})

var _ = Describe("Build", func() {
	It("builds the same droplet again from the same source and version", func() {
		again, err := droplet.Build(context.Background(), moduleRoot, "v2")
		Expect(err).NotTo(HaveOccurred())
		Expect(droplet.SHA256(again)).To(Equal(droplet.SHA256(v2)))
		Expect(again).To(Equal(v2))
	})

	It("unpacks to an executable hello that answers its built-in version", func() {
		_, entries := unpack(v2)
		Expect(entries).To(HaveLen(1))
		Expect(entries[0].header.Name).To(Equal("hello"))

		// Unpack as the rep would, keeping the mode.
		dir := GinkgoT().TempDir()
		path := filepath.Join(dir, "hello")
		Expect(os.WriteFile(path, entries[0].body, os.FileMode(entries[0].header.Mode))).To(Succeed())
		info, err := os.Stat(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o755)))

		answer := runHello(dir, "PROCESS_GUID=hello", "INSTANCE_INDEX=3")
		Expect(answer).To(HaveKeyWithValue("version", "v2"))
		Expect(answer).To(HaveKeyWithValue("process_guid", "hello"))
		Expect(answer).To(HaveKeyWithValue("index", float64(3)))

		// VERSION still wins, as the specs that run a binary on the cell
		// rely on.
		Expect(runHello(dir, "VERSION=v9")).To(HaveKeyWithValue("version", "v9"))
	})

	It("builds another version into other bytes", func() {
		v3, err := droplet.Build(context.Background(), moduleRoot, "v3")
		Expect(err).NotTo(HaveOccurred())
		Expect(droplet.SHA256(v3)).NotTo(Equal(droplet.SHA256(v2)))
	})

	It("refuses a version -ldflags would split", func() {
		_, err := droplet.Build(context.Background(), moduleRoot, "v 2")
		Expect(err).To(MatchError(ContainSubstring("without spaces or quotes")))
		_, err = droplet.Build(context.Background(), moduleRoot, "")
		Expect(err).To(HaveOccurred())
	})

	It("says what go build said when the build fails", func() {
		_, err := droplet.Build(context.Background(), GinkgoT().TempDir(), "v1")
		Expect(err).To(MatchError(ContainSubstring("go build of ./fixtures/apps/hello at v1")))
	})
})
