package models_test

import (
	"encoding/binary"
	"regexp"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

func fuzzBulkSeed() *models.BulkReportRequest {
	return &models.BulkReportRequest{CellId: "cell-1", Instances: []*models.ReportedInstance{
		{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-0", DefinitionId: "v1",
			State: models.ActualLRP_RUNNING, Routable: true,
			NetInfo: &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}},
		{ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_EVACUATING, InstanceGuid: "ig-1", DefinitionId: "v2",
			State: models.ActualLRP_CLAIMED},
	}}
}

// fuzzReader hands out the fields of a bulk report from the fuzzer's
// bytes, so that every input is a well-formed request whose values are
// arbitrary: the decoder's job is FuzzDecodeValidate's, this one is about
// what validation makes of any instances at all.
type fuzzReader struct{ data []byte }

func (r *fuzzReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *fuzzReader) int32() int32 {
	var b [4]byte
	for i := range b {
		b[i] = r.byte()
	}
	return int32(binary.LittleEndian.Uint32(b[:]))
}

// string is one of a few meaningful values (a byte picks it), or a
// length-prefixed run of arbitrary bytes.
func (r *fuzzReader) string(usual ...string) string {
	pick := int(r.byte())
	if pick < len(usual) {
		return usual[pick]
	}
	n := min(int(r.byte())%40, len(r.data))
	s := string(r.data[:n])
	r.data = r.data[n:]
	return s
}

func (r *fuzzReader) instance() *models.ReportedInstance {
	if r.byte() == 0xff {
		return nil
	}
	ri := &models.ReportedInstance{
		ProcessGuid:  r.string("web", "Web", "web "),
		Index:        r.int32(),
		Presence:     models.ActualLRP_Presence(r.int32() % 6),
		InstanceGuid: r.string("ig-0", "ig-1"),
		DefinitionId: r.string("v1", "v2"),
		State:        models.ActualLRP_State(r.int32() % 6),
		Routable:     r.byte()%2 == 1,
		Occupied:     r.byte()%2 == 1,
	}
	if r.byte()%2 == 1 {
		ri.NetInfo = &models.NetInfo{Address: r.string("10.0.0.5", "cell-1.internal"), InstanceAddress: r.string("", "10.1.0.5")}
		for n := r.byte() % 10; n > 0; n-- {
			ri.NetInfo.Ports = append(ri.NetInfo.Ports, &models.PortMapping{
				ContainerPort: uint32(r.int32()) % 70000, HostPort: uint32(r.int32()) % 70000,
			})
		}
	}
	return ri
}

// readBulkReport is the report of cellID holding up to 7 instances read
// from data.
func readBulkReport(cellID string, data []byte) *models.BulkReportRequest {
	r := &fuzzReader{data: data}
	request := &models.BulkReportRequest{CellId: cellID}
	for n := r.byte() % 8; n > 0; n-- {
		request.Instances = append(request.Instances, r.instance())
	}
	return request
}

// bulkReportPath is what a bulk report's refusal may name: the cell, or a
// field of one instance.
var bulkReportPath = regexp.MustCompile(`^(cell_id|instances\[(\d+)\](\.(process_guid|index|presence|instance_guid|definition_id|state|net_info(\.(address|instance_address|ports(\[\d+\](\.(container_port|host_port))?)?))?))?): `)

