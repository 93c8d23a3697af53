package certs_test

import (
	"bytes"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("a CA and its leaves", func() {
	var ca *certs.CA

	BeforeEach(func() {
		var err error
		ca, err = certs.NewCA("test CA", certs.DefaultCAValidity)
		Expect(err).NotTo(HaveOccurred())
	})

	It("makes a P-256 CA for ten years that signs leaves only", func() {
		Expect(ca.Cert.IsCA).To(BeTrue())
		Expect(ca.Cert.MaxPathLenZero).To(BeTrue())
		Expect(ca.Key.Curve).To(Equal(elliptic.P256()))
		Expect(ca.Cert.NotAfter).To(BeTemporally("~", time.Now().Add(10*365*24*time.Hour), time.Hour))
		Expect(ca.Cert.KeyUsage & x509.KeyUsageCertSign).NotTo(BeZero())
	})

	It("issues a cell's certificate: its identity, a server for localhost, 127.0.0.1 and the hosts asked for, and a client, for a year", func() {
		leaf, err := ca.Issue(certs.LeafRequest{Identity: models.CellIdentity("cell-z1"), Server: true, Hosts: []string{"rep1.internal", "10.0.0.5"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(leaf.Key.Curve).To(Equal(elliptic.P256()))
		Expect(leaf.Cert.URIs).To(HaveLen(1))
		Expect(leaf.Cert.URIs[0].String()).To(Equal("corkboard://cell/cell-z1"))
		Expect(models.IdentityFromCertificate(leaf.Cert)).To(Equal(models.CellIdentity("cell-z1")))
		Expect(leaf.Cert.DNSNames).To(ConsistOf("localhost", "rep1.internal"))
		Expect(leaf.Cert.IPAddresses).To(HaveLen(2))
		Expect(leaf.Cert.IPAddresses[0].Equal(net.ParseIP("127.0.0.1"))).To(BeTrue())
		Expect(leaf.Cert.IPAddresses[1].Equal(net.ParseIP("10.0.0.5"))).To(BeTrue())
		Expect(leaf.Cert.IsCA).To(BeFalse())
		Expect(leaf.Cert.NotAfter).To(BeTemporally("~", time.Now().Add(365*24*time.Hour), time.Hour))

		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			_, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}})
			Expect(err).NotTo(HaveOccurred())
		}
		for _, host := range []string{"localhost", "127.0.0.1", "rep1.internal", "10.0.0.5"} {
			Expect(leaf.Cert.VerifyHostname(host)).To(Succeed(), host)
		}
		Expect(leaf.Cert.VerifyHostname("elsewhere.internal")).NotTo(Succeed())
	})

	It("issues client-only certificates to API clients and operators", func() {
		for _, role := range []models.Role{models.RoleAPIClient, models.RoleOperator} {
			leaf, err := ca.Issue(certs.LeafRequest{Identity: models.RoleIdentity(role)})
			Expect(err).NotTo(HaveOccurred())
			Expect(models.IdentityFromCertificate(leaf.Cert)).To(Equal(models.RoleIdentity(role)))
			_, err = leaf.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			Expect(err).NotTo(HaveOccurred())
			_, err = leaf.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			Expect(err).To(HaveOccurred(), "not a server certificate")
			Expect(leaf.Cert.DNSNames).To(BeEmpty())
		}
	})

	It("does not chain to another CA", func() {
		other, err := certs.NewCA("other CA", certs.DefaultCAValidity)
		Expect(err).NotTo(HaveOccurred())
		leaf, err := other.Issue(certs.LeafRequest{Identity: models.RoleIdentity(models.RoleOperator)})
		Expect(err).NotTo(HaveOccurred())
		_, err = leaf.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		Expect(err).To(HaveOccurred())
	})

	It("never issues a leaf that outlives its CA", func() {
		short, err := certs.NewCA("short CA", 24*time.Hour)
		Expect(err).NotTo(HaveOccurred())
		leaf, err := short.Issue(certs.LeafRequest{Identity: models.RoleIdentity(models.RoleBoard), Server: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(leaf.Cert.NotAfter).To(Equal(short.Cert.NotAfter))
	})

	It("refuses an identity that would not read back", func() {
		for _, id := range []models.Identity{models.CellIdentity("a/b"), models.RoleIdentity("admin"), models.NoIdentity, {}} {
			_, err := ca.Issue(certs.LeafRequest{Identity: id})
			Expect(err).To(MatchError(ContainSubstring("no certificate can carry it")), id.String())
		}
	})
})

var _ = Describe("WriteSet", func() {
	var dir string

	BeforeEach(func() {
		dir = filepath.Join(GinkgoT().TempDir(), "certs")
	})

	read := func(name string) []byte {
		GinkgoHelper()
		raw, err := os.ReadFile(filepath.Join(dir, name))
		Expect(err).NotTo(HaveOccurred())
		return raw
	}

	It("writes the CA, the board, each cell, an API client and an operator, keys 0600", func() {
		caWritten, entries, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1", "z2"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(caWritten).To(BeTrue())
		Expect(entries).To(HaveLen(5))
		for _, name := range []string{"ca", "board", "cell-z1", "cell-z2", "client", "operator"} {
			info, err := os.Stat(filepath.Join(dir, name+".key"))
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), name+".key")
			Expect(filepath.Join(dir, name+".crt")).To(BeAnExistingFile())
		}
		info, err := os.Stat(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)))

		ca, err := certs.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
		Expect(err).NotTo(HaveOccurred())
		for name, want := range map[string]models.Identity{
			"board":    models.RoleIdentity(models.RoleBoard),
			"cell-z1":  models.CellIdentity("cell-z1"),
			"cell-z2":  models.CellIdentity("z2"),
			"client":   models.RoleIdentity(models.RoleAPIClient),
			"operator": models.RoleIdentity(models.RoleOperator),
		} {
			cert, err := certs.ReadCertificate(filepath.Join(dir, name+".crt"))
			Expect(err).NotTo(HaveOccurred())
			Expect(models.IdentityFromCertificate(cert)).To(Equal(want), name)
			_, err = cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			Expect(err).NotTo(HaveOccurred(), name)
			if want.Role == models.RoleBoard || want.Role == models.RoleCell {
				// What a server serves: the board's role, or the cell's id,
				// is what its clients check (ExpectPeer).
				_, err = cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
				Expect(err).NotTo(HaveOccurred(), name)
			}
		}
	})

	It("is idempotent: a second run keeps every file", func() {
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}, Hosts: []string{"board.internal"}})
		Expect(err).NotTo(HaveOccurred())
		before := map[string][]byte{}
		for _, name := range []string{"ca.crt", "ca.key", "board.crt", "board.key", "cell-z1.crt", "client.crt", "operator.key"} {
			before[name] = read(name)
		}
		caWritten, entries, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}, Hosts: []string{"board.internal"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(caWritten).To(BeFalse())
		for _, e := range entries {
			Expect(e.Written).To(BeFalse(), e.Name)
		}
		for name, raw := range before {
			Expect(bytes.Equal(read(name), raw)).To(BeTrue(), name)
		}
	})

	It("tightens a key it keeps that is readable by others to 0600", func() {
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}})
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{"ca.key", "cell-z1.key"} {
			Expect(os.Chmod(filepath.Join(dir, name), 0o644)).To(Succeed())
		}
		before := read("cell-z1.key")
		_, entries, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}})
		Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			Expect(e.Written).To(BeFalse(), e.Name)
		}
		Expect(read("cell-z1.key")).To(Equal(before), "kept")
		for _, name := range []string{"ca.key", "cell-z1.key"} {
			info, err := os.Stat(filepath.Join(dir, name))
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), name)
		}
	})

	It("keeps the CA and adds what is new: another cell, or a host the servers must cover", func() {
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}})
		Expect(err).NotTo(HaveOccurred())
		caBefore, operatorBefore := read("ca.crt"), read("operator.crt")

		_, entries, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1", "cell-z2"}, Hosts: []string{"10.1.2.3"}})
		Expect(err).NotTo(HaveOccurred())
		written := map[string]string{}
		for _, e := range entries {
			if e.Written {
				written[e.Name] = e.Reason
			}
		}
		Expect(written).To(Equal(map[string]string{"board": "does not cover 10.1.2.3", "cell-z1": "does not cover 10.1.2.3", "cell-z2": "new"}))
		Expect(read("ca.crt")).To(Equal(caBefore))
		Expect(read("operator.crt")).To(Equal(operatorBefore))
	})

	It("replaces a leaf another CA signed, and makes a new CA and every leaf with Force", func() {
		_, _, err := certs.WriteSet(dir, certs.SetOptions{})
		Expect(err).NotTo(HaveOccurred())
		other, err := certs.NewCA("other", time.Hour*24*365)
		Expect(err).NotTo(HaveOccurred())
		stray, err := other.Issue(certs.LeafRequest{Identity: models.RoleIdentity(models.RoleOperator)})
		Expect(err).NotTo(HaveOccurred())
		keyPEM, err := stray.KeyPEM()
		Expect(err).NotTo(HaveOccurred())
		Expect(certs.WriteFile(filepath.Join(dir, "operator.crt"), stray.CertPEM(), 0o644)).To(Succeed())
		Expect(certs.WriteFile(filepath.Join(dir, "operator.key"), keyPEM, 0o600)).To(Succeed())

		_, entries, err := certs.WriteSet(dir, certs.SetOptions{})
		Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			Expect(e.Written).To(Equal(e.Name == "operator"), e.Name)
		}

		caBefore := read("ca.crt")
		caWritten, entries, err := certs.WriteSet(dir, certs.SetOptions{Force: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(caWritten).To(BeTrue())
		Expect(read("ca.crt")).NotTo(Equal(caBefore))
		for _, e := range entries {
			Expect(e.Written).To(BeTrue(), e.Name)
		}
	})

	It("refuses two cells that would share a file, and a cell id that is no identity", func() {
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"z1", "cell-z1"}})
		Expect(err).To(MatchError(ContainSubstring("both be cell-z1.crt")))
		_, _, err = certs.WriteSet(dir, certs.SetOptions{Cells: []string{"a/b"}})
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("mutual TLS with a set", func() {
	var dir string

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}})
		Expect(err).NotTo(HaveOccurred())
	})

	files := func(name string) certs.Files {
		return certs.Files{CACert: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
	}

	// serve accepts one connection with the board's server config and
	// reports the identity of its client, or the handshake's error.
	serve := func() (string, chan models.Identity, chan error) {
		GinkgoHelper()
		config, err := files("board").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		listener, err := tls.Listen("tcp", "127.0.0.1:0", config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(listener.Close)
		identities, failures := make(chan models.Identity, 1), make(chan error, 1)
		go func() {
			conn, err := listener.Accept()
			if err != nil {
				failures <- err
				return
			}
			defer conn.Close()
			tlsConn := conn.(*tls.Conn)
			if err := tlsConn.Handshake(); err != nil {
				failures <- err
				return
			}
			state := tlsConn.ConnectionState()
			identities <- certs.PeerIdentity(&state)
			io.WriteString(conn, "hello")
		}()
		return listener.Addr().String(), identities, failures
	}

	It("knows the client by its certificate", func() {
		address, identities, _ := serve()
		config, err := files("cell-z1").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		config.ServerName = "127.0.0.1"
		conn, err := tls.Dial("tcp", address, config)
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		Eventually(identities).Should(Receive(Equal(models.CellIdentity("cell-z1"))))
		Expect(conn.ConnectionState().PeerCertificates[0].URIs[0].String()).To(Equal("corkboard://role/board"))
	})

	Describe("ExpectPeer", func() {
		dial := func(config *tls.Config) error {
			GinkgoHelper()
			address, _, _ := serve()
			conn, err := tls.Dial("tcp", address, config)
			if err == nil {
				conn.Close()
			}
			return err
		}
		operator := func() *tls.Config {
			GinkgoHelper()
			config, err := files("operator").ClientConfig()
			Expect(err).NotTo(HaveOccurred())
			config.ServerName = "127.0.0.1"
			return config
		}

		It("reaches the board when the board is expected", func() {
			Expect(dial(certs.ExpectPeer(operator(), models.RoleIdentity(models.RoleBoard)))).To(Succeed())
		})

		It("refuses the board when a cell is expected, naming both identities", func() {
			config := operator()
			err := dial(certs.ExpectPeer(config, models.CellIdentity("cell-z1")))
			var mismatch *certs.PeerIdentityError
			Expect(errors.As(err, &mismatch)).To(BeTrue(), "%v", err)
			Expect(*mismatch).To(Equal(certs.PeerIdentityError{Expected: models.CellIdentity("cell-z1"), Actual: models.RoleIdentity(models.RoleBoard)}))
			Expect(err.Error()).To(ContainSubstring(`the peer's certificate names board, but this connection expects cell "cell-z1" (corkboard://cell/cell-z1)`))
			Expect(config.VerifyConnection).To(BeNil(), "the config given is left alone")
			Expect(dial(config)).To(Succeed())
		})

		It("still verifies the chain first", func() {
			other := filepath.Join(GinkgoT().TempDir(), "other")
			_, _, err := certs.WriteSet(other, certs.SetOptions{})
			Expect(err).NotTo(HaveOccurred())
			pool, err := certs.LoadPool(filepath.Join(other, "ca.crt"))
			Expect(err).NotTo(HaveOccurred())
			config := operator()
			config.RootCAs = pool
			err = dial(certs.ExpectPeer(config, models.RoleIdentity(models.RoleBoard)))
			Expect(err).To(MatchError(ContainSubstring("unknown authority")))
		})
	})

	It("refuses a client without a certificate, and one from another CA", func() {
		address, _, failures := serve()
		pool, err := certs.LoadPool(filepath.Join(dir, "ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		conn, err := tls.Dial("tcp", address, &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err == nil {
			// TLS 1.3: the client learns on its first read.
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		Expect(err).To(HaveOccurred())
		Eventually(failures).Should(Receive(MatchError(ContainSubstring("didn't provide a certificate"))))

		address, _, failures = serve()
		other := filepath.Join(GinkgoT().TempDir(), "other")
		_, _, err = certs.WriteSet(other, certs.SetOptions{})
		Expect(err).NotTo(HaveOccurred())
		pair, err := certs.LoadKeyPair(filepath.Join(other, "operator.crt"), filepath.Join(other, "operator.key"))
		Expect(err).NotTo(HaveOccurred())
		conn, err = tls.Dial("tcp", address, certs.ClientConfig(pair, pool))
		if err == nil {
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		Expect(err).To(HaveOccurred())
		Eventually(failures).Should(Receive(MatchError(ContainSubstring("unknown authority"))))
	})

	It("refuses a TLS version before 1.2", func() {
		address, _, failures := serve()
		config, err := files("operator").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		config.MinVersion, config.MaxVersion = tls.VersionTLS11, tls.VersionTLS11
		_, err = tls.Dial("tcp", address, config)
		Expect(err).To(HaveOccurred())
		Eventually(failures).Should(Receive())
	})

	DescribeTable("Validate names the key of a half-configured section",
		func(change func(*certs.Files), key string) {
			f := files("board")
			change(&f)
			err := f.Validate("tls")
			Expect(err).To(MatchError(ContainSubstring("config: " + key + ": ")))
		},
		Entry("no ca_cert", func(f *certs.Files) { f.CACert = "" }, "tls.ca_cert"),
		Entry("no cert", func(f *certs.Files) { f.Cert = "" }, "tls.cert"),
		Entry("no key", func(f *certs.Files) { f.Key = "" }, "tls.key"),
		Entry("a missing CA file", func(f *certs.Files) { f.CACert += ".missing" }, "tls.ca_cert"),
		Entry("a CA file that is a key", func(f *certs.Files) { f.CACert = f.Key }, "tls.ca_cert"),
		Entry("a missing key file", func(f *certs.Files) { f.Key += ".missing" }, "tls.key"),
		Entry("a key of another certificate", func(f *certs.Files) { f.Key = filepath.Join(filepath.Dir(f.Key), "operator.key") }, "tls.cert"),
	)

	It("Validate takes a whole section, and none", func() {
		f := files("board")
		Expect(f.Validate("tls")).To(Succeed())
		var none *certs.Files
		Expect(none.Validate("tls")).To(Succeed())
	})

	It("reads a CA key in SEC 1 form too", func() {
		ca, err := certs.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
		Expect(err).NotTo(HaveOccurred())
		der, err := x509.MarshalECPrivateKey(ca.Key)
		Expect(err).NotTo(HaveOccurred())
		sec1 := filepath.Join(GinkgoT().TempDir(), "ca.key")
		Expect(os.WriteFile(sec1, pemBlock("EC PRIVATE KEY", der), 0o600)).To(Succeed())
		again, err := certs.LoadCA(filepath.Join(dir, "ca.crt"), sec1)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Key.Equal(ca.Key)).To(BeTrue())
	})
})

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
