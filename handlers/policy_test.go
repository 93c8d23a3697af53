package handlers_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// fixture names what the requests of the policy cases act on.
type fixture struct {
	guid         string // an LRP of domain, with its instances on cell-1
	otherGuid    string // an LRP nobody desired yet
	domain       string
	definitionID string // guid's active definition
	operationID  string // the operation that desired guid
}

// The cells the suite's certificates name.
const (
	cell1 = "cell-1"
	cell2 = "cell-2"
)

// policyCase is one request and who may make it: every identity of
// everyIdentity not in allowed is refused as Unauthorized.
type policyCase struct {
	name    string
	route   string
	request func(f fixture) proto.Message
	allowed []string
	// ownCell marks a route a cell may call for itself only; actsFor is
	// then the cell the request acts for ("" when it names none).
	ownCell bool
	actsFor string
	// held marks a route a cell may call only about its own instances,
	// which the store says: the policy alone lets every cell through.
	held bool
	// operatorOnly names the part of the request only an operator may ask
	// for, which an api-client's refusal names.
	operatorOnly string
}

// anyCase is a request on a route no cell may call for itself only.
func anyCase(name, route string, request func(fixture) proto.Message, allowed []string) policyCase {
	return policyCase{name: name, route: route, request: request, allowed: allowed}
}

// heldCase is a request a cell may make only about its own instances.
func heldCase(name, route string, request func(fixture) proto.Message, allowed []string) policyCase {
	return policyCase{name: name, route: route, request: request, allowed: allowed, held: true}
}

// cellCase is a request on a route a cell may call for itself only,
// acting for actsFor.
func cellCase(actsFor, name, route string, request func(fixture) proto.Message, allowed []string) policyCase {
	return policyCase{name: name, route: route, request: request, allowed: allowed, ownCell: true, actsFor: actsFor}
}

var (
	everyIdentity = []string{asCell1, asCell2, asAPIClient, asOperator, asBoard, asNoRole, asTwoRoles}
	apiCallers    = []string{asAPIClient, asOperator}
)

// These requests act on index 0 of the fixture's LRP, which cell-1 runs
// (as instanceGuid), and index 1, placed on cell-1 and not yet claimed.
func claimFor(cellID string) func(fixture) proto.Message {
	return func(f fixture) proto.Message {
		return &models.ClaimActualLRPRequest{ProcessGuid: f.guid, Index: 1, InstanceGuid: instanceGuid, CellId: cellID}
	}
}

