package executor_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// helloBinary is the built hello app.
func helloBinary() []byte {
	GinkgoHelper()
	body, err := os.ReadFile(filepath.Join(appsDir, "hello"))
	Expect(err).NotTo(HaveOccurred())
	return body
}

// archiveEntry is one entry of an archive built by a spec: a directory
// (name ending "/"), a symlink (link set), a hard link (hardLink set) or
// a file.
type archiveEntry struct {
	name     string
	mode     fs.FileMode
	body     []byte
	link     string
	hardLink string
}

func tgzOf(entries ...archiveEntry) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, e.link, 0
		case e.hardLink != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, e.hardLink, 0
		case len(e.name) > 0 && e.name[len(e.name)-1] == '/':
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		Expect(tw.WriteHeader(hdr)).To(Succeed())
		if hdr.Size > 0 {
			_, err := tw.Write(e.body)
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Expect(tw.Close()).To(Succeed())
	Expect(gz.Close()).To(Succeed())
	return buf.Bytes()
}

func zipOf(entries ...archiveEntry) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		body := e.body
		switch {
		case e.link != "":
			hdr.SetMode(fs.ModeSymlink | 0o777)
			body = []byte(e.link)
		case len(e.name) > 0 && e.name[len(e.name)-1] == '/':
			hdr.SetMode(fs.ModeDir | e.mode.Perm())
		default:
			hdr.SetMode(e.mode.Perm())
		}
		w, err := zw.CreateHeader(hdr)
		Expect(err).NotTo(HaveOccurred())
		_, err = w.Write(body)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(zw.Close()).To(Succeed())
	return buf.Bytes()
}
