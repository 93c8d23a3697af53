package handlers

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Authorization.
//
// With TLS and client certificates, every request's caller is who its
// verified client certificate says (models.IdentityFromCertificate), and
// the route policy below says what it may call. The handlers check it in
// one place, in two steps: whether the caller's role may call the route
// at all, before the request is decoded (authorizeRoute), and the rest,
// after it is decoded and validated and before the store is called
// (api.serve, and serveEvents for the event stream); a
// refusal is the route's ordinary 200 answer with an Unauthorized error
// naming the caller and the route, and nothing is written.
//
// The policy, route by route:
//
//	ping                                       anyone (any certificate, or none)
//	domains, desired LRPs, definitions,
//	rollouts, operations                       api-client, operator
//	events                                     api-client, operator; any cell, which gets only the events about itself
//	actual_lrps/list                           api-client, operator; a cell with its own cell_id as the filter
//	definitions/get                            api-client, operator; any cell (a rep fetches the definitions of what it runs)
//	cells/list                                 operator
//	freeze_windows/add|remove                  operator
//	freeze_windows/list                        api-client, operator
//	budget_groups/set|remove                   operator
//	budget_groups/list                         api-client, operator
//	desired_lrps/update with override_freeze   operator (operatorOnly)
//	cells/drain                                operator; a cell for itself (a rep marks its cell draining when it evacuates)
//	cells/register, cells/report,
//	cells/report_health,
//	actual_lrps/claim|start|crash|fail|remove|
//	evacuate|occupancy                         a cell, for itself only
//	GET /prometheus/targets                    api-client, operator (prometheusTargetsAccess)
//	GET /metrics                               api-client, operator (metricsAccess)
//
// "For itself" means the cell id the request acts for (cell.cell_id in a
// registration, cell_id in the others) is the certificate's. The store
// already refuses a lifecycle call for an instance not placed on or owned
// by the cell the request names, so a rep can touch only its own
// instances. The board's own certificate, and one naming no role, may call
// only ping.
//
// Without TLS (development mode), and on TLS that verifies no client
// certificate, a request carries no certificate and everything is allowed,
// as before. WithRequiredClientCertificates, which a board serving TLS
// with client certificates sets, makes such a request a caller without a
// role instead (ping only), so that a misconfigured listener cannot open
// the API to anyone. Only a verified certificate counts
// (r.TLS.VerifiedChains[0][0], which is r.TLS.PeerCertificates[0] once
// verified): one a listener requested without verifying proves nothing.

// caller is who sent a request, as far as the board can tell.
type caller struct {
	// checked says the policy applies: the request carries a verified
	// client certificate, or the board requires one. In development mode
	// it is false and every route is allowed.
	checked bool
	// identity is what the certificate says; models.NoIdentity without one.
	identity models.Identity
	// certificate is the verified client certificate; nil without one.
	certificate *x509.Certificate
}

// identify reads the caller off the request's TLS state. Only a verified
// certificate counts: one the listener requested but did not verify
// (tls.RequestClientCert, tls.RequireAnyClientCert) proves nothing.
func identify(r *http.Request, requireCertificates bool) caller {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		return caller{checked: true, identity: models.IdentityFromCertificate(cert), certificate: cert}
	}
	return caller{checked: requireCertificates, identity: models.NoIdentity}
}

// isCell says whether a verified certificate names the caller a cell's
// rep.
func (c caller) isCell() bool {
	return c.certificate != nil && c.identity.Role == models.RoleCell
}

// description names the caller in a refusal: `cell "cell-z1"`, `an
// api-client certificate`, ...
func (c caller) description() string {
	if c.certificate == nil {
		return "a request without a verified client certificate"
	}
	return c.identity.Certificate()
}

// name is the caller as an operation's requested_by names it, e.g.
// "operator (cert CN=alice)". The subject's common name tells people
// apart within a role; without a printable one, the serial number does.
func (c caller) name() string {
	if cn := strings.TrimSpace(c.certificate.Subject.CommonName); isSaneCallerName(cn) {
		return c.identity.String() + " (cert CN=" + cn + ")"
	}
	if c.certificate.SerialNumber != nil {
		return c.identity.String() + " (cert serial " + c.certificate.SerialNumber.Text(16) + ")"
	}
	return c.identity.String()
}

