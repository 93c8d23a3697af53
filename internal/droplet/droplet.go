// Package droplet builds versioned droplets of the hello app
// (fixtures/apps/hello) and serves them, for tests and `make run`.
//
// A droplet here is what a definition's asset points at: a gzip'd tar
// holding one executable, "hello", built with its version baked in
// (-X main.version=v2), so the definition needs no VERSION in its env to
// tell versions apart. The rep downloads it, checks its SHA-256 and
// unpacks it into the instance's directory, where "./hello" then runs.
//
// Packing is deterministic — fixed mtime, uid and gid 0, no user or group
// names, no gzip name or time — and Go builds are reproducible with
// -trimpath and -buildvcs=false, so the same source and version give the
// same bytes and the same checksum on every build with one Go toolchain: a
// spec rendered once stays valid for droplets rebuilt later.
package droplet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// AppPackage is the hello app, relative to the module's root.
const AppPackage = "./fixtures/apps/hello"

// EntryName is the one file in a droplet; definitions run "./hello".
const EntryName = "hello"

// Versions are the droplets the fixtures/lrps templates name, built by
// `droplets build` as FileName(v) each.
var Versions = []string{"v1", "v2", "v3"}

// packTime is every entry's mtime: a fixed instant, so packing does not
// depend on when the binary was built. 2000-01-01 rather than the Unix epoch,
// because some unpackers warn about timestamps at 0.
var packTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// FileName is the droplet file of a version, e.g. "hello-v2.tgz". The
// .tgz suffix is what makes the rep unpack it.
func FileName(version string) string {
	return "hello-" + version + ".tgz"
}

// Build compiles the hello app of the module rooted at moduleDir with
// version built in and returns its droplet. It runs `go build` from PATH
// (or $GO when set, as the Makefile allows) with CGO_ENABLED=0, so the
// binary needs no C library on the cell.
func Build(ctx context.Context, moduleDir, version string) ([]byte, error) {
	binary, err := BuildBinary(ctx, moduleDir, version)
	if err != nil {
		return nil, err
	}
	return Pack(binary)
}

// BuildBinary compiles the hello app with version built in and returns
// the executable's bytes.
func BuildBinary(ctx context.Context, moduleDir, version string) ([]byte, error) {
	if version == "" || strings.ContainsAny(version, " \t\n'\"") {
		// The version travels inside -ldflags, which the go command
		// splits on spaces and quotes.
		return nil, fmt.Errorf("droplet: version must be non-empty without spaces or quotes, got %q", version)
	}
	tmp, err := os.MkdirTemp("", "droplet-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, EntryName)

	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build",
		"-trimpath", "-buildvcs=false",
		"-ldflags", "-X main.version="+version,
		"-o", out, AppPackage)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("droplet: go build of %s at %s: %w\n%s", AppPackage, version, err, output)
	}
	return os.ReadFile(out)
}

// Pack wraps an executable as a droplet: a gzip'd tar with the one entry
// "hello", mode 0755. The same binary always gives the same bytes.
func Pack(binary []byte) ([]byte, error) {
	var buf bytes.Buffer
	// A zero gzip.Header writes no name and no mtime; the level is fixed,
	// so the compressed bytes depend on the input alone. The default
	// level: best compression saves 0.3% of a droplet and costs a second
	// per build.
	gz, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	header := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     EntryName,
		Mode:     0o755,
		Size:     int64(len(binary)),
		ModTime:  packTime,
		Uid:      0,
		Gid:      0,
		// USTAR: plain fixed-size headers, no PAX records that could
		// carry access or change times.
		Format: tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(header); err != nil {
		return nil, fmt.Errorf("droplet: tar header: %w", err)
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, fmt.Errorf("droplet: tar: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("droplet: tar: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("droplet: gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// SHA256 is the hex SHA-256 of b, as an asset's sha256 field wants it.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// BuildAll builds hello at each version into outDir as FileName(version)
// and returns each file's SHA-256 by file name. The builds run one after
// another: they share the go build cache, and a parallel link of the same
// package gains little on a small machine.
func BuildAll(ctx context.Context, moduleDir, outDir string, versions []string) (map[string]string, error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	sums := make(map[string]string, len(versions))
	for _, v := range versions {
		b, err := Build(ctx, moduleDir, v)
		if err != nil {
			return nil, err
		}
		name := FileName(v)
		if err := writeFileAtomic(filepath.Join(outDir, name), b); err != nil {
			return nil, err
		}
		sums[name] = SHA256(b)
	}
	return sums, nil
}

// writeFileAtomic writes through a temporary file and a rename, so a
// server serving outDir never hands out half a droplet.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
