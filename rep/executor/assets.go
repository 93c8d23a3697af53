package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Why a start's preparation (downloads, setup) ended early: the causes of
// its context.
var (
	errStartCanceled = &interruptedError{message: "the start was cancelled", cause: context.Canceled}
	errShuttingDown  = &interruptedError{message: "the executor is shutting down", cause: context.Canceled}
)

// startTimeoutError ends a preparation that the definition's start
// timeout, which covers downloads, setup and the first health check,
// cut short.
type startTimeoutError struct{ timeout time.Duration }

func (e startTimeoutError) Error() string {
	return fmt.Sprintf("the start timeout of %s passed", e.timeout)
}
func (e startTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// setupTimeoutError ends a setup that ran past setup_timeout_ms.
type setupTimeoutError struct{ timeout time.Duration }

func (e setupTimeoutError) Error() string {
	return fmt.Sprintf("the setup timeout of %s passed", e.timeout)
}
func (e setupTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// interruptedError says, for a person, what stopped and why, and wraps
// the cause (context.Canceled or context.DeadlineExceeded underneath)
// without repeating its text.
type interruptedError struct {
	message string
	cause   error
}

func (e *interruptedError) Error() string { return e.message }
func (e *interruptedError) Unwrap() error { return e.cause }

// interruption is the error of a step (what: "download", "setup") that
// stopped because ctx ended: "download did not finish within the start
// timeout of 30s (1.2 MB of 6.1 MB)", "setup did not finish within 10s",
// "download stopped (1.2 MB so far): the start was cancelled". detail, if
// any, follows what.
func interruption(ctx context.Context, what, detail string) error {
	cause := context.Cause(ctx)
	var startTimeout startTimeoutError
	var setupTimeout setupTimeoutError
	var message string
	switch {
	case errors.As(cause, &startTimeout):
		message = fmt.Sprintf("%s did not finish within the start timeout of %s%s", what, startTimeout.timeout, detail)
	case errors.As(cause, &setupTimeout):
		message = fmt.Sprintf("%s did not finish within %s%s", what, setupTimeout.timeout, detail)
	default:
		message = fmt.Sprintf("%s stopped%s: %v", what, detail, cause)
	}
	return &interruptedError{message: message, cause: cause}
}

// fetchAssets puts each of the definition's assets in place in the
// instance's directory, in order, and writes what it does into the
// instance's log. Its error names the asset: "asset http://...: HTTP 404
// Not Found".
func (e *Executor) fetchAssets(ctx context.Context, inst *instance, assets []*models.Asset) error {
	for _, asset := range assets {
		if err := e.fetchAsset(ctx, inst, asset); err != nil {
			return fmt.Errorf("%s%s: %w", models.CrashAsset, asset.GetUrl(), err)
		}
	}
	return nil
}

func (e *Executor) fetchAsset(ctx context.Context, inst *instance, asset *models.Asset) error {
	began := time.Now()
	note := func(line string) { inst.logLine("%s", line) }
	entry, source, err := e.assets.acquire(ctx, asset, note)
	if err != nil {
		return err
	}
	defer e.assets.release(entry)
	if err := placeAsset(ctx, entry.path, asset, inst.dir); err != nil {
		return err
	}
	var how string
	switch source {
	case fromCache:
		how = "from the cell's cache"
	case downloadedHere:
		how = "downloaded " + formatBytes(entry.size)
	default:
		how = "downloaded " + formatBytes(entry.size) + " once for this and other starts on the cell"
	}
	inst.logLine("asset %s ready in %s (%s)", asset.GetUrl(), formatDuration(time.Since(began)), how)
	return nil
}

// placeAsset puts the cached file of an asset at its destination inside
// dir: an archive unpacked into it (a directory), anything else copied to
// it (a file, executable).
func placeAsset(ctx context.Context, file string, asset *models.Asset, dir string) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	dest := path.Clean(asset.GetDestination())
	if strings.HasPrefix(dest, "/") || dest == ".." || strings.HasPrefix(dest, "../") {
		// The definition's validation refuses these already.
		return fmt.Errorf("destination %q is outside the instance's directory", asset.GetDestination())
	}
	// Earlier assets may have made symlinks: ensureDir follows only those
	// that stay inside the instance's directory.
	inside := &unpacker{ctx: ctx, root: root}
	if kind := asset.ArchiveKind(); kind != "" {
		destDir, err := inside.ensureDir(dest, asset.GetDestination())
		if err != nil {
			return err
		}
		return unpackArchive(ctx, file, kind, archiveLabel(asset), destDir)
	}
	target, err := inside.replaceable(dest)
	if err != nil {
		return err
	}
	return copyFile(file, target, 0o755)
}

// copyFile copies from to a new file to, with mode perm. A copy, not a
// link: the instance may change its files, the cache's must stay as they
// are.
func copyFile(from, to string, perm os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", to, err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("writing %s: %w", to, err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", to, err)
	}
	// Explicitly, since the rep's umask applied to the create.
	return os.Chmod(to, perm)
}

// archiveLabel names an asset's archive type the way its URL does:
// ".tgz", ".tar.gz" or ".zip".
func archiveLabel(asset *models.Asset) string {
	u, err := url.Parse(asset.GetUrl())
	if err != nil {
		return "." + asset.ArchiveKind()
	}
	name := strings.ToLower(u.Path)
	for _, suffix := range []string{".tar.gz", ".tgz", ".zip"} {
		if strings.HasSuffix(name, suffix) {
			return suffix
		}
	}
	return "." + asset.ArchiveKind()
}

// formatDuration rounds d for a person: "150µs", "2ms", "1.3s".
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}
