package models

import (
	"crypto/x509"
	"net/url"
	"strconv"
	"strings"
)

// Identities in client certificates.
//
// When the board serves TLS with required client certificates, a caller is
// who its certificate says it is, never what its request body says. The
// certificate says it in a URI subject alternative name, in one of these
// forms (stable: the certificate generator writes them, the board and the
// reps read them):
//
//	corkboard://cell/<cell_id>     the rep of the cell <cell_id> (a valid cell_id)
//	corkboard://role/api-client    an API client, e.g. Cloud Controller
//	corkboard://role/operator      an operator (the cork CLI)
//	corkboard://role/board         the board itself, when it calls reps
//
// The scheme and the host ("cell", "role") are lower case, the path is one
// segment with no escapes, and nothing else (user, port, query, fragment)
// is set. URI SANs with another scheme are ignored, so a certificate may
// carry a SPIFFE id or the like beside its corkboard identity. A
// certificate has no role (RoleNone) when it carries no corkboard URI, a
// corkboard URI that is not one of the forms above, or two different
// identities: the board then refuses it everything but ping rather than
// guess which one was meant.
const IdentityURIScheme = "corkboard"

// Role is what kind of caller an identity is. Its values double as metric
// label values, so there are few of them.
type Role string

const (
	// RoleNone: no certificate, or one that names no usable identity.
	RoleNone Role = "none"
	// RoleCell: the rep of one cell (Identity.CellID).
	RoleCell Role = "cell"
	// RoleAPIClient: a client of the API, e.g. Cloud Controller.
	RoleAPIClient Role = "api-client"
	// RoleOperator: a person or tool operating the board (cork).
	RoleOperator Role = "operator"
	// RoleBoard: the board, when it calls reps; not an API caller.
	RoleBoard Role = "board"
)

// identityURIHost is the host of each form of identity URI.
const (
	cellURIHost = "cell"
	roleURIHost = "role"
)

// Identity is who a client certificate says its holder is.
type Identity struct {
	Role Role
	// CellID is the cell a RoleCell identity speaks for; empty otherwise.
	CellID string
}

// NoIdentity is the identity of a caller without a usable certificate.
var NoIdentity = Identity{Role: RoleNone}

// CellIdentity is the identity of the rep of cellID.
func CellIdentity(cellID string) Identity {
	return Identity{Role: RoleCell, CellID: cellID}
}

// RoleIdentity is the identity of a role without a cell: RoleAPIClient,
// RoleOperator or RoleBoard.
func RoleIdentity(role Role) Identity {
	return Identity{Role: role}
}

// URI is the URI SAN that names id in a certificate, or nil for an
// identity no certificate can carry (RoleNone, a cell without a valid
// cell id, an unknown role).
func (id Identity) URI() *url.URL {
	switch id.Role {
	case RoleCell:
		if ValidateCellID(id.CellID) != nil {
			return nil
		}
		return &url.URL{Scheme: IdentityURIScheme, Host: cellURIHost, Path: "/" + id.CellID}
	case RoleAPIClient, RoleOperator, RoleBoard:
		return &url.URL{Scheme: IdentityURIScheme, Host: roleURIHost, Path: "/" + string(id.Role)}
	}
	return nil
}

// String names the identity for people: `cell "cell-z1"`, `api-client`,
// `operator`, `board`, `none`.
func (id Identity) String() string {
	if id.Role == RoleCell {
		return "cell " + strconv.Quote(id.CellID)
	}
	return string(id.Role)
}

// Certificate names a verified certificate of the identity in a refusal,
// as the board and the reps both say it: `cell "cell-z1"`, `an
// api-client certificate`, `a board certificate`, `a certificate naming
// no corkboard identity`.
func (id Identity) Certificate() string {
	switch id.Role {
	case RoleCell:
		return id.String()
	case RoleNone:
		return "a certificate naming no corkboard identity"
	case RoleAPIClient, RoleOperator:
		return "an " + string(id.Role) + " certificate"
	}
	return "a " + string(id.Role) + " certificate"
}

// IdentityFromCertificate is the identity cert's URI SANs name (see
// IdentityURIScheme). It does not verify cert: the TLS handshake did.
func IdentityFromCertificate(cert *x509.Certificate) Identity {
	if cert == nil {
		return NoIdentity
	}
	return IdentityFromURIs(cert.URIs)
}

// IdentityFromURIs is the one identity the corkboard URIs among uris name,
// or NoIdentity when they name none, one not understood, or two different
// ones. The same identity twice is that identity.
func IdentityFromURIs(uris []*url.URL) Identity {
	found := NoIdentity
	for _, u := range uris {
		if u == nil || u.Scheme != IdentityURIScheme {
			continue
		}
		id, ok := parseIdentityURI(u)
		if !ok {
			// A corkboard URI this board does not understand may mean
			// more than it can tell: refuse rather than half-trust.
			return NoIdentity
		}
		if found.Role != RoleNone && found != id {
			return NoIdentity
		}
		found = id
	}
	return found
}

func parseIdentityURI(u *url.URL) (Identity, bool) {
	if u.Opaque != "" || u.User != nil || u.RawPath != "" || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || u.RawFragment != "" || u.Port() != "" {
		return NoIdentity, false
	}
	segment, ok := strings.CutPrefix(u.Path, "/")
	if !ok || strings.Contains(segment, "/") {
		return NoIdentity, false
	}
	switch u.Host {
	case cellURIHost:
		if ValidateCellID(segment) != nil {
			return NoIdentity, false
		}
		return CellIdentity(segment), true
	case roleURIHost:
		switch role := Role(segment); role {
		case RoleAPIClient, RoleOperator, RoleBoard:
			return RoleIdentity(role), true
		}
	}
	return NoIdentity, false
}
