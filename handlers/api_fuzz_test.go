package handlers_test

import (
	"bytes"
	"context"
	"database/sql"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"code.cloudfoundry.org/lager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// fuzzRoute is one API route as the fuzzer sees it: the request it takes,
// the response it answers with, and whether a successful call writes.
type fuzzRoute struct {
	path     string
	request  func() proto.Message
	response func() proto.Message
	writes   bool
}

func newMessage[T any, P interface {
	*T
	proto.Message
}]() func() proto.Message {
	return func() proto.Message { return P(new(T)) }
}

// fuzzRoutes is every route of models/routes.go (TestFuzzRoutesCoverEveryRoute
// keeps it so). The fuzzer picks one by index, so new routes go at the end:
// the committed corpus keeps pointing at the routes it was written for.
var fuzzRoutes = []fuzzRoute{
	{models.RoutePing, newMessage[models.PingRequest](), newMessage[models.PingResponse](), false},
	{models.RouteUpsertDomain, newMessage[models.UpsertDomainRequest](), newMessage[models.UpsertDomainResponse](), true},
	{models.RouteDomains, newMessage[models.DomainsRequest](), newMessage[models.DomainsResponse](), false},
	{models.RouteDesireDesiredLRP, newMessage[models.DesireLRPRequest](), newMessage[models.DesireLRPResponse](), true},
	{models.RouteDesiredLRPByProcessGuid, newMessage[models.DesiredLRPByProcessGuidRequest](), newMessage[models.DesiredLRPResponse](), false},
	{models.RouteDesiredLRPs, newMessage[models.DesiredLRPsRequest](), newMessage[models.DesiredLRPsResponse](), false},
	{models.RouteDesiredLRPSchedulingInfos, newMessage[models.DesiredLRPSchedulingInfosRequest](), newMessage[models.DesiredLRPSchedulingInfosResponse](), false},
	{models.RouteUpdateDesiredLRP, newMessage[models.UpdateDesiredLRPRequest](), newMessage[models.UpdateDesiredLRPResponse](), true},
	{models.RouteRemoveDesiredLRP, newMessage[models.RemoveDesiredLRPRequest](), newMessage[models.RemoveDesiredLRPResponse](), true},
	{models.RouteDefinitions, newMessage[models.DefinitionsRequest](), newMessage[models.DefinitionsResponse](), false},
	{models.RouteDefinition, newMessage[models.DefinitionRequest](), newMessage[models.DefinitionResponse](), false},
	{models.RouteActualLRPs, newMessage[models.ActualLRPsRequest](), newMessage[models.ActualLRPsResponse](), false},
	{models.RouteRolloutStatus, newMessage[models.RolloutStatusRequest](), newMessage[models.RolloutStatusResponse](), false},
	{models.RouteRollback, newMessage[models.RollbackRequest](), newMessage[models.RollbackResponse](), true},
	{models.RouteAbortRollout, newMessage[models.AbortRolloutRequest](), newMessage[models.AbortRolloutResponse](), true},
	{models.RoutePromoteRollout, newMessage[models.PromoteRolloutRequest](), newMessage[models.PromoteRolloutResponse](), true},
	{models.RoutePauseRollout, newMessage[models.PauseRolloutRequest](), newMessage[models.PauseRolloutResponse](), true},
	{models.RouteResumeRollout, newMessage[models.ResumeRolloutRequest](), newMessage[models.ResumeRolloutResponse](), true},
	{models.RouteEditRollout, newMessage[models.EditRolloutRequest](), newMessage[models.EditRolloutResponse](), true},
	{models.RouteOperations, newMessage[models.OperationsRequest](), newMessage[models.OperationsResponse](), false},
	{models.RouteOperation, newMessage[models.OperationRequest](), newMessage[models.OperationResponse](), false},
	{models.RouteCancelOperation, newMessage[models.CancelOperationRequest](), newMessage[models.CancelOperationResponse](), true},
	{models.RouteRegisterCell, newMessage[models.RegisterCellRequest](), newMessage[models.RegisterCellResponse](), true},
	{models.RouteCells, newMessage[models.CellsRequest](), newMessage[models.CellsResponse](), false},
	{models.RouteDrainCell, newMessage[models.DrainCellRequest](), newMessage[models.DrainCellResponse](), true},
	{models.RouteDrainStatus, newMessage[models.DrainStatusRequest](), newMessage[models.DrainStatusResponse](), false},
	{models.RouteQuarantineCell, newMessage[models.QuarantineCellRequest](), newMessage[models.QuarantineCellResponse](), true},
	{models.RouteClearCell, newMessage[models.ClearCellQuarantineRequest](), newMessage[models.ClearCellQuarantineResponse](), true},
	{models.RouteClaimActualLRP, newMessage[models.ClaimActualLRPRequest](), newMessage[models.ActualLRPLifecycleResponse](), true},
	{models.RouteStartActualLRP, newMessage[models.StartActualLRPRequest](), newMessage[models.ActualLRPLifecycleResponse](), true},
	{models.RouteCrashActualLRP, newMessage[models.CrashActualLRPRequest](), newMessage[models.ActualLRPLifecycleResponse](), true},
	{models.RouteFailActualLRP, newMessage[models.FailActualLRPRequest](), newMessage[models.ActualLRPLifecycleResponse](), true},
	{models.RouteRemoveActualLRP, newMessage[models.RemoveActualLRPRequest](), newMessage[models.ActualLRPLifecycleResponse](), true},
	{models.RouteEvacuateActualLRP, newMessage[models.EvacuateActualLRPRequest](), newMessage[models.EvacuateActualLRPResponse](), true},
	{models.RouteBulkReport, newMessage[models.BulkReportRequest](), newMessage[models.BulkReportResponse](), true},
	{models.RouteReportOccupancy, newMessage[models.ReportOccupancyRequest](), newMessage[models.ReportOccupancyResponse](), true},
	{models.RouteReportHealth, newMessage[models.ReportHealthRequest](), newMessage[models.ReportHealthResponse](), true},
	// The event stream answers a request it refuses with an error-only
	// message; with no event hub (as here) every request is refused, so
	// no stream ever starts.
	{models.RouteEvents, newMessage[models.EventsRequest](), newMessage[models.PingResponse](), false},
	{models.RouteRolloutPlan, newMessage[models.RolloutPlanRequest](), newMessage[models.RolloutPlanResponse](), false},
	{models.RouteAddFreezeWindow, newMessage[models.AddFreezeWindowRequest](), newMessage[models.AddFreezeWindowResponse](), true},
	{models.RouteRemoveFreezeWindow, newMessage[models.RemoveFreezeWindowRequest](), newMessage[models.RemoveFreezeWindowResponse](), true},
	{models.RouteFreezeWindows, newMessage[models.FreezeWindowsRequest](), newMessage[models.FreezeWindowsResponse](), false},
	{models.RouteSetBudgetGroup, newMessage[models.SetBudgetGroupRequest](), newMessage[models.SetBudgetGroupResponse](), true},
	{models.RouteRemoveBudgetGroup, newMessage[models.RemoveBudgetGroupRequest](), newMessage[models.RemoveBudgetGroupResponse](), true},
	{models.RouteBudgetGroups, newMessage[models.BudgetGroupsRequest](), newMessage[models.BudgetGroupsResponse](), false},
}

// Encodings the fuzzer picks from, by index: the two content types, and
// no Content-Type at all (protobuf).
var fuzzEncodings = []struct {
	contentType string
	unmarshal   func([]byte, proto.Message) error
	marshal     func(proto.Message) ([]byte, error)
}{
	{models.ContentTypeProtobuf, proto.Unmarshal, proto.Marshal},
	{models.ContentTypeJSON, protojson.Unmarshal, protojson.MarshalOptions{UseProtoNames: true}.Marshal},
	{"", proto.Unmarshal, proto.Marshal},
}

// fuzzBoard is the API over a SQLite store holding a small fixture: LRP
// "web" (domain "apps", two instances, the first claimed by ig-web-0 on
// cell-1), cell "cell-1", domain "apps". Every input starts from that
// fixture: the board puts it back after anything that may have written,
// so that an input found failing fails the same way when run again alone.
type fuzzBoard struct {
	handler http.Handler
	store   *sqldb.SQLDB
	conn    *sql.DB
	// fixture is rowCounts() of the fixture.
	fixture string
}

// fuzzTables are the tables the fixture and the API write to.
var fuzzTables = []string{"actual_lrps", "run_infos", "desired_lrps", "domains", "cells", "leases", "rollouts", "operations"}

func newFuzzBoard(tb testing.TB) *fuzzBoard {
	tb.Helper()
	database, err := testdb.Create(testdb.SQLite)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { database.Drop() })
	ctx := context.Background()
	conn, err := sqldb.Open(ctx, testdb.SQLite, database.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	if err := migrations.Up(ctx, conn, testdb.SQLite); err != nil {
		tb.Fatal(err)
	}
	b := &fuzzBoard{conn: conn, store: sqldb.New(conn, testdb.SQLite)}
	// A logger without sinks: a fuzzer makes millions of requests, and a
	// test logger would keep every line.
	b.handler = handlers.New(lager.NewLogger("fuzz"), b.store, nil)
	b.reset(tb)
	return b
}

func (b *fuzzBoard) reset(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	for _, table := range fuzzTables {
		if _, err := b.conn.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			tb.Fatal(err)
		}
	}
	if err := b.store.UpsertDomain(ctx, "apps", 0); err != nil {
		tb.Fatal(err)
	}
	if _, err := b.store.DesireLRP(ctx, fuzzLRP()); err != nil {
		tb.Fatal(err)
	}
	if err := b.store.RegisterCell(ctx, fuzzCell(), 24*time.Hour); err != nil {
		tb.Fatal(err)
	}
	_, err := b.conn.ExecContext(ctx, `UPDATE actual_lrps SET state = 'CLAIMED', cell_id = 'cell-1', instance_guid = 'ig-web-0'
 WHERE process_guid = 'web' AND instance_index = 0`)
	if err != nil {
		tb.Fatal(err)
	}
	b.fixture = b.rowCounts(tb)
}