// policyCases covers every route of models/routes.go (a spec checks that),
// each with the identities the policy lets make the request. It says the
// policy of handlers/authorize.go again, from the caller's side.
var policyCases = []policyCase{
	anyCase("ping", models.RoutePing, func(fixture) proto.Message { return &models.PingRequest{} }, everyIdentity),

	anyCase("upsert a domain", models.RouteUpsertDomain, func(f fixture) proto.Message {
		return &models.UpsertDomainRequest{Domain: f.domain + "-new", TtlSeconds: 60}
	}, apiCallers),
	anyCase("list domains", models.RouteDomains, func(fixture) proto.Message { return &models.DomainsRequest{} }, apiCallers),

	anyCase("desire an LRP", models.RouteDesireDesiredLRP, func(f fixture) proto.Message {
		return &models.DesireLRPRequest{DesiredLrp: newLRP(f.otherGuid, f.domain, 1)}
	}, apiCallers),
	anyCase("get an LRP", models.RouteDesiredLRPByProcessGuid, func(f fixture) proto.Message {
		return &models.DesiredLRPByProcessGuidRequest{ProcessGuid: f.guid}
	}, apiCallers),
	anyCase("list LRPs", models.RouteDesiredLRPs, func(f fixture) proto.Message {
		return &models.DesiredLRPsRequest{Domain: f.domain}
	}, apiCallers),
	anyCase("list scheduling infos", models.RouteDesiredLRPSchedulingInfos, func(f fixture) proto.Message {
		return &models.DesiredLRPSchedulingInfosRequest{Domain: f.domain}
	}, apiCallers),
	anyCase("scale an LRP", models.RouteUpdateDesiredLRP, func(f fixture) proto.Message {
		three := int32(3)
		return &models.UpdateDesiredLRPRequest{ProcessGuid: f.guid, Update: &models.DesiredLRPUpdate{Instances: &three}}
	}, apiCallers),
	{name: "update an LRP overriding the freeze", route: models.RouteUpdateDesiredLRP, request: func(f fixture) proto.Message {
		return &models.UpdateDesiredLRPRequest{ProcessGuid: f.guid, Update: &models.DesiredLRPUpdate{
			Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "/bin/app"}}, UpdateIdentifier: "hotfix",
			OverrideFreeze: true, OverrideReason: "INC-42"}}
	}, allowed: []string{asOperator}, operatorOnly: "update.override_freeze"},
	anyCase("remove an LRP", models.RouteRemoveDesiredLRP, func(f fixture) proto.Message {
		return &models.RemoveDesiredLRPRequest{ProcessGuid: f.guid}
	}, apiCallers),

	anyCase("list definitions", models.RouteDefinitions, func(f fixture) proto.Message {
		return &models.DefinitionsRequest{ProcessGuid: f.guid}
	}, apiCallers),
	// Only a cell with an instance of the definition reads it: its env
	// holds the app's secrets (guid's instances are on cell-1).
	heldCase("get a definition", models.RouteDefinition, func(f fixture) proto.Message {
		return &models.DefinitionRequest{ProcessGuid: f.guid, DefinitionId: f.definitionID}
	}, []string{asAPIClient, asOperator, asCell1}),

	cellCase(cell1, "list cell-1's actual LRPs", models.RouteActualLRPs, func(fixture) proto.Message {
		return &models.ActualLRPsRequest{CellId: cell1}
	}, []string{asAPIClient, asOperator, asCell1}),
	cellCase("", "list an LRP's actual LRPs on every cell", models.RouteActualLRPs, func(f fixture) proto.Message {
		return &models.ActualLRPsRequest{ProcessGuid: f.guid}
	}, apiCallers),

	anyCase("read a rollout", models.RouteRolloutStatus, func(f fixture) proto.Message {
		return &models.RolloutStatusRequest{ProcessGuid: f.guid}
	}, apiCallers),
	anyCase("roll back", models.RouteRollback, func(f fixture) proto.Message {
		return &models.RollbackRequest{ProcessGuid: f.guid, DefinitionId: f.definitionID}
	}, apiCallers),
	anyCase("abort a rollout", models.RouteAbortRollout, func(f fixture) proto.Message {
		return &models.AbortRolloutRequest{ProcessGuid: f.guid}
	}, apiCallers),
	anyCase("promote a rollout", models.RoutePromoteRollout, func(f fixture) proto.Message {
		return &models.PromoteRolloutRequest{ProcessGuid: f.guid, ToPercent: 50}
	}, apiCallers),
	anyCase("pause a rollout", models.RoutePauseRollout, func(f fixture) proto.Message {
		return &models.PauseRolloutRequest{ProcessGuid: f.guid}
	}, apiCallers),
	anyCase("resume a rollout", models.RouteResumeRollout, func(f fixture) proto.Message {
		return &models.ResumeRolloutRequest{ProcessGuid: f.guid}
	}, apiCallers),
	anyCase("edit a rollout", models.RouteEditRollout, func(f fixture) proto.Message {
		return &models.EditRolloutRequest{ProcessGuid: f.guid, MaxSurge: proto.String("2")}
	}, apiCallers),
	anyCase("plan a rollout", models.RouteRolloutPlan, func(f fixture) proto.Message {
		return &models.RolloutPlanRequest{ProcessGuid: f.guid, ReadyAfterMs: 1000, Update: &models.DesiredLRPUpdate{
			Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "/bin/app"}}, UpdateIdentifier: "planned"}}
	}, apiCallers),

	anyCase("add a freeze window", models.RouteAddFreezeWindow, func(fixture) proto.Message {
		return &models.AddFreezeWindowRequest{Window: &models.FreezeWindow{Name: "xmas", From: "2026-12-24T00:00:00Z", Until: "2026-12-27T00:00:00Z"}}
	}, []string{asOperator}),
	anyCase("remove a freeze window", models.RouteRemoveFreezeWindow, func(fixture) proto.Message {
		return &models.RemoveFreezeWindowRequest{Name: "xmas"}
	}, []string{asOperator}),
	anyCase("list freeze windows", models.RouteFreezeWindows, func(fixture) proto.Message {
		return &models.FreezeWindowsRequest{}
	}, apiCallers),

	anyCase("set a budget group", models.RouteSetBudgetGroup, func(fixture) proto.Message {
		return &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2"}}
	}, []string{asOperator}),
	anyCase("remove a budget group", models.RouteRemoveBudgetGroup, func(fixture) proto.Message {
		return &models.RemoveBudgetGroupRequest{Name: "checkout"}
	}, []string{asOperator}),
	anyCase("list budget groups", models.RouteBudgetGroups, func(fixture) proto.Message {
		return &models.BudgetGroupsRequest{}
	}, apiCallers),

	anyCase("list operations", models.RouteOperations, func(f fixture) proto.Message {
		return &models.OperationsRequest{ProcessGuid: f.guid}
	}, apiCallers),
	anyCase("get an operation", models.RouteOperation, func(f fixture) proto.Message {
		return &models.OperationRequest{Id: f.operationID}
	}, apiCallers),
	anyCase("cancel an operation", models.RouteCancelOperation, func(f fixture) proto.Message {
		return &models.CancelOperationRequest{Id: f.operationID}
	}, apiCallers),

	// A cell gets only the events about itself (events_cell_test.go).
	anyCase("subscribe to events", models.RouteEvents, func(fixture) proto.Message { return &models.EventsRequest{} },
		[]string{asAPIClient, asOperator, asCell1, asCell2}),

	anyCase("list cells", models.RouteCells, func(fixture) proto.Message { return &models.CellsRequest{} }, []string{asOperator}),
	anyCase("quarantine cell-1", models.RouteQuarantineCell, func(fixture) proto.Message {
		return &models.QuarantineCellRequest{CellId: cell1, Reason: "its disk fails"}
	}, []string{asOperator}),
	anyCase("clear cell-1's quarantine", models.RouteClearCell, func(fixture) proto.Message {
		return &models.ClearCellQuarantineRequest{CellId: cell1}
	}, []string{asOperator}),
	cellCase(cell1, "drain cell-1", models.RouteDrainCell, func(fixture) proto.Message {
		return &models.DrainCellRequest{CellId: cell1}
	}, []string{asOperator, asCell1}),
	anyCase("drain status of cell-1", models.RouteDrainStatus, func(fixture) proto.Message {
		return &models.DrainStatusRequest{CellId: cell1}
	}, []string{asOperator}),

	cellCase(cell1, "register cell-1", models.RouteRegisterCell, func(fixture) proto.Message { return registerRequest(cell1) }, []string{asCell1}),
	cellCase(cell1, "claim an instance placed on cell-1, for cell-1", models.RouteClaimActualLRP, claimFor(cell1), []string{asCell1}),
	cellCase(cell2, "claim an instance placed on cell-1, for cell-2", models.RouteClaimActualLRP, claimFor(cell2), []string{asCell2}),
	cellCase(cell1, "start cell-1's instance", models.RouteStartActualLRP, func(f fixture) proto.Message {
		return &models.StartActualLRPRequest{ProcessGuid: f.guid, InstanceGuid: instanceGuid, CellId: cell1, NetInfo: netInfo(), Routable: proto.Bool(false)}
	}, []string{asCell1}),
	cellCase(cell1, "crash cell-1's instance", models.RouteCrashActualLRP, func(f fixture) proto.Message {
		return &models.CrashActualLRPRequest{ProcessGuid: f.guid, InstanceGuid: instanceGuid, CellId: cell1, CrashReason: "exit status 1"}
	}, []string{asCell1}),
	cellCase(cell1, "fail an instance placed on cell-1", models.RouteFailActualLRP, func(f fixture) proto.Message {
		return &models.FailActualLRPRequest{ProcessGuid: f.guid, Index: 1, CellId: cell1, PlacementError: "out of disk"}
	}, []string{asCell1}),
	cellCase(cell1, "remove cell-1's instance", models.RouteRemoveActualLRP, func(f fixture) proto.Message {
		return &models.RemoveActualLRPRequest{ProcessGuid: f.guid, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, CellId: cell1}
	}, []string{asCell1}),
	cellCase(cell1, "evacuate cell-1's instance", models.RouteEvacuateActualLRP, func(f fixture) proto.Message {
		return &models.EvacuateActualLRPRequest{ProcessGuid: f.guid, InstanceGuid: instanceGuid, CellId: cell1}
	}, []string{asCell1}),
	cellCase(cell1, "report what cell-1 runs", models.RouteBulkReport, func(f fixture) proto.Message {
		return &models.BulkReportRequest{CellId: cell1, Instances: []*models.ReportedInstance{reported(f.guid, 0, models.ActualLRP_RUNNING)}}
	}, []string{asCell1}),
	cellCase(cell1, "report occupancy on cell-1", models.RouteReportOccupancy, func(f fixture) proto.Message {
		return &models.ReportOccupancyRequest{CellId: cell1, Changes: []*models.OccupancyChange{
			{ProcessGuid: f.guid, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: true},
		}}
	}, []string{asCell1}),
	cellCase(cell1, "report cell-1's health", models.RouteReportHealth, func(f fixture) proto.Message {
		return healthReport(cell1, f.guid)
	}, []string{asCell1}),
	cellCase(cell2, "report cell-2's health", models.RouteReportHealth, func(f fixture) proto.Message {
		return healthReport(cell2, f.guid)
	}, []string{asCell2}),
}

