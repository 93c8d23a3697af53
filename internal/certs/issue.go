package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Lifetimes of what New and Issue make: a development CA outlives the
// leaves it signs by years, so re-issuing a leaf never needs a new CA.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultLeafValidity = 365 * 24 * time.Hour

	// backdate covers clocks a little behind the issuer's.
	backdate = 5 * time.Minute
)

// Organization is the subject organization of what this package makes.
const Organization = "Corkboard"

// CA is a certificate authority: its certificate and its key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed ECDSA P-256 CA valid for validity from now.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{Organization}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Leaves only: a stolen leaf key cannot sign more certificates.
		MaxPathLenZero: true,
		SubjectKeyId:   keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// LoadCA reads a CA's certificate and key from PEM files.
func LoadCA(certPath, keyPath string) (*CA, error) {
	cert, err := ReadCertificate(certPath)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s: not a CA certificate", certPath)
	}
	raw, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", keyPath)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if parsed, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
			return nil, fmt.Errorf("%s: %w", keyPath, err)
		}
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an ECDSA key", keyPath)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s: the key is not the key of %s", keyPath, certPath)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// CertPEM is the CA certificate in PEM.
func (ca *CA) CertPEM() []byte { return encodeCert(ca.Cert.Raw) }

// KeyPEM is the CA key in PEM (PKCS #8).
func (ca *CA) KeyPEM() ([]byte, error) { return encodeKey(ca.Key) }

// Pool is a pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// LeafRequest says what a leaf certificate is for.
type LeafRequest struct {
	// CommonName is for people reading the certificate; the identity is
	// what peers go by. Defaults to the identity's URI.
	CommonName string
	// Identity goes into the URI SANs (models.Identity.URI).
	Identity models.Identity
	// Server makes it a server certificate too, for localhost, 127.0.0.1
	// and Hosts. Every leaf is a client certificate.
	Server bool
	// Hosts are further DNS names or IP addresses of a server.
	Hosts []string
	// Validity defaults to DefaultLeafValidity.
	Validity time.Duration
}

// Leaf is an issued certificate and its key.
type Leaf struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// CertPEM is the leaf certificate in PEM.
func (l *Leaf) CertPEM() []byte { return encodeCert(l.Cert.Raw) }

// KeyPEM is the leaf key in PEM (PKCS #8).
func (l *Leaf) KeyPEM() ([]byte, error) { return encodeKey(l.Key) }

// Issue signs a new leaf certificate with a fresh ECDSA P-256 key. It
// never outlives the CA.
func (ca *CA) Issue(req LeafRequest) (*Leaf, error) {
	uri := req.Identity.URI()
	if uri == nil {
		return nil, fmt.Errorf("identity %s: no certificate can carry it (a cell needs a valid cell id; roles are %s, %s, %s)",
			req.Identity, models.RoleAPIClient, models.RoleOperator, models.RoleBoard)
	}
	validity := req.Validity
	if validity <= 0 {
		validity = DefaultLeafValidity
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	commonName := req.CommonName
	if commonName == "" {
		commonName = uri.String()
	}
	template := &x509.Certificate{
		SerialNumber:   serial,
		Subject:        pkix.Name{CommonName: commonName, Organization: []string{Organization}},
		NotBefore:      now.Add(-backdate),
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:           []*url.URL{uri},
		SubjectKeyId:   keyID(&key.PublicKey),
		AuthorityKeyId: ca.Cert.SubjectKeyId,
	}
	if req.Server {
		template.ExtKeyUsage = append(template.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, host := range ServerHosts(req.Hosts) {
			if ip := net.ParseIP(host); ip != nil {
				template.IPAddresses = append(template.IPAddresses, ip)
			} else {
				template.DNSNames = append(template.DNSNames, host)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %s: %w", uri, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Leaf{Cert: cert, Key: key}, nil
}

// ServerHosts is what a server certificate covers: localhost, 127.0.0.1
// and hosts, each once, in that order.
func ServerHosts(hosts []string) []string {
	all := []string{"localhost", "127.0.0.1"}
	for _, host := range hosts {
		seen := false
		for _, have := range all {
			seen = seen || have == host
		}
		if host != "" && !seen {
			all = append(all, host)
		}
	}
	return all
}

// ReadCertificate reads the first certificate of a PEM file.
func ReadCertificate(path string) (*x509.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, raw = pem.Decode(raw)
		if block == nil {
			return nil, fmt.Errorf("%s: no CERTIFICATE PEM block", path)
		}
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return cert, nil
		}
	}
}

// WriteFile writes data to path by way of a temporary file in the same
// directory, so that a reader never sees half a key or certificate, with
// mode perm (0600 for keys).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	// WriteFile keeps the mode of a file that already existed.
	if err := os.Chmod(tmp, perm); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newSerial is a random 128-bit serial number, as RFC 5280 allows (at most
// 20 octets, positive).
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	if serial.Sign() == 0 {
		return nil, errors.New("serial number: zero")
	}
	return serial, nil
}

// keyID is the subject key identifier of a public key: a hash of its
// encoding, as RFC 7093 suggests.
func keyID(pub *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}
