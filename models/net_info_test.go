package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Comparing net info", func() {
	netInfo := func() *models.NetInfo {
		return &models.NetInfo{Address: "10.0.0.1", InstanceAddress: "10.255.0.7", Ports: []*models.PortMapping{
			{ContainerPort: 8080, HostPort: 61000}, {ContainerPort: 2222, HostPort: 61001},
		}}
	}

	It("finds a copy the same, and unset not the same as empty", func() {
		Expect(models.SameNetInfo(netInfo(), netInfo())).To(BeTrue())
		Expect(models.SameNetInfo(nil, nil)).To(BeTrue())
		Expect(models.SameNetInfo(nil, &models.NetInfo{})).To(BeFalse())
		Expect(models.SameNetInfo(&models.NetInfo{}, nil)).To(BeFalse())
		Expect(models.SameNetInfo(&models.NetInfo{}, &models.NetInfo{})).To(BeTrue())
	})

	// change changes fd of m, whatever its value.
	change := func(m protoreflect.Message, fd protoreflect.FieldDescriptor) {
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			list.Append(list.NewElement())
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(m.Get(fd).String()+"x"))
		case fd.Kind() == protoreflect.Uint32Kind:
			m.Set(fd, protoreflect.ValueOfUint32(uint32(m.Get(fd).Uint())+1))
		default:
			Fail(string(fd.FullName()) + " is of a kind this spec cannot change yet: teach it, and SameNetInfo")
		}
	}
	unknown := protoreflect.RawFields(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))

	It("finds a difference in every field NetInfo and PortMapping declare, and in unknown fields, as proto.Equal does", func() {
		differs := func(what string, edit func(*models.NetInfo)) {
			changed := netInfo()
			edit(changed)
			Expect(proto.Equal(netInfo(), changed)).To(BeFalse(), what)
			Expect(models.SameNetInfo(netInfo(), changed)).To(BeFalse(), what)
			Expect(models.SameNetInfo(changed, netInfo())).To(BeFalse(), what)
		}
		fields := (&models.NetInfo{}).ProtoReflect().Descriptor().Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			differs(string(fd.Name()), func(n *models.NetInfo) { change(n.ProtoReflect(), fd) })
		}
		ports := (&models.PortMapping{}).ProtoReflect().Descriptor().Fields()
		for i := range ports.Len() {
			fd := ports.Get(i)
			for p := range 2 {
				differs(string(fd.Name()), func(n *models.NetInfo) { change(n.Ports[p].ProtoReflect(), fd) })
			}
		}
		differs("unknown fields", func(n *models.NetInfo) { n.ProtoReflect().SetUnknown(unknown) })
		differs("a port's unknown fields", func(n *models.NetInfo) { n.Ports[1].ProtoReflect().SetUnknown(unknown) })
		differs("the ports' order", func(n *models.NetInfo) { n.Ports[0], n.Ports[1] = n.Ports[1], n.Ports[0] })
	})
})
