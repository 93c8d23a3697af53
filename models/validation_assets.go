package models

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Limits of a definition's assets and setup.
const (
	MaxAssets                 = 16
	MaxAssetURLLength         = 2048
	MaxAssetDestinationLength = 256
	// MaxSetupTimeoutMs is an hour: a setup step is preparation, not a
	// service.
	MaxSetupTimeoutMs = 3_600_000
)

// assetSchemes are the URL schemes a rep fetches assets from; file is
// for tests and local clusters, where the file is on the cell.
var assetSchemes = []string{"http", "https", "file"}

// validateAssets checks each asset and that no two land on one
// destination (the second would silently replace the first).
func validateAssets(path string, assets []*Asset) error {
	if len(assets) > MaxAssets {
		return ErrInvalidField(path, fmt.Sprintf("must hold at most %d assets, got %d", MaxAssets, len(assets)))
	}
	for i, asset := range assets {
		if asset == nil {
			return ErrInvalidField(indexed(path, i), "required")
		}
		if err := asset.validate(indexed(path, i)); err != nil {
			return err
		}
		for j := range i {
			if assetDestination(assets[j]) == assetDestination(asset) && !asset.IsArchive() {
				return ErrInvalidField(child(indexed(path, i), "destination"),
					fmt.Sprintf("duplicates %s (%q)", child(indexed("assets", j), "destination"), asset.GetDestination()))
			}
		}
	}
	return nil
}

func (a *Asset) validate(p string) error {
	raw := a.GetUrl()
	if raw == "" {
		return ErrInvalidField(child(p, "url"), "required")
	}
	if len(raw) > MaxAssetURLLength {
		return ErrInvalidField(child(p, "url"), fmt.Sprintf("must be at most %d bytes, got %d", MaxAssetURLLength, len(raw)))
	}
	if err := validateNoControl(child(p, "url"), raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The parser's own error quotes the URL, credentials and all.
		if urlErr, ok := err.(*url.Error); ok {
			err = urlErr.Err
		}
		return ErrInvalidField(child(p, "url"), "must be a URL: "+err.Error())
	}
	// Every API client reads a definition's asset URLs: credentials in
	// one would be handed to all of them. The error does not quote the
	// URL, so as not to hand them out either.
	if u.User != nil {
		return ErrInvalidField(child(p, "url"), "must not hold credentials (user:password@host): every API client reads a definition's asset URLs")
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return ErrInvalidField(child(p, "url"), "must name a host, got "+quoteShort(raw))
		}
	case "file":
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return ErrInvalidField(child(p, "url"), "must be file:///absolute/path for a file URL, got "+quoteShort(raw))
		}
	default:
		return ErrInvalidField(child(p, "url"), fmt.Sprintf("must use one of the schemes %v, got %s", assetSchemes, quoteShort(raw)))
	}
	sum := a.GetSha256()
	if sum == "" {
		return ErrInvalidField(child(p, "sha256"), "required: the hex SHA-256 of the file at url")
	}
	if _, err := hex.DecodeString(sum); err != nil || len(sum) != 64 || strings.ToLower(sum) != sum {
		return ErrInvalidField(child(p, "sha256"), "must be 64 lowercase hex digits (a SHA-256), got "+quoteShort(sum))
	}
	return validateAssetDestination(child(p, "destination"), a.GetDestination(), a.IsArchive())
}

// validateAssetDestination keeps an asset inside the instance's directory:
// a relative path that never climbs out of it.
func validateAssetDestination(p, dest string, archive bool) error {
	if dest == "" {
		return ErrInvalidField(p, "required: a path inside the instance's directory (\".\" for the directory itself, for an archive)")
	}
	if len(dest) > MaxAssetDestinationLength {
		return ErrInvalidField(p, fmt.Sprintf("must be at most %d bytes, got %d", MaxAssetDestinationLength, len(dest)))
	}
	if err := validateNoControl(p, dest); err != nil {
		return err
	}
	if strings.HasPrefix(dest, "/") {
		return ErrInvalidField(p, "must be relative to the instance's directory, got "+quoteShort(dest))
	}
	clean := path.Clean(dest)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return ErrInvalidField(p, "must stay inside the instance's directory, got "+quoteShort(dest))
	}
	if clean == "." && !archive {
		return ErrInvalidField(p, "must name a file for an asset that is not an archive (.tgz, .tar.gz, .zip), got "+quoteShort(dest))
	}
	return nil
}

// IsArchive reports whether the rep unpacks the asset: its URL's path
// ends .tgz, .tar.gz or .zip.
func (a *Asset) IsArchive() bool {
	return a.ArchiveKind() != ""
}

// ArchiveKind is "tgz" or "zip" for an archive, "" for a plain file.
func (a *Asset) ArchiveKind() string {
	u, err := url.Parse(a.GetUrl())
	if err != nil {
		return ""
	}
	name := strings.ToLower(u.Path)
	switch {
	case strings.HasSuffix(name, ".tgz"), strings.HasSuffix(name, ".tar.gz"):
		return "tgz"
	case strings.HasSuffix(name, ".zip"):
		return "zip"
	default:
		return ""
	}
}

func assetDestination(a *Asset) string {
	return path.Clean(a.GetDestination())
}
