package certs

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/corkboard/corkboard/models"
)

// File names in a set's directory.
const (
	CAFile       = "ca.crt"
	CAKeyFile    = "ca.key"
	BoardName    = "board"
	ClientName   = "client"
	OperatorName = "operator"
)

// CellName is the file name (without .crt or .key) of a cell's
// certificate: "cell-" and the cell id, unless the id starts with "cell-"
// already (cell-z1 → cell-z1.crt).
func CellName(cellID string) string {
	if len(cellID) > 5 && cellID[:5] == "cell-" {
		return cellID
	}
	return "cell-" + cellID
}

// SetOptions says what WriteSet writes.
type SetOptions struct {
	// Cells get a certificate each, cell-<id>.crt/.key.
	Cells []string
	// Hosts are further DNS names or IP addresses of the board and the
	// reps, beside localhost and 127.0.0.1.
	Hosts []string
	// Force makes a new CA, and so every leaf, even when the directory
	// has a CA already.
	Force bool
	// RenewWithin re-issues a leaf that expires sooner than this (default
	// 30 days).
	RenewWithin time.Duration
}

// SetEntry is one file pair WriteSet wrote or kept.
type SetEntry struct {
	Name     string
	Identity models.Identity
	Written  bool
	// Why it was written: "new", "renewed", "new CA", ...
	Reason string
}

// WriteSet writes a development set of certificates into dir (made 0700
// if missing), each naming its holder as models.Identity says:
//
//	ca.crt, ca.key                 the CA (kept if there, unless Force)
//	board.crt, board.key           corkboard://role/board, server and client
//	cell-<id>.crt, .key per cell   corkboard://cell/<id>, server and client
//	client.crt, client.key         corkboard://role/api-client
//	operator.crt, operator.key     corkboard://role/operator
//
// Keys are 0600, those it keeps too (a looser one is tightened). It is
// idempotent: a leaf already there that the CA signed, for the same
// identity, covering the hosts asked for and valid for RenewWithin more is
// kept; anything else is issued anew.
func WriteSet(dir string, opts SetOptions) (caWritten bool, entries []SetEntry, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, nil, err
	}
	renewWithin := opts.RenewWithin
	if renewWithin <= 0 {
		renewWithin = 30 * 24 * time.Hour
	}
	caCert, caKey := filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)
	var ca *CA
	if !opts.Force {
		ca, err = LoadCA(caCert, caKey)
		switch {
		case err == nil && time.Until(ca.Cert.NotAfter) < renewWithin:
			return false, nil, fmt.Errorf("the CA in %s expires %s: make a new one with -force", caCert, ca.Cert.NotAfter.Format(time.RFC3339))
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return false, nil, fmt.Errorf("existing CA: %w (make a new one with -force)", err)
		case err != nil:
			ca = nil
		}
	}
	if ca != nil {
		if err := tightenKey(caKey); err != nil {
			return false, nil, err
		}
	}
	if ca == nil {
		if ca, err = NewCA("Corkboard development CA", DefaultCAValidity); err != nil {
			return false, nil, err
		}
		keyPEM, err := ca.KeyPEM()
		if err != nil {
			return false, nil, err
		}
		// The key first: a CA certificate without its key would stop the
		// next run.
		if err := WriteFile(caKey, keyPEM, 0o600); err != nil {
			return false, nil, err
		}
		if err := WriteFile(caCert, ca.CertPEM(), 0o644); err != nil {
			return false, nil, err
		}
		caWritten = true
	}

	type want struct {
		name   string
		id     models.Identity
		server bool
	}
	wants := []want{{BoardName, models.RoleIdentity(models.RoleBoard), true}}
	named := map[string]string{}
	for _, cell := range opts.Cells {
		if err := models.ValidateCellID(cell); err != nil {
			return caWritten, nil, fmt.Errorf("cell %q: %w", cell, err)
		}
		name := CellName(cell)
		if other, ok := named[name]; ok {
			if other == cell {
				continue
			}
			return caWritten, nil, fmt.Errorf("cells %q and %q would both be %s.crt", other, cell, name)
		}
		named[name] = cell
		wants = append(wants, want{name, models.CellIdentity(cell), true})
	}
	wants = append(wants,
		want{ClientName, models.RoleIdentity(models.RoleAPIClient), false},
		want{OperatorName, models.RoleIdentity(models.RoleOperator), false})

	for _, w := range wants {
		certPath, keyPath := filepath.Join(dir, w.name+".crt"), filepath.Join(dir, w.name+".key")
		reason := "new CA"
		if !caWritten {
			reason = keepable(ca, certPath, keyPath, w.id, w.server, opts.Hosts, renewWithin)
			if reason == "" {
				if err := tightenKey(keyPath); err != nil {
					return caWritten, entries, err
				}
				entries = append(entries, SetEntry{Name: w.name, Identity: w.id})
				continue
			}
		}
		leaf, err := ca.Issue(LeafRequest{Identity: w.id, Server: w.server, Hosts: opts.Hosts})
		if err != nil {
			return caWritten, entries, err
		}
		keyPEM, err := leaf.KeyPEM()
		if err != nil {
			return caWritten, entries, err
		}
		if err := WriteFile(keyPath, keyPEM, 0o600); err != nil {
			return caWritten, entries, err
		}
		if err := WriteFile(certPath, leaf.CertPEM(), 0o644); err != nil {
			return caWritten, entries, err
		}
		entries = append(entries, SetEntry{Name: w.name, Identity: w.id, Written: true, Reason: reason})
	}
	return caWritten, entries, nil
}

// tightenKey makes a key file kept from an earlier run 0600 when it is
// readable by anyone else.
func tightenKey(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Mode().Perm() != 0o600 {
		if err := os.Chmod(path, 0o600); err != nil {
			return fmt.Errorf("make %s 0600: %w", path, err)
		}
	}
	return nil
}

// keepable says why the leaf at certPath must be issued again, or "" when
// it may stay.
func keepable(ca *CA, certPath, keyPath string, id models.Identity, server bool, hosts []string, renewWithin time.Duration) string {
	cert, err := ReadCertificate(certPath)
	if errors.Is(err, os.ErrNotExist) {
		return "new"
	}
	if err != nil {
		return "unreadable"
	}
	if _, err := LoadKeyPair(certPath, keyPath); err != nil {
		return "key missing or not its key"
	}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	for _, usage := range usages {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return "not signed by this CA for its use"
		}
	}
	if models.IdentityFromCertificate(cert) != id {
		return "another identity"
	}
	if server {
		for _, host := range ServerHosts(hosts) {
			if cert.VerifyHostname(host) != nil {
				return "does not cover " + host
			}
		}
	}
	if time.Until(cert.NotAfter) < renewWithin {
		return "renewed"
	}
	return ""
}
