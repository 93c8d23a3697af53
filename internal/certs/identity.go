// Package certs makes and loads the certificates Corkboard's components
// use for mutual TLS, and reads who a peer is from its certificate.
//
// A certificate names its holder with one URI SAN of the corkboard scheme:
//
//	corkboard://cell/<cell_id>     the rep of one cell
//	corkboard://role/api-client    an API client (schedulers, route emitters)
//	corkboard://role/operator      an operator (cork)
//	corkboard://role/board         the board, when it calls reps
//
// Every certificate is signed by one CA, which both sides of every
// connection trust and nothing else: the CA is the whole trust decision,
// and the URI is the whole identity. Development certificates come from
// cmd/corkboard-certs; production ones may come from any CA that puts the
// same URIs in.
package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Scheme is the URI scheme of Corkboard identities.
const Scheme = "corkboard"

// Roles that are not cells.
const (
	RoleAPIClient = "api-client"
	RoleOperator  = "operator"
	RoleBoard     = "board"
)

// Identity is who a certificate says its holder is: a cell's rep (Cell
// set) or a role (Role set), never both.
type Identity struct {
	Cell string
	Role string
}

// CellIdentity is the identity of the rep of cellID.
func CellIdentity(cellID string) Identity { return Identity{Cell: cellID} }

// RoleIdentity is the identity of a role (RoleOperator, ...).
func RoleIdentity(role string) Identity { return Identity{Role: role} }

// URI is the identity as it goes into a certificate's URI SANs.
func (i Identity) URI() *url.URL {
	if i.Cell != "" {
		return &url.URL{Scheme: Scheme, Host: "cell", Path: "/" + i.Cell}
	}
	return &url.URL{Scheme: Scheme, Host: "role", Path: "/" + i.Role}
}

// String is the URI, e.g. "corkboard://cell/cell-z1".
func (i Identity) String() string { return i.URI().String() }

// IsCell reports whether the identity is a cell's rep.
func (i Identity) IsCell() bool { return i.Cell != "" }

// validate refuses an identity that would not read back as itself.
func (i Identity) validate() error {
	switch {
	case i.Cell != "" && i.Role != "":
		return errors.New("identity: a cell or a role, not both")
	case i.Cell == "" && i.Role == "":
		return errors.New("identity: needs a cell or a role")
	}
	name := i.Cell + i.Role
	if strings.ContainsAny(name, "/?#%@: \t\r\n") {
		return fmt.Errorf("identity: %q must not contain '/', '?', '#', '%%', '@', ':' or white space", name)
	}
	return nil
}

// ParseIdentity reads an identity URI ("corkboard://cell/cell-z1").
func ParseIdentity(raw string) (Identity, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Identity{}, fmt.Errorf("identity %q: %w", raw, err)
	}
	return identityOfURI(u)
}

func identityOfURI(u *url.URL) (Identity, error) {
	if u.Scheme != Scheme {
		return Identity{}, fmt.Errorf("identity %q: scheme is not %s", u, Scheme)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" || name == "" || strings.Contains(name, "/") {
		return Identity{}, fmt.Errorf("identity %q: want %s://cell/<cell_id> or %s://role/<role>", u, Scheme, Scheme)
	}
	var id Identity
	switch u.Host {
	case "cell":
		id = CellIdentity(name)
	case "role":
		id = RoleIdentity(name)
	default:
		return Identity{}, fmt.Errorf("identity %q: want %s://cell/<cell_id> or %s://role/<role>", u, Scheme, Scheme)
	}
	if err := id.validate(); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// IdentityOf reads the identity of a certificate: its one URI SAN of the
// corkboard scheme. None, or more than one, is an error: a certificate
// that could be read as two callers is not trusted as either.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	var found []Identity
	for _, u := range cert.URIs {
		if u.Scheme != Scheme {
			continue
		}
		id, err := identityOfURI(u)
		if err != nil {
			return Identity{}, err
		}
		found = append(found, id)
	}
	switch len(found) {
	case 0:
		return Identity{}, fmt.Errorf("certificate %q has no %s:// URI naming its holder", cert.Subject.CommonName, Scheme)
	case 1:
		return found[0], nil
	default:
		return Identity{}, fmt.Errorf("certificate %q names %d %s:// identities; want one", cert.Subject.CommonName, len(found), Scheme)
	}
}
