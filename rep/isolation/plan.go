package isolation

import (
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MountKind says what one step of building an instance's root does.
type MountKind string

const (
	// BindReadOnly shows Source at Target, read-only, nosuid, nodev.
	BindReadOnly MountKind = "bind-ro"
	// BindWritable shows Source at Target, writable, nosuid, nodev.
	BindWritable MountKind = "bind-rw"
	// MaskDir hides the directory at Target under an empty tmpfs that
	// only root may write.
	MaskDir MountKind = "mask-dir"
	// MaskFile hides the file at Target under /dev/null.
	MaskFile MountKind = "mask-file"
	// Symlink makes Target a symbolic link to Source.
	Symlink MountKind = "symlink"
	// Tmpfs mounts a fresh tmpfs at Target with options Source.
	Tmpfs MountKind = "tmpfs"
	// Proc mounts the namespace's own /proc at Target.
	Proc MountKind = "proc"
	// Device shows the device file Source at Target.
	Device MountKind = "device"
)

// Mount is one step of building an instance's root. Target is the path
// as the instance sees it, under the new root.
type Mount struct {
	Kind   MountKind `json:"kind"`
	Source string    `json:"source,omitempty"`
	Target string    `json:"target"`
}

// PlanInput is what an instance's root is made of. Paths are absolute and
// clean.
type PlanInput struct {
	// System are the host's system directories to show read-only (/usr,
	// /etc, ...), with SystemLinks the ones that are symbolic links
	// (/bin -> usr/bin), recreated as links.
	System      []string
	SystemLinks map[string]string
	// AppsDir is shown read-only, at its own path.
	AppsDir string
	// InstanceDir is the instance's directory, shown writable at its own
	// path.
	InstanceDir string
	// HideDirs and HideFiles are the rep's own paths (data dir, config,
	// certificate, key, CA, logs): whichever falls inside something shown
	// is masked.
	HideDirs  []string
	HideFiles []string
	// Real is the path with every symbolic link resolved, of any of the
	// paths above that has one other than itself: a path to hide can
	// show inside a shown directory through a link in either (an apps
	// dir that is a link to the directory holding the rep's key), where
	// its own path's text is not under the shown one's.
	Real map[string]string
	// Devices are the device files to show (/dev/null, ...).
	Devices []string
	// TmpfsBytes bounds each of the instance's own /tmp and /dev/shm:
	// what is written there is memory no process's resident set shows,
	// so the memory limit, which counts those, would not see it; 0 is no
	// bound (a tmpfs's own default, half the host's memory).
	TmpfsBytes int64
}

// Plan lists the steps that build an instance's root, in order: /proc,
// /dev and /tmp first (an apps dir or data dir under /tmp then shows on
// the private /tmp), then what is shown (system dirs, apps dir), then
// masks over the rep's paths inside them, then the instance's directory,
// each step after those of the directories that hold it, so that no step
// is hidden by a later one.
func Plan(in PlanInput) []Mount {
	steps := []Mount{
		{Kind: Proc, Target: "/proc"},
		{Kind: Tmpfs, Source: "mode=0755,size=64k", Target: "/dev"},
	}
	for _, dev := range in.Devices {
		steps = append(steps, Mount{Kind: Device, Source: dev, Target: dev})
	}
	steps = append(steps,
		Mount{Kind: Symlink, Source: "/proc/self/fd", Target: "/dev/fd"},
		Mount{Kind: Symlink, Source: "/proc/self/fd/0", Target: "/dev/stdin"},
		Mount{Kind: Symlink, Source: "/proc/self/fd/1", Target: "/dev/stdout"},
		Mount{Kind: Symlink, Source: "/proc/self/fd/2", Target: "/dev/stderr"},
		Mount{Kind: Tmpfs, Source: writableTmpfs(in.TmpfsBytes), Target: "/dev/shm"},
		Mount{Kind: Tmpfs, Source: writableTmpfs(in.TmpfsBytes), Target: "/tmp"},
	)

	var shown []Mount
	for _, dir := range in.System {
		if target, ok := in.SystemLinks[dir]; ok {
			shown = append(shown, Mount{Kind: Symlink, Source: target, Target: dir})
			continue
		}
		shown = append(shown, Mount{Kind: BindReadOnly, Source: dir, Target: dir})
	}
	if in.AppsDir != "" && !coveredByDir(in.AppsDir, in.System, in.SystemLinks) {
		shown = append(shown, Mount{Kind: BindReadOnly, Source: in.AppsDir, Target: in.AppsDir})
	}
	real := func(path string) string {
		if r, ok := in.Real[path]; ok {
			return r
		}
		return path
	}
	// Where a path to hide shows in the root: at its own path under a
	// shown directory, and under each shown directory whose real path
	// holds its real path.
	showsAt := func(path string) []string {
		var at []string
		add := func(target string) {
			if !slices.Contains(at, target) {
				at = append(at, target)
			}
		}
		for _, m := range shown {
			if m.Kind != BindReadOnly {
				continue
			}
			if within(path, m.Target) {
				add(path)
			}
			if source, p := real(m.Source), real(path); within(p, source) {
				add(filepath.Join(m.Target, strings.TrimPrefix(p, source)))
			}
		}
		return at
	}
	var masks []Mount
	for _, dir := range in.HideDirs {
		for _, target := range showsAt(dir) {
			masks = append(masks, Mount{Kind: MaskDir, Target: target})
		}
	}
	for _, file := range in.HideFiles {
		for _, target := range showsAt(file) {
			masks = append(masks, Mount{Kind: MaskFile, Target: target})
		}
	}

	layered := append(shown, masks...)
	layered = append(layered, Mount{Kind: BindWritable, Source: in.InstanceDir, Target: in.InstanceDir})
	// Shallow before deep; at the same depth, what is shown before what
	// masks it, before the instance's directory (stable: input order).
	rank := map[MountKind]int{Symlink: 0, BindReadOnly: 0, MaskDir: 1, MaskFile: 1, BindWritable: 2}
	sort.SliceStable(layered, func(i, j int) bool {
		di, dj := depth(layered[i].Target), depth(layered[j].Target)
		if di != dj {
			return di < dj
		}
		return rank[layered[i].Kind] < rank[layered[j].Kind]
	})
	return append(steps, layered...)
}

// writableTmpfs is the options of a tmpfs everyone may write to, at most
// bytes large unless bytes is 0.
func writableTmpfs(bytes int64) string {
	if bytes <= 0 {
		return "mode=1777"
	}
	return "mode=1777,size=" + strconv.FormatInt(bytes, 10)
}

// coveredByDir reports whether path is inside one of dirs that is shown
// as a directory (not a link).
func coveredByDir(path string, dirs []string, links map[string]string) bool {
	for _, dir := range dirs {
		if _, link := links[dir]; !link && within(path, dir) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func depth(path string) int {
	return strings.Count(filepath.Clean(path), "/")
}