// identityOf is what the certificate of who names.
func identityOf(who string) models.Identity {
	switch who {
	case asCell1:
		return models.CellIdentity(cell1)
	case asCell2:
		return models.CellIdentity(cell2)
	case asAPIClient:
		return models.RoleIdentity(models.RoleAPIClient)
	case asOperator:
		return models.RoleIdentity(models.RoleOperator)
	case asBoard:
		return models.RoleIdentity(models.RoleBoard)
	}
	return models.NoIdentity
}

// refusalFor is the message refusing who the request of c, as the policy
// words it.
func refusalFor(who string, c policyCase) string {
	id := identityOf(who)
	switch {
	case id.Role == models.RoleCell && c.held:
		return id.String() + " may call " + c.route + " only about instances placed on it or run by it"
	case id.Role == models.RoleCell && c.ownCell && c.actsFor == "":
		return id.String() + " may call " + c.route + " only for itself (cell_id " + strconv.Quote(id.CellID) + "), and the request names no cell"
	case id.Role == models.RoleCell && c.ownCell:
		return id.String() + " may not act for cell " + strconv.Quote(c.actsFor) + " on " + c.route
	case id.Role == models.RoleCell:
		return id.String() + " may not call " + c.route
	case id.Role == models.RoleAPIClient && c.operatorOnly != "":
		return "an api-client certificate may not call " + c.route + " with " + c.operatorOnly + ": operators only"
	case id.Role == models.RoleAPIClient:
		return "an api-client certificate may not call " + c.route
	case id.Role == models.RoleOperator:
		return "an operator certificate may not call " + c.route
	case id.Role == models.RoleBoard:
		return "a board certificate may not call " + c.route
	}
	return "a certificate naming no corkboard identity may not call " + c.route
}

