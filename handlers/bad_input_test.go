package handlers_test

import (
	"math"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Bad input", func() {
	for _, dialect := range testdb.MustDialects() {
		Describe(dialect, func() {
			var (
				guid   string
				domain string
			)

			BeforeEach(func() {
				guid = randomName("lrp")
				domain = randomName("domain")
			})

			for _, wire := range wires {
				Describe("in "+wire.name+" bodies", func() {
					var b *board

					BeforeEach(func() {
						b = newBoard(stores[dialect], wire)
					})

					DescribeTable("a desire is InvalidRequest naming the field, and nothing is desired",
						func(field string, spoil func(*models.DesiredLRP)) {
							lrp := newLRP(guid, domain, 2)
							spoil(lrp)

							resp := b.desire(lrp)
							Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
							Expect(resp.GetError().GetMessage()).To(namesField(field))
							Expect(resp.GetDesiredLrp()).To(BeNil())
							b.expectNothingDesired(guid, domain)
							Expect(b.counter(models.RouteDesireDesiredLRP, "InvalidRequest")).To(BeEquivalentTo(1))
						},
						Entry("an empty LRP", "desired_lrp.process_guid", func(l *models.DesiredLRP) { *l = models.DesiredLRP{} }),
						Entry("a bad guid", "desired_lrp.process_guid", func(l *models.DesiredLRP) { l.ProcessGuid = "not a guid!" }),
						Entry("a guid over 128 characters", "desired_lrp.process_guid", func(l *models.DesiredLRP) { l.ProcessGuid = strings.Repeat("g", 129) }),
						Entry("a missing domain", "desired_lrp.domain", func(l *models.DesiredLRP) { l.Domain = "" }),
						Entry("negative instances", "desired_lrp.instances", func(l *models.DesiredLRP) { l.Instances = -1 }),
						Entry("an annotation over 10 KiB", "desired_lrp.annotation", func(l *models.DesiredLRP) { l.Annotation = strings.Repeat("a", 10*1024+1) }),
						Entry("NUL in the annotation, which Postgres cannot keep", "desired_lrp.annotation", func(l *models.DesiredLRP) { l.Annotation = "a\x00b" }),
						Entry("routes over 128 KiB", "desired_lrp.routes", func(l *models.DesiredLRP) { l.Routes = bigRoutes() }),
						Entry("routes nesting 33 levels", "desired_lrp.routes", func(l *models.DesiredLRP) { l.Routes = deepRoutes(33) }),
						Entry("routes nesting 4,000 levels, which a list would fail to read back", "desired_lrp.routes", func(l *models.DesiredLRP) { l.Routes = deepRoutes(4000) }),
						Entry("no definition", "desired_lrp.definition", func(l *models.DesiredLRP) { l.Definition = nil }),
						Entry("a definition without an action path", "desired_lrp.definition.action.path", func(l *models.DesiredLRP) { l.Definition.Action.Path = "" }),
						Entry("port 0", "desired_lrp.definition.ports", func(l *models.DesiredLRP) { l.Definition.Ports = []uint32{0} }),
						Entry("port 65536", "desired_lrp.definition.ports", func(l *models.DesiredLRP) { l.Definition.Ports = []uint32{8080, 65536} }),
						Entry("nine ports", "desired_lrp.definition.ports", func(l *models.DesiredLRP) { l.Definition.Ports = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9} }),
						Entry("negative memory", "desired_lrp.definition.memory_mb", func(l *models.DesiredLRP) { l.Definition.MemoryMb = -1 }),
						Entry("negative disk", "desired_lrp.definition.disk_mb", func(l *models.DesiredLRP) { l.Definition.DiskMb = -1 }),
						Entry("a min_ready of the largest int64", "desired_lrp.update_strategy.min_ready_ms", func(l *models.DesiredLRP) {
							l.UpdateStrategy = &models.UpdateStrategy{MinReadyMs: math.MaxInt64}
						}),
						Entry("a progress deadline over a day", "desired_lrp.update_strategy.progress_deadline_ms", func(l *models.DesiredLRP) {
							l.UpdateStrategy = &models.UpdateStrategy{ProgressDeadlineMs: models.MaxProgressDeadlineMs + 1}
						}),
						Entry("a start timeout of the largest int64", "desired_lrp.definition.start_timeout_ms", func(l *models.DesiredLRP) { l.Definition.StartTimeoutMs = math.MaxInt64 }),
						Entry("NUL in the action path", "desired_lrp.definition.action.path", func(l *models.DesiredLRP) { l.Definition.Action.Path = "/bin/app\x00" }),
						Entry("NUL in an argument", "desired_lrp.definition.action.args[0]", func(l *models.DesiredLRP) { l.Definition.Action.Args = []string{"a\x00b"} }),
						Entry("NUL in an env name", "desired_lrp.definition.action.env[0].name", func(l *models.DesiredLRP) {
							l.Definition.Action.Env = []*models.EnvironmentVariable{{Name: "A\x00B", Value: "x"}}
						}),
						Entry("NUL in an env value", "desired_lrp.definition.action.env[0].value", func(l *models.DesiredLRP) {
							l.Definition.Action.Env = []*models.EnvironmentVariable{{Name: "A", Value: "x\x00"}}
						}),
						Entry("an escape in the directory", "desired_lrp.definition.action.dir", func(l *models.DesiredLRP) { l.Definition.Action.Dir = "/srv\x1b[2J" }),
						Entry("an asset URL with credentials", "desired_lrp.definition.assets[0].url", func(l *models.DesiredLRP) {
							l.Definition.Assets = []*models.Asset{{Url: "http://user:secret@blobs.example/app", Sha256: strings.Repeat("ab", 32), Destination: "app"}}
						}),
						Entry("an asset URL naming the metadata address", "desired_lrp.definition.assets[0].url", func(l *models.DesiredLRP) {
							l.Definition.Assets = []*models.Asset{{Url: "http://169.254.169.254/latest/meta-data/iam/", Sha256: strings.Repeat("ab", 32), Destination: "creds"}}
						}),
						Entry("an asset URL naming GCP's metadata service", "desired_lrp.definition.assets[0].url", func(l *models.DesiredLRP) {
							l.Definition.Assets = []*models.Asset{{Url: "http://metadata.google.internal/computeMetadata/v1/", Sha256: strings.Repeat("ab", 32), Destination: "creds"}}
						}),
					)

					It("an asset URL naming a link-local host is taken when the board allows them", func() {
						allowing := newBoardWith(stores[dialect], wire, handlers.WithLinkLocalAssetHosts(true))
						lrp := newLRP(guid, domain, 1)
						lrp.Definition.Assets = []*models.Asset{{Url: "http://169.254.169.254/blob", Sha256: strings.Repeat("ab", 32), Destination: "blob"}}
						Expect(allowing.desire(lrp).GetError()).To(BeNil())
					})

					It("a desire without an LRP is InvalidRequest naming desired_lrp", func() {
						resp := &models.DesireLRPResponse{}
						b.call(models.RouteDesireDesiredLRP, &models.DesireLRPRequest{}, resp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
						Expect(resp.GetError().GetMessage()).To(namesField("desired_lrp"))
					})

					Describe("an update", func() {
						var before snapshot

						BeforeEach(func() {
							b.mustDesire(newLRP(guid, domain, 2))
							before = b.snapshot(guid)
						})

						DescribeTable("is InvalidRequest naming the field, and changes nothing",
							func(field string, update *models.DesiredLRPUpdate) {
								resp := b.update(guid, update)
								Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
								Expect(resp.GetError().GetMessage()).To(namesField(field))
								b.expectUnchanged(guid, before)
							},
							Entry("negative instances", "update.instances", &models.DesiredLRPUpdate{Instances: proto.Int32(-2)}),
							Entry("an annotation over 10 KiB", "update.annotation", &models.DesiredLRPUpdate{Annotation: proto.String(strings.Repeat("a", 10*1024+1))}),
							Entry("NUL in the annotation", "update.annotation", &models.DesiredLRPUpdate{Annotation: proto.String("x\x00y")}),
							Entry("routes over 128 KiB", "update.routes", &models.DesiredLRPUpdate{Routes: bigRoutes()}),
							Entry("routes nesting 4,000 levels", "update.routes", &models.DesiredLRPUpdate{Routes: deepRoutes(4000)}),
							Entry("a definition without an action path", "update.definition.action.path", &models.DesiredLRPUpdate{Definition: definitionWith(func(d *models.LRPDefinition) { d.Action.Path = "" }), UpdateIdentifier: "v2"}),
							Entry("a bad port", "update.definition.ports", &models.DesiredLRPUpdate{Definition: definitionWith(func(d *models.LRPDefinition) { d.Ports = []uint32{70000} }), UpdateIdentifier: "v2"}),
							Entry("too many ports", "update.definition.ports", &models.DesiredLRPUpdate{Definition: definitionWith(func(d *models.LRPDefinition) { d.Ports = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9} }), UpdateIdentifier: "v2"}),
							Entry("negative memory", "update.definition.memory_mb", &models.DesiredLRPUpdate{Definition: definitionWith(func(d *models.LRPDefinition) { d.MemoryMb = -256 }), UpdateIdentifier: "v2"}),
							Entry("a bad update_identifier", "update.update_identifier", &models.DesiredLRPUpdate{Definition: newDefinition("/bin/app-v2"), UpdateIdentifier: "v2 with spaces"}),
							Entry("a min_ready of the largest int64", "update.update_strategy.min_ready_ms", &models.DesiredLRPUpdate{Definition: newDefinition("/bin/app-v2"), UpdateStrategy: &models.UpdateStrategy{MinReadyMs: math.MaxInt64}}),
							Entry("a start timeout over an hour", "update.definition.start_timeout_ms", &models.DesiredLRPUpdate{Definition: definitionWith(func(d *models.LRPDefinition) { d.StartTimeoutMs = models.MaxStartTimeoutMs + 1 })}),
							Entry("an asset URL naming a link-local IPv6 host", "update.definition.assets[0].url", &models.DesiredLRPUpdate{Definition: definitionWith(func(d *models.LRPDefinition) {
								d.Assets = []*models.Asset{{Url: "http://[fe80::1]/app", Sha256: strings.Repeat("ab", 32), Destination: "app"}}
							})}),
							Entry("NUL in the setup's argument", "update.definition.setup.args[0]", &models.DesiredLRPUpdate{Definition: definitionWith(func(d *models.LRPDefinition) {
								d.Setup = &models.RunAction{Path: "./setup.sh", Args: []string{"\x00"}}
							})}),
						)

						It("with a bad guid is InvalidRequest naming process_guid", func() {
							resp := &models.UpdateDesiredLRPResponse{}
							b.call(models.RouteUpdateDesiredLRP, &models.UpdateDesiredLRPRequest{ProcessGuid: "bad guid!", Update: &models.DesiredLRPUpdate{Instances: proto.Int32(9)}}, resp)
							Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
							Expect(resp.GetError().GetMessage()).To(HavePrefix("process_guid:"))
							b.expectUnchanged(guid, before)
						})

						It("without an update is InvalidRequest naming update", func() {
							resp := &models.UpdateDesiredLRPResponse{}
							b.call(models.RouteUpdateDesiredLRP, &models.UpdateDesiredLRPRequest{ProcessGuid: guid}, resp)
							Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
							Expect(resp.GetError().GetMessage()).To(HavePrefix("update:"))
							b.expectUnchanged(guid, before)
						})
					})

					It("a body over 1 MiB is InvalidRequest about the request body, and nothing is desired", func() {
						lrp := newLRP(guid, domain, 1)
						lrp.Annotation = strings.Repeat("a", models.MaxRequestBodyBytes)

						resp := b.desire(lrp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
						Expect(resp.GetError().GetMessage()).To(HavePrefix("request body:"))
						Expect(resp.GetError().GetMessage()).To(ContainSubstring("1048576"))
						b.expectNothingDesired(guid, domain)
					})
				})
			}

			Describe("bodies that do not decode", func() {
				DescribeTable("are InvalidRequest about the request body, and nothing is desired",
					func(wire wireCodec, mention string, spoil func(guid, domain string) []byte) {
						b := newBoard(stores[dialect], wire)
						resp := &models.DesireLRPResponse{}
						b.postDecode(models.RouteDesireDesiredLRP, wire.contentType, spoil(guid, domain), resp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
						Expect(resp.GetError().GetMessage()).To(HavePrefix("request body:"))
						Expect(resp.GetError().GetMessage()).To(ContainSubstring(mention))
						b.expectNothingDesired(guid, domain)
					},
					Entry("truncated protobuf", protobufWire, "", func(guid, domain string) []byte {
						valid := encodeDesire(proto.Marshal, guid, domain)
						return valid[:len(valid)-3]
					}),
					Entry("protobuf with a field the board does not know", protobufWire, "unknown field number 99", func(guid, domain string) []byte {
						valid := encodeDesire(proto.Marshal, guid, domain)
						return protowire.AppendVarint(protowire.AppendTag(valid, 99, protowire.VarintType), 1)
					}),
					Entry("protobuf with an unknown field inside the LRP", protobufWire, "desired_lrp: unknown field number 77", func(guid, domain string) []byte {
						lrp, err := proto.Marshal(newLRP(guid, domain, 1))
						Expect(err).NotTo(HaveOccurred())
						lrp = protowire.AppendString(protowire.AppendTag(lrp, 77, protowire.BytesType), "surprise")
						return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), lrp)
					}),
					// protobuf-go keeps the low 32 bits of a varint in a 32-bit
					// field: these would be desired as 2 instances, and port 8080.
					Entry("protobuf instances of 2^32+2", protobufWire, "invalid value for int32 field desired_lrp.instances: 4294967298", func(guid, domain string) []byte {
						valid := encodeDesire(proto.Marshal, guid, domain)
						lrp := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1<<32+2)
						return protowire.AppendBytes(protowire.AppendTag(valid, 1, protowire.BytesType), lrp)
					}),
					Entry("JSON instances of 2^32+2", jsonWire, "invalid value for int32 field desired_lrp.instances: 4294967298", func(guid, domain string) []byte {
						return desireJSON(guid, domain, `"instances": 4294967298`)
					}),
					Entry("protobuf port of 2^32+8080", protobufWire, "invalid value for uint32 field desired_lrp.definition.ports[0]: 4294975376", func(guid, domain string) []byte {
						lrp := newLRP(guid, domain, 1)
						lrp.Definition.Ports = nil
						lrp.Definition.HealthCheck = nil
						body, err := proto.Marshal(&models.DesireLRPRequest{DesiredLrp: lrp})
						Expect(err).NotTo(HaveOccurred())
						ports := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), protowire.AppendVarint(nil, 1<<32+8080))
						definition := protowire.AppendBytes(protowire.AppendTag(nil, 11, protowire.BytesType), ports)
						return protowire.AppendBytes(protowire.AppendTag(body, 1, protowire.BytesType), definition)
					}),
					Entry("JSON port of 2^32+8080", jsonWire, "invalid value for uint32 field desired_lrp.definition.ports[0]: 4294975376", func(guid, domain string) []byte {
						return []byte(`{"desired_lrp": {"process_guid": "` + guid + `", "domain": "` + domain + `", "instances": 1, "definition": {"action": {"path": "/bin/app"}, "ports": [4294975376]}}}`)
					}),
					// What protobuf-go would decode into a request other than
					// the one sent, or refuse naming no field (models.CheckWireRanges,
					// models.ExplainWire).
					Entry("protobuf routes whose entry holds a field the entry does not know", protobufWire,
						`request body: desired_lrp.routes.fields["http"]: unknown field number 3`, func(guid, domain string) []byte {
							entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "http")
							entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1))
							entry = protowire.AppendVarint(protowire.AppendTag(entry, 3, protowire.VarintType), 7)
							routes := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), entry)
							lrp := protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), routes)
							return protowire.AppendBytes(protowire.AppendTag(encodeDesire(proto.Marshal, guid, domain), 1, protowire.BytesType), lrp)
						}),
					Entry("protobuf auto_revert of 2^40", protobufWire,
						"request body: invalid value for bool field desired_lrp.update_strategy.auto_revert: 1099511627776", func(guid, domain string) []byte {
							strategy := protowire.AppendVarint(protowire.AppendTag(nil, 5, protowire.VarintType), 1<<40)
							lrp := protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), strategy)
							return protowire.AppendBytes(protowire.AppendTag(encodeDesire(proto.Marshal, guid, domain), 1, protowire.BytesType), lrp)
						}),
					Entry("JSON auto_revert of 2^40", jsonWire,
						"request body: invalid value for bool field desired_lrp.update_strategy.auto_revert: 1099511627776", func(guid, domain string) []byte {
							return desireJSON(guid, domain, `"instances": 1, "update_strategy": {"auto_revert": 1099511627776}`)
						}),
					Entry("protobuf instances sent as bytes", protobufWire,
						"request body: invalid value for int32 field desired_lrp.instances: wire type bytes", func(guid, domain string) []byte {
							lrp := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "abc")
							return protowire.AppendBytes(protowire.AppendTag(encodeDesire(proto.Marshal, guid, domain), 1, protowire.BytesType), lrp)
						}),
					Entry("protobuf annotation that is not UTF-8", protobufWire,
						"request body: desired_lrp.annotation: string field contains invalid UTF-8", func(guid, domain string) []byte {
							valid := encodeDesire(proto.Marshal, guid, domain)
							bad := protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), []byte{'a', 0xff})
							return protowire.AppendBytes(protowire.AppendTag(valid, 1, protowire.BytesType), bad)
						}),
					Entry("random bytes as protobuf", protobufWire, "", func(_, _ string) []byte {
						return []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}
					}),
					Entry("truncated JSON", jsonWire, "", func(guid, domain string) []byte {
						return []byte(`{"desired_lrp": {"process_guid": "` + guid + `", "domain": "` + domain + `", "instances": 1,`)
					}),
					Entry("JSON with an unknown field", jsonWire, `desired_lrp: unknown field "colour"`, func(guid, domain string) []byte {
						return desireJSON(guid, domain, `"instances": 1, "colour": "blue"`)
					}),
					Entry("JSON with a string for a number", jsonWire, `invalid value for int32 field desired_lrp.instances: "many"`, func(guid, domain string) []byte {
						return desireJSON(guid, domain, `"instances": "many"`)
					}),
					Entry("JSON that is not an object", jsonWire, "", func(_, _ string) []byte {
						return []byte(`[1, 2, 3]`)
					}),
				)
			})
		})
	}
})