// rowCounts is the number of rows in each table, as one string to compare.
func (b *fuzzBoard) rowCounts(tb testing.TB) string {
	tb.Helper()
	counts := make([]string, 0, len(fuzzTables))
	for _, table := range fuzzTables {
		var n int
		if err := b.conn.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		counts = append(counts, table+"="+strconv.Itoa(n))
	}
	return strings.Join(counts, " ")
}

func fuzzDefinition() *models.LRPDefinition {
	return &models.LRPDefinition{
		Action:         &models.RunAction{Path: "/bin/web", Args: []string{"--port", "8080"}},
		Ports:          []uint32{8080},
		HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 8080},
		StartTimeoutMs: 60000,
		MemoryMb:       64,
		DiskMb:         64,
	}
}

func fuzzLRP() *models.DesiredLRP {
	routes, err := structpb.NewStruct(map[string]any{"http": []any{map[string]any{"hostname": "web.example", "port": 8080}}})
	if err != nil {
		panic(err)
	}
	return &models.DesiredLRP{ProcessGuid: "web", Domain: "apps", Instances: 2, Routes: routes, Definition: fuzzDefinition()}
}

func fuzzCell() *models.Cell {
	return &models.Cell{CellId: "cell-1", RepUrl: "http://10.0.0.5:1800", Zone: "z1",
		Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 4096, Instances: 16}, PlacementTags: []string{"ssd"}}
}