// access says who may call one route.
type access struct {
	// anyone may call the route, with or without a role.
	anyone bool
	// apiClient and operator let those roles call the route.
	apiClient bool
	operator  bool
	// cell lets a cell's rep call the route: see cellRule.
	cell cellRule
	// operatorOnly, when set, names the part of a request that only an
	// operator may ask for ("" when the request asks for none): an
	// api-client may call the route, but not with it.
	operatorOnly func(request) string
}

// cellRule is what a cell may do on a route.
type cellRule struct {
	// anyCell: every cell may call the route, whatever the request.
	anyCell bool
	// actsFor, when set, lets a cell call the route for itself only: it
	// returns the cell the request acts for, which must be the
	// certificate's.
	actsFor func(request) string
	// holds, when set, lets a cell make the request only about instances
	// placed on it or run by it, which the store says: a rep reads the
	// definitions of its own instances, never another cell's (their
	// environment holds other apps' secrets).
	holds func(ctx context.Context, instances db.ActualLRPDB, req request, cellID string) (bool, error)
}

var (
	anyone     = access{anyone: true}
	apiClients = access{apiClient: true, operator: true}
	operators  = access{operator: true}
)

// andCells lets cells call the route too, as rule says, beside the roles
// of a.
func (a access) andCells(rule cellRule) access {
	a.cell = rule
	return a
}

// withOperatorOnly keeps the part of a request that part names for
// operators (see access.operatorOnly).
func (a access) withOperatorOnly(part func(request) string) access {
	a.operatorOnly = part
	return a
}

// operatorOnlyPart is the part of req only operators may ask for, "" for
// none.
func (a access) operatorOnlyPart(req request) string {
	if a.operatorOnly == nil {
		return ""
	}
	return a.operatorOnly(req)
}

// overridesFreeze names an update's override of the freeze windows
// (update.override_freeze): an operator's decision, audited in the
// operation.
func overridesFreeze(req request) string {
	if update, ok := req.(*models.UpdateDesiredLRPRequest); ok && update.GetUpdate().GetOverrideFreeze() {
		return "update.override_freeze"
	}
	return ""
}

// cellsOnly lets only cells call the route, as rule says.
func cellsOnly(rule cellRule) access {
	return access{cell: rule}
}

// onlyCells says a's route is one of a cell's own calls — its presence
// (register, heartbeat), bulk report, instances' lifecycle, occupancy,
// health report —
// which only cells may make: the calls the board keeps room for that API
// clients cannot use (see cellCall).
func (a access) onlyCells() bool {
	return !a.anyone && !a.apiClient && !a.operator
}

var everyCell = cellRule{anyCell: true}

// ownCell is the rule "for itself", cellID being where a request of type R
// names the cell it acts for.
func ownCell[R request](cellID func(R) string) cellRule {
	return cellRule{actsFor: func(req request) string {
		typed, ok := req.(R)
		if !ok {
			// A table entry for the wrong request type: it names no cell,
			// so no cell passes, and the table test says which.
			return ""
		}
		return cellID(typed)
	}}
}