// declaredRoutes is every route models/routes.go declares (a constant
// named Route...), read from its source so that a route added there
// without a policy case fails here.
func declaredRoutes() []string {
	GinkgoHelper()
	file, err := parser.ParseFile(token.NewFileSet(), "../models/routes.go", nil, 0)
	Expect(err).NotTo(HaveOccurred())
	var routes []string
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			value := spec.(*ast.ValueSpec)
			for i, name := range value.Names {
				if !strings.HasPrefix(name.Name, "Route") {
					continue
				}
				literal, ok := value.Values[i].(*ast.BasicLit)
				Expect(ok).To(BeTrue(), "%s is not a string literal", name.Name)
				route, err := strconv.Unquote(literal.Value)
				Expect(err).NotTo(HaveOccurred())
				routes = append(routes, route)
			}
		}
	}
	Expect(routes).NotTo(BeEmpty())
	return routes
}

var policyFixture = fixture{
	guid: "web", otherGuid: "worker", domain: "cf-apps",
	definitionID: "d1", operationID: "0123456789abcdef01234567",
}

var _ = Describe("The authorization policy", func() {
	It("has a case here and an entry in the policy for every route of models/routes.go", func() {
		var covered []string
		for _, c := range policyCases {
			covered = append(covered, c.route)
		}
		for _, route := range declaredRoutes() {
			Expect(covered).To(ContainElement(route), "no policy case for %s", route)
			Expect(handlers.PolicyRoutes()).To(ContainElement(route), "no policy for %s", route)
		}
		Expect(handlers.PolicyRoutes()).To(ConsistOf(declaredRoutes()))
	})

	It("has valid requests in its cases", func() {
		for _, c := range policyCases {
			req, ok := c.request(policyFixture).(interface{ Validate() error })
			Expect(ok).To(BeTrue())
			Expect(req.Validate()).To(Succeed(), c.name)
		}
	})

	var entries []TableEntry
	for _, c := range policyCases {
		for _, who := range everyIdentity {
			allowed := slices.Contains(c.allowed, who)
			verdict := "is refused"
			if allowed {
				verdict = "is allowed"
			}
			entries = append(entries, Entry(who+" "+verdict+" to "+c.name+" ("+c.route+")", who, c, allowed))
		}
	}
	DescribeTable("who may make which request",
		func(who string, c policyCase, allowed bool) {
			err := handlers.Authorize(identityOf(who), c.route, c.request(policyFixture))
			if c.held && identityOf(who).Role == models.RoleCell {
				Expect(err).To(BeNil(), "the store decides, not the policy")
				return
			}
			if allowed {
				Expect(err).To(BeNil())
				return
			}
			Expect(err.GetType()).To(Equal(models.Error_Unauthorized))
			Expect(err.GetMessage()).To(Equal(refusalFor(who, c)))
		},
		entries,
	)

	// Asked before the request is decoded, the route's part of the policy
	// refuses exactly the callers the whole policy refuses whatever they
	// ask, with the same answer, and no caller it would allow.
	DescribeTable("who is refused before the request is decoded",
		func(who string, c policyCase, allowed bool) {
			early := handlers.AuthorizeRoute(identityOf(who), c.route)
			whole := handlers.Authorize(identityOf(who), c.route, c.request(policyFixture))
			if early != nil {
				Expect(whole.GetType()).To(Equal(early.GetType()))
				Expect(whole.GetMessage()).To(Equal(early.GetMessage()), "the answer after decoding would have been the same")
				Expect(early.GetMessage()).To(HaveSuffix(" may not call " + c.route))
				return
			}
			if whole == nil || c.held || c.ownCell || c.operatorOnly != "" {
				return
			}
			Fail(fmt.Sprintf("%s is refused %s whatever it asks (%q), but only after decoding", who, c.route, whole.GetMessage()))
		},
		entries,
	)

	DescribeTable("how a refusal reads",
		func(id models.Identity, route string, req proto.Message, message string) {
			err := handlers.Authorize(id, route, req)
			Expect(err.GetType()).To(Equal(models.Error_Unauthorized))
			Expect(err.GetMessage()).To(Equal(message))
		},
		Entry("a cell acting for another", models.CellIdentity("cell-z1"), models.RouteClaimActualLRP,
			&models.ClaimActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: "cell-z2"},
			`cell "cell-z1" may not act for cell "cell-z2" on /v1/actual_lrps/claim`),
		Entry("a cell registering another", models.CellIdentity("cell-z1"), models.RouteRegisterCell,
			registerRequest("cell-z2"), `cell "cell-z1" may not act for cell "cell-z2" on /v1/cells/register`),
		Entry("a cell listing every cell's instances", models.CellIdentity("cell-z1"), models.RouteActualLRPs,
			&models.ActualLRPsRequest{Domain: "cf-apps"},
			`cell "cell-z1" may call /v1/actual_lrps/list only for itself (cell_id "cell-z1"), and the request names no cell`),
		Entry("a cell desiring", models.CellIdentity("cell-z1"), models.RouteDesireDesiredLRP,
			&models.DesireLRPRequest{DesiredLrp: newLRP("web", "cf-apps", 1)}, `cell "cell-z1" may not call /v1/desired_lrps/desire`),
		Entry("an API client claiming", models.RoleIdentity(models.RoleAPIClient), models.RouteClaimActualLRP,
			&models.ClaimActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: "cell-z1"},
			`an api-client certificate may not call /v1/actual_lrps/claim`),
		Entry("an API client draining", models.RoleIdentity(models.RoleAPIClient), models.RouteDrainCell,
			&models.DrainCellRequest{CellId: "cell-z1"}, `an api-client certificate may not call /v1/cells/drain`),
		Entry("an operator registering a cell", models.RoleIdentity(models.RoleOperator), models.RouteRegisterCell,
			registerRequest("cell-z1"), `an operator certificate may not call /v1/cells/register`),
		Entry("the board calling the API", models.RoleIdentity(models.RoleBoard), models.RouteDesiredLRPs,
			&models.DesiredLRPsRequest{}, `a board certificate may not call /v1/desired_lrps/list`),
		Entry("a certificate without a role", models.NoIdentity, models.RouteEvents,
			&models.EventsRequest{}, `a certificate naming no corkboard identity may not call /v1/events`),
	)

	Describe("a request without a verified client certificate", func() {
		It("may call everything in development mode, where nothing requires one", func() {
			for _, c := range policyCases {
				Expect(handlers.AuthorizeWithoutCertificate(false, c.route, c.request(policyFixture))).To(BeNil(), c.name)
			}
		})

		It("may call only ping where certificates are required", func() {
			for _, c := range policyCases {
				err := handlers.AuthorizeWithoutCertificate(true, c.route, c.request(policyFixture))
				if c.route == models.RoutePing {
					Expect(err).To(BeNil())
					continue
				}
				Expect(err.GetType()).To(Equal(models.Error_Unauthorized), c.name)
				Expect(err.GetMessage()).To(Equal("a request without a verified client certificate may not call "+c.route), c.name)
			}
		})
	})
})
