package executor

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// badArchiveError is a failure to read the archive itself, as opposed to
// a failure to write what it holds.
type badArchiveError struct{ err error }

func (e *badArchiveError) Error() string { return e.err.Error() }
func (e *badArchiveError) Unwrap() error { return e.err }

// unpackArchive unpacks the archive at file, of the given kind ("tgz" or
// "zip"), into dest, an existing directory. Every entry must stay inside
// dest:
// no absolute names, no "..", no symlink that leads outside, and nothing
// written through one. Files keep their permission bits (executables stay
// executable); set-id bits are dropped, directories are always writable
// by the rep. label names the archive type in errors (".tgz"): "not a
// valid .tgz archive: gzip: invalid header".
func unpackArchive(ctx context.Context, file, kind, label, dest string) error {
	root, err := filepath.EvalSymlinks(dest)
	if err != nil {
		return err
	}
	u := &unpacker{ctx: ctx, root: root}
	if kind == "zip" {
		err = u.unzip(file)
	} else {
		err = u.untgz(file)
	}
	var bad *badArchiveError
	if errors.As(err, &bad) {
		return fmt.Errorf("not a valid %s archive: %w", label, bad.err)
	}
	return err
}

type unpacker struct {
	ctx  context.Context
	root string // dest, with symlinks resolved
}

func (u *unpacker) untgz(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return &badArchiveError{err}
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &badArchiveError{err}
		}
		if err := u.ctx.Err(); err != nil {
			return interruption(u.ctx, "unpacking", "")
		}
		perm := hdr.FileInfo().Mode().Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = u.dir(hdr.Name, perm)
		case tar.TypeReg:
			err = u.file(hdr.Name, perm, tr)
		case tar.TypeSymlink:
			err = u.symlink(hdr.Name, hdr.Linkname)
		case tar.TypeLink:
			err = u.hardlink(hdr.Name, hdr.Linkname)
		default:
			// Devices, fifos and the like have no place in a droplet.
			continue
		}
		if err != nil {
			return err
		}
	}
}

func (u *unpacker) unzip(file string) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return &badArchiveError{err}
	}
	defer zr.Close()
	for _, entry := range zr.File {
		if err := u.ctx.Err(); err != nil {
			return interruption(u.ctx, "unpacking", "")
		}
		mode := entry.Mode()
		switch {
		case mode.IsDir():
			err = u.dir(entry.Name, mode.Perm())
		case mode&fs.ModeSymlink != 0:
			err = u.zipSymlink(entry)
		case mode.IsRegular():
			err = u.zipFile(entry)
		default:
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (u *unpacker) zipFile(entry *zip.File) error {
	r, err := entry.Open()
	if err != nil {
		return &badArchiveError{err}
	}
	defer r.Close()
	return u.file(entry.Name, entry.Mode().Perm(), r)
}

func (u *unpacker) zipSymlink(entry *zip.File) error {
	r, err := entry.Open()
	if err != nil {
		return &badArchiveError{err}
	}
	defer r.Close()
	target, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return &badArchiveError{err}
	}
	return u.symlink(entry.Name, string(target))
}

// entryName checks an entry's name and returns it clean, slash-separated
// and relative to the root ("." for the root itself).
func entryName(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("archive entry %q has an absolute name", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("archive entry %q climbs out of its destination", name)
		}
	}
	return path.Clean(name), nil
}

// parentOf makes the directory an entry goes into and returns its real
// path, refusing to go through a symlink that leads outside the root.
func (u *unpacker) parentOf(name string) (string, error) {
	return u.ensureDir(path.Dir(name), name)
}

// ensureDir makes rel (clean, relative) under the root one directory at a
// time. A symlink on the way is followed only when it leads to a
// directory inside the root, so nothing is ever made or written outside.
// It returns the real path.
func (u *unpacker) ensureDir(rel, entry string) (string, error) {
	current := u.root
	if rel == "." {
		return current, nil
	}
	for _, part := range strings.Split(rel, "/") {
		next := filepath.Join(current, part)
		info, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(next, 0o755); err != nil {
				return "", fmt.Errorf("unpacking %q: %w", entry, err)
			}
		case err != nil:
			return "", fmt.Errorf("unpacking %q: %w", entry, err)
		case info.Mode()&fs.ModeSymlink != 0:
			real, err := filepath.EvalSymlinks(next)
			if err != nil || !within(u.root, real) {
				return "", fmt.Errorf("archive entry %q goes through a symlink that leads outside its destination", entry)
			}
			if info, err := os.Stat(real); err != nil || !info.IsDir() {
				return "", fmt.Errorf("unpacking %q: %s is not a directory", entry, next)
			}
			next = real
		case !info.IsDir():
			return "", fmt.Errorf("unpacking %q: %s is not a directory", entry, next)
		}
		current = next
	}
	return current, nil
}