// fuzzSeeds are meaningful requests, one or more per route, against the
// fixture: the fuzzer mutates them into the requests it tries.
func fuzzSeeds() map[string]proto.Message {
	web := func() *models.DesiredLRP {
		lrp := fuzzLRP()
		lrp.ProcessGuid = "web-2"
		lrp.PlacementTags = []string{"ssd"}
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "1"}
		return lrp
	}
	v2 := fuzzDefinition()
	v2.Action.Path = "/bin/web-v2"
	netInfo := &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}
	return map[string]proto.Message{
		models.RoutePing:                      &models.PingRequest{},
		models.RouteUpsertDomain:              &models.UpsertDomainRequest{Domain: "apps", TtlSeconds: 120},
		models.RouteDomains:                   &models.DomainsRequest{},
		models.RouteDesireDesiredLRP:          &models.DesireLRPRequest{DesiredLrp: web()},
		models.RouteDesiredLRPByProcessGuid:   &models.DesiredLRPByProcessGuidRequest{ProcessGuid: "web"},
		models.RouteDesiredLRPs:               &models.DesiredLRPsRequest{Domain: "apps", ProcessGuids: []string{"web"}},
		models.RouteDesiredLRPSchedulingInfos: &models.DesiredLRPSchedulingInfosRequest{Domain: "apps"},
		models.RouteUpdateDesiredLRP: &models.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: &models.DesiredLRPUpdate{
			Instances: proto.Int32(3), Annotation: proto.String("v2"), Definition: v2, UpdateIdentifier: "v2",
			Staged: &models.StagedRollout{TargetPercent: 50, SafeRate: &models.SafeRate{Percent: 10, PerMs: 1000}},
		}},
		models.RouteRemoveDesiredLRP: &models.RemoveDesiredLRPRequest{ProcessGuid: "web"},
		models.RouteDefinitions:      &models.DefinitionsRequest{ProcessGuid: "web"},
		models.RouteDefinition:       &models.DefinitionRequest{ProcessGuid: "web", DefinitionId: "v1"},
		models.RouteActualLRPs:       &models.ActualLRPsRequest{Domain: "apps", CellId: "cell-1", ProcessGuid: "web", Index: proto.Int32(0)},
		models.RouteRolloutStatus:    &models.RolloutStatusRequest{ProcessGuid: "web"},
		models.RouteRollback:         &models.RollbackRequest{ProcessGuid: "web", DefinitionId: "v1"},
		models.RouteAbortRollout:     &models.AbortRolloutRequest{ProcessGuid: "web"},
		models.RoutePromoteRollout:   &models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 100},
		models.RoutePauseRollout:     &models.PauseRolloutRequest{ProcessGuid: "web"},
		models.RouteResumeRollout:    &models.ResumeRolloutRequest{ProcessGuid: "web"},
		models.RouteEditRollout:      &models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("50%"), TargetPercent: proto.Float64(100)},
		models.RouteRolloutPlan:      &models.RolloutPlanRequest{ProcessGuid: "web", ReadyAfterMs: 1000, Update: &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2"}},
		models.RouteOperations:       &models.OperationsRequest{ProcessGuid: "web", Limit: 10},
		models.RouteAddFreezeWindow: &models.AddFreezeWindowRequest{Window: &models.FreezeWindow{
			Name: "weekend", Schedule: "0 18 * * 5", DurationMs: 3_600_000, TimeZone: "Europe/Berlin"}},
		models.RouteRemoveFreezeWindow: &models.RemoveFreezeWindowRequest{Name: "weekend"},
		models.RouteFreezeWindows:      &models.FreezeWindowsRequest{},
		models.RouteSetBudgetGroup:     &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: "checkout", MaxUnavailable: "10%"}},
		models.RouteRemoveBudgetGroup:  &models.RemoveBudgetGroupRequest{Name: "checkout"},
		models.RouteBudgetGroups:       &models.BudgetGroupsRequest{},
		models.RouteOperation:          &models.OperationRequest{Id: models.OperationIDFloor(time.Unix(1_700_000_000, 0)) + "00000000"},
		models.RouteCancelOperation:    &models.CancelOperationRequest{Id: models.OperationIDFloor(time.Unix(1_700_000_000, 0)) + "00000000"},
		models.RouteRegisterCell:       &models.RegisterCellRequest{Cell: fuzzCell()},
		models.RouteCells:              &models.CellsRequest{},
		models.RouteDrainCell:          &models.DrainCellRequest{CellId: "cell-1", DeadlineMs: 600_000},
		models.RouteDrainStatus:        &models.DrainStatusRequest{CellId: "cell-1"},
		models.RouteQuarantineCell:     &models.QuarantineCellRequest{CellId: "cell-1", Reason: "crashes"},
		models.RouteClearCell:          &models.ClearCellQuarantineRequest{CellId: "cell-1"},
		models.RouteClaimActualLRP:     &models.ClaimActualLRPRequest{ProcessGuid: "web", Index: 0, InstanceGuid: "ig-web-0", CellId: "cell-1"},
		models.RouteStartActualLRP: &models.StartActualLRPRequest{ProcessGuid: "web", Index: 0, InstanceGuid: "ig-web-0",
			CellId: "cell-1", NetInfo: netInfo},
		models.RouteCrashActualLRP: &models.CrashActualLRPRequest{ProcessGuid: "web", Index: 0, InstanceGuid: "ig-web-0",
			CellId: "cell-1", CrashReason: "exit status 1"},
		models.RouteFailActualLRP: &models.FailActualLRPRequest{ProcessGuid: "web", Index: 1, CellId: "cell-1",
			PlacementError: "no room"},
		models.RouteRemoveActualLRP: &models.RemoveActualLRPRequest{ProcessGuid: "web", Index: 0,
			Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-web-0", CellId: "cell-1"},
		models.RouteEvacuateActualLRP: &models.EvacuateActualLRPRequest{ProcessGuid: "web", Index: 0, InstanceGuid: "ig-web-0", CellId: "cell-1"},
		models.RouteBulkReport: &models.BulkReportRequest{CellId: "cell-1", Instances: []*models.ReportedInstance{{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-web-0",
			DefinitionId: "v1", State: models.ActualLRP_RUNNING, NetInfo: netInfo,
		}}},
		models.RouteReportOccupancy: &models.ReportOccupancyRequest{CellId: "cell-1", Changes: []*models.OccupancyChange{{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-web-0", Occupied: true,
		}}},
		models.RouteReportHealth: healthReport("cell-1", "web"),
		models.RouteEvents:       &models.EventsRequest{Types: []string{"desired_lrp_created"}},
	}
}