// FuzzBulkReport validates bulk reports holding arbitrary instances. It
// must not panic, must answer the same twice, and either refuses with an
// InvalidRequest naming the cell or a field of an instance that exists, or
// accepts only what the board can store: every instance CLAIMED or
// RUNNING, with a definition, a RUNNING one with net info, no row key
// twice.
func FuzzBulkReport(f *testing.F) {
	// The seeds: a valid report, one with two instances sharing a key, a
	// RUNNING instance without net info, a guid that is not UTF-8, nine
	// ports on one instance, a trailing space in the cell id, and no cell
	// at all.
	seed := fuzzBulkSeed()
	f.Add("cell-1", encodeBulkSeed(seed))
	twice := fuzzBulkSeed()
	twice.Instances[1] = proto.Clone(twice.Instances[0]).(*models.ReportedInstance)
	f.Add("cell-1", encodeBulkSeed(twice))
	bare := fuzzBulkSeed()
	bare.Instances[0].NetInfo = nil
	f.Add("cell-1", encodeBulkSeed(bare))
	garbled := fuzzBulkSeed()
	garbled.Instances[1].ProcessGuid = "w\xffb"
	f.Add("cell-1", encodeBulkSeed(garbled))
	crowded := fuzzBulkSeed()
	for port := uint32(8081); port <= 8088; port++ {
		crowded.Instances[0].NetInfo.Ports = append(crowded.Instances[0].NetInfo.Ports,
			&models.PortMapping{ContainerPort: port, HostPort: port + 53000})
	}
	f.Add("cell-1", encodeBulkSeed(crowded))
	f.Add("cell-1 ", encodeBulkSeed(seed))
	f.Add("", []byte{})

	f.Fuzz(func(t *testing.T, cellID string, data []byte) {
		request := readBulkReport(cellID, data)

		err := request.Validate()
		if again := request.Validate(); errorText(again) != errorText(err) {
			t.Fatalf("Validate answered %q, then %q", errorText(err), errorText(again))
		}
		if err != nil {
			checkValidationError(t, request.ProtoReflect().Descriptor(), err)
			message := models.ConvertError(err).GetMessage()
			match := bulkReportPath.FindStringSubmatch(message)
			if match == nil {
				t.Fatalf("the refusal names no field of the report: %q", message)
			}
			if match[2] != "" {
				if i, _ := strconv.Atoi(match[2]); i >= len(request.Instances) {
					t.Fatalf("the refusal names instance %d of %d: %q", i, len(request.Instances), message)
				}
			}
			return
		}

		type rowKey struct {
			guid     string
			index    int32
			presence models.ActualLRP_Presence
		}
		seen := map[rowKey]bool{}
		for i, ri := range request.Instances {
			switch {
			case ri == nil:
				t.Fatalf("instances[%d] is nil and accepted", i)
			case ri.State != models.ActualLRP_CLAIMED && ri.State != models.ActualLRP_RUNNING:
				t.Fatalf("instances[%d] is %s and accepted", i, ri.State)
			case ri.State == models.ActualLRP_RUNNING && ri.NetInfo == nil:
				t.Fatalf("instances[%d] is RUNNING without net info and accepted", i)
			case ri.DefinitionId == "" || ri.InstanceGuid == "":
				t.Fatalf("instances[%d] has no definition or instance guid and is accepted", i)
			case !ri.Presence.IsValid() || ri.Presence == models.ActualLRP_PRESENCE_UNKNOWN:
				t.Fatalf("instances[%d] has presence %d and is accepted", i, ri.Presence)
			}
			key := rowKey{ri.ProcessGuid, ri.Index, ri.Presence}
			if seen[key] {
				t.Fatalf("instances[%d] repeats %v and is accepted", i, key)
			}
			seen[key] = true
			if err := models.ValidateProcessGuid(ri.ProcessGuid); err != nil {
				t.Fatalf("instances[%d] accepted with %v", i, err)
			}
		}
		if err := models.ValidateCellID(request.CellId); err != nil {
			t.Fatalf("accepted with %v", err)
		}
		if _, err := proto.Marshal(request); err != nil {
			t.Fatalf("an accepted report does not encode: %v", err)
		}
	})
}

// encodeBulkSeed writes a report's instances in fuzzReader's format, using
// the arbitrary-string form for every string.
func encodeBulkSeed(request *models.BulkReportRequest) []byte {
	str := func(s string) []byte { return append([]byte{0xfe, byte(len(s))}, s...) }
	i32 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	bit := func(b bool) byte {
		if b {
			return 1
		}
		return 0
	}
	out := []byte{byte(len(request.Instances))}
	for _, ri := range request.Instances {
		out = append(out, 0)
		out = append(out, str(ri.ProcessGuid)...)
		out = append(out, i32(ri.Index)...)
		out = append(out, i32(int32(ri.Presence))...)
		out = append(out, str(ri.InstanceGuid)...)
		out = append(out, str(ri.DefinitionId)...)
		out = append(out, i32(int32(ri.State))...)
		out = append(out, bit(ri.Routable), bit(ri.Occupied), bit(ri.NetInfo != nil))
		if ri.NetInfo != nil {
			out = append(out, str(ri.NetInfo.Address)...)
			out = append(out, str(ri.NetInfo.InstanceAddress)...)
			out = append(out, byte(len(ri.NetInfo.Ports)))
			for _, p := range ri.NetInfo.Ports {
				out = append(out, i32(int32(p.ContainerPort))...)
				out = append(out, i32(int32(p.HostPort))...)
			}
		}
	}
	return out
}

// TestFuzzBulkSeedsDecode keeps the seeds meaningful: fuzzReader reads
// back what encodeBulkSeed wrote, so the valid seed is a valid report.
func TestFuzzBulkSeedsDecode(t *testing.T) {
	seed := fuzzBulkSeed()
	read := readBulkReport(seed.CellId, encodeBulkSeed(seed))
	if !proto.Equal(read, seed) {
		t.Fatalf("read %v, wrote %v", read, seed)
	}
	if err := read.Validate(); err != nil {
		t.Fatalf("the valid seed is refused: %v", err)
	}
}
