package handlers

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

// schedulingInfoPage is a page of 1,000 scheduling infos shaped like
// bbs-load peer's LRPs: one cf-router route each.
func schedulingInfoPage(b *testing.B) []*models.DesiredLRPSchedulingInfo {
	page := make([]*models.DesiredLRPSchedulingInfo, 1000)
	for i := range page {
		guid := fmt.Sprintf("peer-%06d", i)
		routes, err := structpb.NewStruct(map[string]any{
			"cf-router": []any{map[string]any{"hostnames": []any{guid + ".apps.example.com"}, "port": 8080}},
		})
		if err != nil {
			b.Fatal(err)
		}
		page[i] = &models.DesiredLRPSchedulingInfo{
			ProcessGuid: guid, Domain: "peer", Instances: 1, Routes: routes, Annotation: "notes",
			ActiveDefinitionId: guid + "-v1", HealthyDefinitionId: guid + "-v1",
			ModificationTag: &models.ModificationTag{Epoch: "3f1e6c9a-5a1b-4c1e-9f0e-0d4b6c3a2b1c", Index: 2},
			MemoryMb:        64, DiskMb: 128,
		}
	}
	return page
}

// BenchmarkListPage is encoding one page of a whole list as readPage and
// the list writer do: each item measured (readPage bounds the page by its
// bytes), then encoded — measured again by proto.Marshal (appendField), or
// with the sizes the first measurement left (appendSizedField).
func BenchmarkListPage(b *testing.B) {
	page := schedulingInfoPage(b)
	for _, encode := range []struct {
		name   string
		append func([]byte, protowire.Number, proto.Message) ([]byte, error)
	}{{"measured again", appendField}, {"cached sizes", appendSizedField}} {
		b.Run(encode.name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf = buf[:0]
				for _, item := range page {
					_ = proto.Size(item)
				}
				for _, item := range page {
					var err error
					if buf, err = encode.append(buf, 2, item); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(buf)), "page-bytes")
		})
	}
}