// FuzzAPIRequest posts a body to one route of the API, over a real SQLite
// store. Whatever the body, the board answers 200 with the route's
// response message in the request's encoding, never 500, never a panic;
// an error in the answer has valid UTF-8, a refused request
// (InvalidRequest) names a field and changed no table's row count, and no
// body makes the board blame itself (UnknownError, InvalidRecord).
func FuzzAPIRequest(f *testing.F) {
	seeds := fuzzSeeds()
	for i, route := range fuzzRoutes {
		message, ok := seeds[route.path]
		if !ok {
			f.Fatalf("no seed for %s", route.path)
		}
		for e, encoding := range fuzzEncodings {
			body, err := encoding.marshal(message)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), uint8(e), body)
		}
		// The empty body is the empty message in either encoding.
		f.Add(uint8(i), uint8(1), []byte{})
	}

	b := newFuzzBoard(f)
	f.Fuzz(func(t *testing.T, routeIndex, encodingIndex uint8, body []byte) {
		route := fuzzRoutes[int(routeIndex)%len(fuzzRoutes)]
		encoding := fuzzEncodings[int(encodingIndex)%len(fuzzEncodings)]

		request := httptest.NewRequest(http.MethodPost, route.path, bytes.NewReader(body))
		if encoding.contentType != "" {
			request.Header.Set("Content-Type", encoding.contentType)
		}
		recorder := httptest.NewRecorder()
		b.handler.ServeHTTP(recorder, request)

		answer := recorder.Body.Bytes()
		if recorder.Code != http.StatusOK {
			t.Fatalf("%s: status %d, want 200; body %q", route.path, recorder.Code, answer)
		}
		wantType := encoding.contentType
		if wantType == "" {
			wantType = models.ContentTypeProtobuf
		}
		if got := recorder.Header().Get("Content-Type"); got != wantType {
			t.Fatalf("%s: Content-Type %q, want %q", route.path, got, wantType)
		}
		response := route.response()
		if err := encoding.unmarshal(answer, response); err != nil {
			t.Fatalf("%s: answer does not decode as %s: %v; body %q", route.path, proto.MessageName(response), err, answer)
		}
		// A nil error is success; its type would read as UnknownError.
		modelErr := response.(interface{ GetError() *models.Error }).GetError()
		refused := modelErr != nil && modelErr.GetType() == models.Error_InvalidRequest
		if modelErr != nil {
			message := modelErr.GetMessage()
			if !utf8.ValidString(message) {
				t.Fatalf("%s: error message is not valid UTF-8: %q", route.path, message)
			}
			switch modelErr.GetType() {
			case models.Error_UnknownError, models.Error_InvalidRecord:
				t.Fatalf("%s: the board blames itself for a request: %s", route.path, modelErr)
			case models.Error_InvalidRequest:
				if field, _, ok := strings.Cut(message, ": "); !ok || field == "" {
					t.Fatalf("%s: InvalidRequest names no field: %q", route.path, message)
				}
			}
		}

		counts := b.rowCounts(t)
		if refused && counts != b.fixture {
			t.Fatalf("%s: refused (%s) but rows changed: %s, was %s", route.path, modelErr.GetMessage(), counts, b.fixture)
		}
		if counts != b.fixture || (route.writes && modelErr == nil) {
			b.reset(t)
		}
	})
}

