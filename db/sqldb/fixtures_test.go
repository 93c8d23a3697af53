package sqldb_test

import (
	"google.golang.org/protobuf/types/known/structpb"

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
