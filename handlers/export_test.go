package handlers

import (
	"crypto/x509"
	"math/big"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// Authorize applies the authorization policy to req on route for a caller
// whose verified client certificate names id, for the policy's table
// test. req must be a request message.
func Authorize(id models.Identity, route string, req proto.Message) *models.Error {
	who := caller{checked: true, identity: id, certificate: &x509.Certificate{SerialNumber: big.NewInt(1)}}
	return authorize(who, route, req.(request))
}

// AuthorizeRoute is the policy's part the route alone decides, asked
// before a request is decoded, for a caller whose certificate names id.
func AuthorizeRoute(id models.Identity, route string) *models.Error {
	who := caller{checked: true, identity: id, certificate: &x509.Certificate{SerialNumber: big.NewInt(1)}}
	return authorizeRoute(who, route)
}

// AuthorizeWithoutCertificate applies the policy to a request that carries
// no verified client certificate, on a board that requires one or not.
func AuthorizeWithoutCertificate(required bool, route string, req proto.Message) *models.Error {
	return authorize(caller{checked: required, identity: models.NoIdentity}, route, req.(request))
}

// PolicyRoutes lists the routes the policy table has an entry for.
func PolicyRoutes() []string {
	routes := make([]string, 0, len(routePolicy))
	for route := range routePolicy {
		routes = append(routes, route)
	}
	return routes
}

// SetStreamPage sets how many items every page of a streamed list reads
// at most (its first and its largest), until the returned func restores
// them.
func SetStreamPage(n int) (restore func()) {
	return SetStreamPages(n, n)
}

// SetStreamPages sets a streamed list's first page and its largest, until
// restore.
func SetStreamPages(first, largest int) (restore func()) {
	was, wasMax := streamPage, streamPageMax
	streamPage, streamPageMax = first, largest
	return func() { streamPage, streamPageMax = was, wasMax }
}

// StreamPage is how many items a streamed list's first page reads.
func StreamPage() int { return streamPage }

// CellsOnlyRoutes lists the routes the policy lets only cells call.
func CellsOnlyRoutes() []string {
	var routes []string
	for route, rule := range routePolicy {
		if rule.onlyCells() {
			routes = append(routes, route)
		}
	}
	return routes
}

// SetStreamPageBytes sets how many bytes of items end a streamed list's
// page, until restore.
func SetStreamPageBytes(n int) (restore func()) {
	was := streamPageBytes
	streamPageBytes = n
	return func() { streamPageBytes = was }
}

// SetOnePageBytes sets how many bytes of items end a page asked for with
// a limit, until restore.
func SetOnePageBytes(n int) (restore func()) {
	was := onePageBytes
	onePageBytes = n
	return func() { onePageBytes = was }
}

// NextPageLimit is nextPageLimit, for its table test.
var NextPageLimit = nextPageLimit