// routePolicy is the policy table: every route the API serves has an
// entry (New panics otherwise), and a route is refused to every role its
// entry does not name.
var routePolicy = map[string]access{
	models.RoutePing: anyone,

	models.RouteUpsertDomain: apiClients,
	models.RouteDomains:      apiClients,

	models.RouteDesireDesiredLRP:          apiClients,
	models.RouteDesiredLRPByProcessGuid:   apiClients,
	models.RouteDesiredLRPs:               apiClients,
	models.RouteDesiredLRPSchedulingInfos: apiClients,
	models.RouteUpdateDesiredLRP:          apiClients.withOperatorOnly(overridesFreeze),
	models.RouteRemoveDesiredLRP:          apiClients,

	models.RouteDefinitions: apiClients,
	models.RouteDefinition:  apiClients.andCells(cellRule{holds: holdsDefinition}),

	models.RouteActualLRPs: apiClients.andCells(ownCell(func(r *models.ActualLRPsRequest) string { return r.GetCellId() })),

	models.RouteRolloutStatus:  apiClients,
	models.RouteRollback:       apiClients,
	models.RouteAbortRollout:   apiClients,
	models.RoutePromoteRollout: apiClients,
	models.RoutePauseRollout:   apiClients,
	models.RouteResumeRollout:  apiClients,
	models.RouteEditRollout:    apiClients,
	models.RouteRolloutPlan:    apiClients,

	models.RouteAddFreezeWindow:    operators,
	models.RouteRemoveFreezeWindow: operators,
	models.RouteFreezeWindows:      apiClients,

	models.RouteSetBudgetGroup:    operators,
	models.RouteRemoveBudgetGroup: operators,
	models.RouteBudgetGroups:      apiClients,

	models.RouteOperations:      apiClients,
	models.RouteOperation:       apiClients,
	models.RouteCancelOperation: apiClients,

	// A cell's rep follows its own rows on the stream: serveEvents scopes
	// a cell's subscription to the events about that cell.
	models.RouteEvents: apiClients.andCells(everyCell),

	models.RouteCells:          operators,
	models.RouteQuarantineCell: operators,
	models.RouteClearCell:      operators,
	models.RouteDrainStatus:    operators,
	models.RouteDrainCell:      operators.andCells(ownCell(func(r *models.DrainCellRequest) string { return r.GetCellId() })),

	models.RouteRegisterCell:      cellsOnly(ownCell(func(r *models.RegisterCellRequest) string { return r.GetCell().GetCellId() })),
	models.RouteClaimActualLRP:    cellsOnly(ownCell(func(r *models.ClaimActualLRPRequest) string { return r.GetCellId() })),
	models.RouteStartActualLRP:    cellsOnly(ownCell(func(r *models.StartActualLRPRequest) string { return r.GetCellId() })),
	models.RouteCrashActualLRP:    cellsOnly(ownCell(func(r *models.CrashActualLRPRequest) string { return r.GetCellId() })),
	models.RouteFailActualLRP:     cellsOnly(ownCell(func(r *models.FailActualLRPRequest) string { return r.GetCellId() })),
	models.RouteRemoveActualLRP:   cellsOnly(ownCell(func(r *models.RemoveActualLRPRequest) string { return r.GetCellId() })),
	models.RouteEvacuateActualLRP: cellsOnly(ownCell(func(r *models.EvacuateActualLRPRequest) string { return r.GetCellId() })),
	models.RouteBulkReport:        cellsOnly(ownCell(func(r *models.BulkReportRequest) string { return r.GetCellId() })),
	models.RouteReportOccupancy:   cellsOnly(ownCell(func(r *models.ReportOccupancyRequest) string { return r.GetCellId() })),
	models.RouteReportHealth:      cellsOnly(ownCell(func(r *models.ReportHealthRequest) string { return r.GetCellId() })),
}

// prometheusTargetsAccess is who may read GET /prometheus/targets, which
// is not an API call and so not in routePolicy: it names every running
// instance's address and cell, which is what actual_lrps/list tells
// API clients and operators and never a cell about another cell's
// instances. A Prometheus server reads it with an api-client or operator
// certificate, as it reads GET /metrics (metricsAccess).
var prometheusTargetsAccess = apiClients

// authorize is the policy: nil when who may make req on route, an
// Unauthorized error saying why not otherwise. req is the decoded, valid
// request message.
func authorize(who caller, route string, req request) *models.Error {
	if !who.checked {
		return nil
	}
	rule, refused := ruleOf(route)
	if refused != nil {
		return refused
	}
	return authorizeAccess(who, route, req, rule)
}

// ruleOf is route's rule in the policy, or the refusal of a route that
// has none: unreachable for the routes New serves, and a route added
// without a policy is nobody's.
func ruleOf(route string) (access, *models.Error) {
	rule, known := routePolicy[route]
	if !known {
		return access{}, models.NewError(models.Error_Unauthorized, "%s has no authorization policy", route)
	}
	return rule, nil
}

// authorizeRoute is the part of the policy the route alone decides: nil
// when who's role may call route with some request, else the refusal
// authorize would give whatever the request. The API asks it before it
// decodes a request, so that a caller the route is not for never makes
// the board decode, validate or hold what it sent: a megabyte of
// protobuf can decode to a hundred times that in memory.
func authorizeRoute(who caller, route string) *models.Error {
	if !who.checked {
		return nil
	}
	rule, refused := ruleOf(route)
	if refused != nil {
		return refused
	}
	return refuseRole(who, route, rule)
}