func (u *unpacker) dir(name string, perm fs.FileMode) error {
	clean, err := entryName(name)
	if err != nil {
		return err
	}
	dir, err := u.ensureDir(clean, name)
	if err != nil {
		return err
	}
	if clean == "." {
		// The destination keeps its own mode.
		return nil
	}
	return os.Chmod(dir, perm|0o700)
}

func (u *unpacker) file(name string, perm fs.FileMode, r io.Reader) error {
	target, err := u.replaceable(name)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("unpacking %q: %w", name, err)
	}
	if _, err := io.Copy(f, &archiveReader{r}); err != nil {
		f.Close()
		var bad *badArchiveError
		if errors.As(err, &bad) {
			return err
		}
		return fmt.Errorf("unpacking %q: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("unpacking %q: %w", name, err)
	}
	// Explicitly, since the rep's umask applied to the create.
	return os.Chmod(target, perm)
}

func (u *unpacker) symlink(name, linkTarget string) error {
	clean, err := entryName(name)
	if err != nil {
		return err
	}
	if linkTarget == "" || filepath.IsAbs(linkTarget) {
		return fmt.Errorf("archive entry %q is a symlink to %q, outside its destination", name, linkTarget)
	}
	if resolved := path.Join(path.Dir(clean), linkTarget); resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("archive entry %q is a symlink to %q, outside its destination", name, linkTarget)
	}
	target, err := u.replaceable(name)
	if err != nil {
		return err
	}
	if err := os.Symlink(linkTarget, target); err != nil {
		return fmt.Errorf("unpacking %q: %w", name, err)
	}
	// Through other symlinks a target that looks inside may not be.
	if real, err := filepath.EvalSymlinks(target); err == nil && !within(u.root, real) {
		os.Remove(target)
		return fmt.Errorf("archive entry %q is a symlink to %q, outside its destination", name, linkTarget)
	}
	return nil
}

func (u *unpacker) hardlink(name, linkName string) error {
	cleanSource, err := entryName(linkName)
	if err != nil {
		return fmt.Errorf("archive entry %q links to %q, outside its destination", name, linkName)
	}
	source, err := filepath.EvalSymlinks(filepath.Join(u.root, filepath.FromSlash(cleanSource)))
	if err != nil || !within(u.root, source) {
		return fmt.Errorf("archive entry %q links to %q, which is not in the archive before it", name, linkName)
	}
	target, err := u.replaceable(name)
	if err != nil {
		return err
	}
	if err := os.Link(source, target); err != nil {
		return fmt.Errorf("unpacking %q: %w", name, err)
	}
	return nil
}

// replaceable returns where a file, symlink or hard link entry goes,
// removing what an earlier entry of the same name left there (never
// writing through it: it may be a symlink).
func (u *unpacker) replaceable(name string) (string, error) {
	clean, err := entryName(name)
	if err != nil {
		return "", err
	}
	if clean == "." {
		return "", fmt.Errorf("archive entry %q is not a directory but names its destination", name)
	}
	parent, err := u.parentOf(clean)
	if err != nil {
		return "", err
	}
	target := filepath.Join(parent, path.Base(clean))
	info, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", fmt.Errorf("unpacking %q: %w", name, err)
	case info.IsDir():
		return "", fmt.Errorf("unpacking %q: a directory of that name is already there", name)
	default:
		if err := os.Remove(target); err != nil {
			return "", fmt.Errorf("unpacking %q: %w", name, err)
		}
	}
	return target, nil
}

// archiveReader marks read errors as the archive's.
type archiveReader struct{ r io.Reader }

func (a *archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		err = &badArchiveError{err}
	}
	return n, err
}

// within reports whether path is root or inside it; both are clean and
// absolute.
func within(root, path string) bool {
	if path == root {
		return true
	}
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