// namesField matches an error message that starts with the field's path,
// e.g. "desired_lrp.definition.ports[1]: must be 1-65535".
func namesField(field string) types.GomegaMatcher {
	return MatchRegexp(`^` + regexp.QuoteMeta(field) + `(\[\d+\])?: `)
}

// bigRoutes is a routes value just over 128 KiB as JSON, well under the
// body limit.
func bigRoutes() *structpb.Struct {
	routes, err := structpb.NewStruct(map[string]any{"http": strings.Repeat("r", 128*1024+1)})
	Expect(err).NotTo(HaveOccurred())
	return routes
}

// deepRoutes nests depth levels of lists in routes: {"a": [[…["deep"]…]]}.
func deepRoutes(depth int) *structpb.Struct {
	inner := structpb.NewStringValue("deep")
	for level := depth; level > 1; level-- {
		inner = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{inner}})
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{"a": inner}}
}

func definitionWith(change func(*models.LRPDefinition)) *models.LRPDefinition {
	d := newDefinition("/bin/app-v2")
	change(d)
	return d
}

// desireJSON is a desire request written by hand, with extra members of
// the LRP object in place of its instances.
func desireJSON(guid, domain, instances string) []byte {
	return []byte(`{"desired_lrp": {"process_guid": "` + guid + `", "domain": "` + domain + `", ` + instances +
		`, "definition": {"action": {"path": "/bin/app"}}}}`)
}

func encodeDesire(marshal func(proto.Message) ([]byte, error), guid, domain string) []byte {
	body, err := marshal(&models.DesireLRPRequest{DesiredLrp: newLRP(guid, domain, 1)})
	Expect(err).NotTo(HaveOccurred())
	return body
}