// TestFuzzRoutesCoverEveryRoute keeps fuzzRoutes in step with
// models/routes.go: every Route constant there is fuzzed.
func TestFuzzRoutesCoverEveryRoute(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "../models/routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fuzzed := map[string]bool{}
	for _, route := range fuzzRoutes {
		fuzzed[route.path] = true
	}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			value := spec.(*ast.ValueSpec)
			for i, name := range value.Names {
				if !strings.HasPrefix(name.Name, "Route") || i >= len(value.Values) {
					continue
				}
				literal, ok := value.Values[i].(*ast.BasicLit)
				if !ok || literal.Kind != token.STRING {
					continue
				}
				path, err := strconv.Unquote(literal.Value)
				if err != nil {
					t.Fatal(err)
				}
				if !fuzzed[path] {
					t.Errorf("models.%s (%s) is not in fuzzRoutes", name.Name, path)
				}
			}
		}
	}
}

// TestFuzzSeedsAreValid keeps the seeds requests that reach the store, so
// that the fuzzer starts from calls that do something.
func TestFuzzSeedsAreValid(t *testing.T) {
	for path, seed := range fuzzSeeds() {
		if err := seed.(interface{ Validate() error }).Validate(); err != nil {
			t.Errorf("seed for %s: %v", path, err)
		}
	}
}
