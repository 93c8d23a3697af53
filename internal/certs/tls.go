package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/corkboard/corkboard/internal/configfile"
	"github.com/corkboard/corkboard/models"
)

// Files is the "tls" section of the board's and the rep's configs: PEM
// file paths.
//
//	"tls": {"ca_cert": "ca.crt", "cert": "board.crt", "key": "board.key"}
//
// ca_cert is the CA that peers' certificates must chain to (and the only
// one trusted: not the system's), cert and key are this component's own
// certificate, which it serves and presents as a client.
type Files struct {
	// CACert is the PEM file of the CA that peers' certificates must
	// chain to (the only one trusted: not the system's).
	CACert string `json:"ca_cert"`
	// Cert is the PEM file of this component's own certificate, which it
	// serves and presents as a client.
	Cert string `json:"cert"`
	// Key is the PEM file of the certificate's private key.
	Key string `json:"key"`
}

// Validate checks the section, whose key in the config is section
// ("tls"): all three files set, readable, the certificate and key a pair
// and the CA a certificate. Errors name the key ("tls.key: ...").
func (f *Files) Validate(section string) error {
	if f == nil {
		return nil
	}
	for _, field := range []struct{ key, value string }{
		{"ca_cert", f.CACert}, {"cert", f.Cert}, {"key", f.Key},
	} {
		if field.value == "" {
			return configfile.Invalid(section+"."+field.key, "required when "+section+" is set: "+section+" needs ca_cert, cert and key")
		}
	}
	if _, err := f.caPool(); err != nil {
		return configfile.Invalid(section+".ca_cert", err.Error())
	}
	if _, err := os.Stat(f.Key); err != nil {
		return configfile.Invalid(section+".key", err.Error())
	}
	if _, err := LoadKeyPair(f.Cert, f.Key); err != nil {
		return configfile.Invalid(section+".cert", err.Error())
	}
	return nil
}

// ServerConfig serves this component's certificate and requires a client
// certificate that chains to the CA. HTTP/1.1 only: deadlines and event
// streams then work as on plain HTTP (see internal/httpserver).
func (f Files) ServerConfig() (*tls.Config, error) {
	pair, err := LoadKeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	pool, err := f.caPool()
	if err != nil {
		return nil, err
	}
	return ServerConfig(pair, pool), nil
}

// ClientConfig trusts the CA alone and presents this component's
// certificate.
func (f Files) ClientConfig() (*tls.Config, error) {
	pair, err := LoadKeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	pool, err := f.caPool()
	if err != nil {
		return nil, err
	}
	return ClientConfig(pair, pool), nil
}

// ServerConfig is the server side of mutual TLS: TLS 1.2 or later, the
// client's certificate required and verified against clientCAs.
func ServerConfig(pair tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
		NextProtos:   []string{"http/1.1"},
	}
}

// ClientConfig is the client side of mutual TLS: TLS 1.2 or later, the
// server verified against rootCAs, pair presented. Presented always, even
// when the server names CAs that did not sign it: crypto/tls would then
// send no certificate, and a certificate of the wrong CA would fail as
// "certificate required" rather than as the server's "unknown
// certificate authority", which says what is wrong.
func ClientConfig(pair tls.Certificate, rootCAs *x509.CertPool) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &pair, nil
		},
		RootCAs: rootCAs,
	}
}

// ExpectPeer is config (cloned) for a client that must reach want: after
// the usual verification of the server's chain against the CA, the
// server's certificate must name want (models.IdentityFromCertificate),
// or the handshake fails with a *PeerIdentityError. The CA alone says
// only that the peer is one of ours; any rep holds a certificate the CA
// signed, so without this a rep's key would let it pose as the board, or
// as another cell's rep. Every client that dials a Corkboard component
// over TLS goes through here: client.Client and client.CellClient (the
// board), cork logs (a cell's rep).
func ExpectPeer(config *tls.Config, want models.Identity) *tls.Config {
	c := config.Clone()
	previous := config.VerifyConnection
	c.VerifyConnection = func(state tls.ConnectionState) error {
		if previous != nil {
			if err := previous(state); err != nil {
				return err
			}
		}
		return checkPeer(state, want)
	}
	return c
}

// PeerIdentityError is a handshake refused because the peer's
// certificate, though the CA signed it, names someone else.
type PeerIdentityError struct {
	Expected, Actual models.Identity
}

func (e *PeerIdentityError) Error() string {
	actual := e.Actual.String()
	if e.Actual.Role == models.RoleNone {
		actual = "no corkboard identity"
	}
	return fmt.Sprintf("tls: the peer's certificate names %s, but this connection expects %s (%s)",
		actual, e.Expected, e.Expected.URI())
}

// checkPeer requires the peer's certificate to name want. The chain was
// verified before (VerifyConnection runs after it); a config that skips
// verification still gets the identity checked on the leaf presented.
func checkPeer(state tls.ConnectionState, want models.Identity) error {
	var leaf *x509.Certificate
	switch {
	case len(state.VerifiedChains) > 0 && len(state.VerifiedChains[0]) > 0:
		leaf = state.VerifiedChains[0][0]
	case len(state.PeerCertificates) > 0:
		leaf = state.PeerCertificates[0]
	}
	if got := models.IdentityFromCertificate(leaf); got != want {
		return &PeerIdentityError{Expected: want, Actual: got}
	}
	return nil
}

// LoadKeyPair reads a certificate and its key, with errors naming the
// files.
func LoadKeyPair(certPath, keyPath string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s and %s: %w", certPath, keyPath, err)
	}
	return pair, nil
}

// LoadPool reads a PEM file of CA certificates.
func LoadPool(path string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}

func (f Files) caPool() (*x509.CertPool, error) { return LoadPool(f.CACert) }

// PeerIdentity is the identity of the client certificate a TLS connection
// verified (models.IdentityFromCertificate), and models.NoIdentity when
// there is none: plain HTTP, no certificate, or one the listener did not
// verify.
func PeerIdentity(state *tls.ConnectionState) models.Identity {
	if state == nil || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return models.NoIdentity
	}
	return models.IdentityFromCertificate(state.VerifiedChains[0][0])
}