// refuseRole is the refusal of a caller whose role the rule does not let
// call route with any request; nil when it does.
func refuseRole(who caller, route string, rule access) *models.Error {
	if rule.letsRoleCall(who.identity.Role) {
		return nil
	}
	return models.NewError(models.Error_Unauthorized, "%s may not call %s", who.description(), route)
}

// letsRoleCall says whether the rule lets role call its route with some
// request.
func (a access) letsRoleCall(role models.Role) bool {
	switch {
	case a.anyone:
		return true
	case role == models.RoleAPIClient:
		return a.apiClient
	case role == models.RoleOperator:
		return a.operator
	case role == models.RoleCell:
		return a.cell.anyCell || a.cell.holds != nil || a.cell.actsFor != nil
	}
	return false
}

// authorizeAccess is authorize with the route's rule given: nil when who
// may make req on route under rule. A route with no request message
// (GET /prometheus/targets) passes a nil req, which no cell rule but
// anyCell lets through.
func authorizeAccess(who caller, route string, req request, rule access) *models.Error {
	if !who.checked || rule.anyone {
		return nil
	}
	if refused := refuseRole(who, route, rule); refused != nil {
		return refused
	}
	switch who.identity.Role {
	case models.RoleAPIClient:
		if part := rule.operatorOnlyPart(req); part != "" {
			return models.NewError(models.Error_Unauthorized, "%s may not call %s with %s: operators only",
				who.description(), route, part)
		}
	case models.RoleCell:
		return authorizeCell(who, route, req, rule.cell)
	}
	return nil
}

// authorizeCell is the cell's part of a rule that lets cells call its
// route (access.letsRoleCall).
func authorizeCell(who caller, route string, req request, rule cellRule) *models.Error {
	if rule.anyCell || rule.holds != nil {
		// holds is asked of the store after the policy (authorizeHolding).
		return nil
	}
	actsFor := rule.actsFor(req)
	if actsFor == who.identity.CellID {
		return nil
	}
	if actsFor == "" {
		return models.NewError(models.Error_Unauthorized, "%s may call %s only for itself (cell_id %s), and the request names no cell",
			who.description(), route, strconv.Quote(who.identity.CellID))
	}
	return models.NewError(models.Error_Unauthorized, "%s may not act for cell %s on %s",
		who.description(), strconv.Quote(actsFor), route)
}

// checkPolicyCovers panics unless every route in routes has a policy: a
// route added without one is a programming error, caught when the handler
// is built rather than by the first caller refused.
func checkPolicyCovers(routes []string) {
	for _, route := range routes {
		if _, ok := routePolicy[route]; !ok {
			panic(fmt.Sprintf("%s: no entry in the authorization policy (handlers/authorize.go)", route))
		}
	}
}

// authorizeHolding is the part of the policy the store answers: a cell
// whose rule has holds may make the request only about its own
// instances. nil when the policy has nothing more to ask.
func authorizeHolding(ctx context.Context, instances db.ActualLRPDB, who caller, route string, req request) (*models.Error, error) {
	if !who.checked || who.identity.Role != models.RoleCell {
		return nil, nil
	}
	holds := routePolicy[route].cell.holds
	if holds == nil {
		return nil, nil
	}
	ok, err := holds(ctx, instances, req, who.identity.CellID)
	if err != nil || ok {
		return nil, err
	}
	return models.NewError(models.Error_Unauthorized, "%s may call %s only about instances placed on it or run by it",
		who.description(), route), nil
}

// holdsDefinition: the cell has an instance of the definition, of any
// presence (placed on it and not yet claimed, claimed, running,
// evacuating, retiring).
func holdsDefinition(ctx context.Context, instances db.ActualLRPDB, req request, cellID string) (bool, error) {
	r, ok := req.(*models.DefinitionRequest)
	if !ok {
		return false, nil
	}
	rows, err := instances.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: r.GetProcessGuid(), CellID: cellID})
	if err != nil {
		return false, err
	}
	for _, row := range rows {
		if row.GetDefinitionId() == r.GetDefinitionId() {
			return true, nil
		}
	}
	return false, nil
}
