package sqldb_test

import (
	"google.golang.org/protobuf/types/known/structpb"
	"strings"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

func newDefinition(id, path string) *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId: id,
		Action: &models.RunAction{
			Path: path,
			Args: []string{"--port", "8080"},
			Env:  []*models.EnvironmentVariable{{Name: "MODE", Value: "test"}},
			Dir:  "/app",
		},
		Ports:          []uint32{8080},
		HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/healthz"},
		StartTimeoutMs: 60_000,
		MemoryMb:       256,
		DiskMb:         1024,
	}
}

func newLRP(guid, domain string, instances int32) *models.DesiredLRP {
	routes, err := structpb.NewStruct(map[string]any{
		"http": []any{map[string]any{"hostname": guid + ".example.com", "port": 8080}},
	})
	if err != nil {
		panic(err)
	}
	return &models.DesiredLRP{
		ProcessGuid:   guid,
		Domain:        domain,
		Instances:     instances,
		PlacementTags: []string{"zone-a", "ssd"},
		Routes:        routes,
		Annotation:    "owner: team-" + guid,
		Definition:    newDefinition("v1", "/bin/"+guid),
	}
}

func dbFilterGuid(guid string) db.ActualLRPFilter {
	return db.ActualLRPFilter{ProcessGuid: guid}
}

func int32p(v int32) *int32 { return &v }

func stringp(v string) *string { return &v }

// peerShapedLRP is newLRP with a definition shaped as bbs-load peer's:
// arguments and an environment of about 900 bytes, which pack to about
// 400 (the benchmarks of reading definitions).
func peerShapedLRP(guid string) *models.DesiredLRP {
	lrp := newLRP(guid, "bench", 1)
	action := lrp.Definition.Action
	action.Path = "/home/vcap/app/bin/server"
	action.Args = []string{"--port", "8080", "--log-level", "info", "--config", "/home/vcap/app/config/production.yml",
		strings.Repeat("--feature-flag-", 35)}
	action.Env = []*models.EnvironmentVariable{
		{Name: "VCAP_APPLICATION", Value: `{"application_name":"` + guid + `","space_name":"load","organization_name":"bench","limits":{"mem":256,"disk":512}}`},
		{Name: "DATABASE_URL", Value: "postgres://app:secret@db.internal.example.com:5432/" + guid + "?sslmode=require"},
		{Name: "LANG", Value: "en_US.UTF-8"},
	}
	return lrp
}
