package isolation_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("Plan", func() {
	// fresh are the steps every plan starts with.
	fresh := []isolation.Mount{
		{Kind: isolation.Proc, Target: "/proc"},
		{Kind: isolation.Tmpfs, Source: "mode=0755,size=64k", Target: "/dev"},
		{Kind: isolation.Device, Source: "/dev/null", Target: "/dev/null"},
		{Kind: isolation.Symlink, Source: "/proc/self/fd", Target: "/dev/fd"},
		{Kind: isolation.Symlink, Source: "/proc/self/fd/0", Target: "/dev/stdin"},
		{Kind: isolation.Symlink, Source: "/proc/self/fd/1", Target: "/dev/stdout"},
		{Kind: isolation.Symlink, Source: "/proc/self/fd/2", Target: "/dev/stderr"},
		{Kind: isolation.Tmpfs, Source: "mode=1777", Target: "/dev/shm"},
		{Kind: isolation.Tmpfs, Source: "mode=1777", Target: "/tmp"},
	}
	ro := func(p string) isolation.Mount {
		return isolation.Mount{Kind: isolation.BindReadOnly, Source: p, Target: p}
	}
	rw := func(p string) isolation.Mount {
		return isolation.Mount{Kind: isolation.BindWritable, Source: p, Target: p}
	}
	maskDir := func(p string) isolation.Mount { return isolation.Mount{Kind: isolation.MaskDir, Target: p} }
	maskFile := func(p string) isolation.Mount { return isolation.Mount{Kind: isolation.MaskFile, Target: p} }
	link := func(p, to string) isolation.Mount {
		return isolation.Mount{Kind: isolation.Symlink, Source: to, Target: p}
	}

	DescribeTable("the steps that build an instance's root",
		func(in isolation.PlanInput, want []isolation.Mount) {
			in.Devices = []string{"/dev/null"}
			start := fresh
			if in.TmpfsBytes > 0 {
				start = append([]isolation.Mount{}, fresh[:len(fresh)-2]...)
				size := fmt.Sprintf("mode=1777,size=%d", in.TmpfsBytes)
				start = append(start,
					isolation.Mount{Kind: isolation.Tmpfs, Source: size, Target: "/dev/shm"},
					isolation.Mount{Kind: isolation.Tmpfs, Source: size, Target: "/tmp"})
			}
			Expect(isolation.Plan(in)).To(Equal(append(append([]isolation.Mount{}, start...), want...)))
		},
		Entry("system dirs, links recreated, apps dir and instance dir; the data dir outside all of them needs no mask",
			isolation.PlanInput{
				System:      []string{"/bin", "/etc", "/usr"},
				SystemLinks: map[string]string{"/bin": "usr/bin"},
				AppsDir:     "/srv/apps",
				InstanceDir: "/var/lib/rep/instances/i-1",
				HideDirs:    []string{"/var/lib/rep"},
			},
			[]isolation.Mount{
				link("/bin", "usr/bin"), ro("/etc"), ro("/usr"),
				ro("/srv/apps"),
				rw("/var/lib/rep/instances/i-1"),
			}),
		Entry("the rep's config, certificate and key under /etc are masked",
			isolation.PlanInput{
				System:      []string{"/etc", "/usr"},
				AppsDir:     "/srv/apps",
				InstanceDir: "/var/lib/rep/instances/i-1",
				HideDirs:    []string{"/var/lib/rep", "/etc/corkboard/keys"},
				HideFiles:   []string{"/etc/corkboard/rep.json", "/home/op/ca.crt"},
			},
			[]isolation.Mount{
				ro("/etc"), ro("/usr"), ro("/srv/apps"),
				// Same depth: in input order, directories first.
				maskDir("/etc/corkboard/keys"),
				maskFile("/etc/corkboard/rep.json"),
				rw("/var/lib/rep/instances/i-1"),
			}),
		Entry("an apps dir holding the data dir: the data dir is masked before the instance dir is shown in it",
			isolation.PlanInput{
				System:      []string{"/usr"},
				AppsDir:     "/work/repo",
				InstanceDir: "/work/repo/.data/rep/instances/i-1",
				HideDirs:    []string{"/work/repo/.data/rep"},
				HideFiles:   []string{"/work/repo/rep.json"},
			},
			[]isolation.Mount{
				ro("/usr"), ro("/work/repo"),
				maskFile("/work/repo/rep.json"),
				maskDir("/work/repo/.data/rep"),
				rw("/work/repo/.data/rep/instances/i-1"),
			}),
		Entry("an apps dir inside a system dir is shown by it",
			isolation.PlanInput{
				System:      []string{"/usr"},
				AppsDir:     "/usr/local/apps",
				InstanceDir: "/var/lib/rep/instances/i-1",
				HideDirs:    []string{"/var/lib/rep"},
			},
			[]isolation.Mount{ro("/usr"), rw("/var/lib/rep/instances/i-1")}),
		Entry("an apps dir under a system dir that is a link is shown itself",
			isolation.PlanInput{
				System:      []string{"/bin"},
				SystemLinks: map[string]string{"/bin": "usr/bin"},
				AppsDir:     "/bin/apps",
				InstanceDir: "/d/instances/i",
				HideDirs:    []string{"/d"},
			},
			[]isolation.Mount{link("/bin", "usr/bin"), ro("/bin/apps"), rw("/d/instances/i")}),
		Entry("a path to hide that is the apps dir itself is masked after it is shown",
			isolation.PlanInput{
				AppsDir:     "/srv/apps",
				InstanceDir: "/d/instances/i",
				HideDirs:    []string{"/d", "/srv/apps"},
			},
			[]isolation.Mount{ro("/srv/apps"), maskDir("/srv/apps"), rw("/d/instances/i")}),
		Entry("an apps dir that is a link to the directory holding the rep's key and config: they are masked where they show through it",
			isolation.PlanInput{
				System:      []string{"/usr"},
				AppsDir:     "/x/appslink",
				InstanceDir: "/d/instances/i",
				HideDirs:    []string{"/d"},
				HideFiles:   []string{"/x/apps/cfg/cell.key", "/x/apps/cfg/rep.json"},
				Real:        map[string]string{"/x/appslink": "/x/apps"},
			},
			[]isolation.Mount{
				ro("/usr"), ro("/x/appslink"),
				rw("/d/instances/i"),
				maskFile("/x/appslink/cfg/cell.key"), maskFile("/x/appslink/cfg/rep.json"),
			}),
		Entry("a file to hide named through a link to a shown directory, and one named by a link to a file in one, are masked at their real paths too",
			isolation.PlanInput{
				System:      []string{"/etc"},
				AppsDir:     "/srv/apps",
				InstanceDir: "/d/instances/i",
				HideDirs:    []string{"/d"},
				HideFiles:   []string{"/etc/corkboard/rep.json", "/home/op/cell.key"},
				Real: map[string]string{
					"/etc/corkboard/rep.json": "/srv/apps/cfg/rep.json",
					"/home/op/cell.key":       "/etc/ssl/private/cell.key",
				},
			},
			[]isolation.Mount{
				ro("/etc"), ro("/srv/apps"),
				maskFile("/etc/corkboard/rep.json"),
				rw("/d/instances/i"),
				maskFile("/srv/apps/cfg/rep.json"),
				maskFile("/etc/ssl/private/cell.key"),
			}),
		Entry("an instance's /tmp and /dev/shm hold at most its memory",
			isolation.PlanInput{
				InstanceDir: "/d/instances/i",
				HideDirs:    []string{"/d"},
				TmpfsBytes:  64 << 20,
			},
			[]isolation.Mount{rw("/d/instances/i")}),
		Entry("a file to hide that is not shown anywhere needs nothing",
			isolation.PlanInput{
				System:      []string{"/usr"},
				InstanceDir: "/d/instances/i",
				HideDirs:    []string{"/d"},
				HideFiles:   []string{"/root/cell.key", "/usrx/cell.key"},
			},
			[]isolation.Mount{ro("/usr"), rw("/d/instances/i")}),
	)
})
