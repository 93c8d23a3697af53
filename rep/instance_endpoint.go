package rep

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// InstanceEndpoint addresses the local instance endpoint (DESIGN §7): each
// instance's CORK_INSTANCE_URL names it with a secret of its own,
//
//	<base>/v1/instances/<instance_guid>/<secret>
//
// and the instance POSTs {"occupied": bool} to it + "/occupancy". The
// endpoint listens on loopback, which every process of the cell shares,
// another app's instances included, and an instance guid is no secret (an
// app may show its own): without the secret, any of them could report
// occupancy in another app's name and drive its autoscaler. The secret is
// an HMAC of the guid under the rep's key, which the rep keeps in its data
// dir (instanceKeyFile, 0600, out of instances' sight), so that an
// instance keeps its URL across a restart of its rep.
type InstanceEndpoint struct {
	base string
	key  []byte
}

// instanceKeyFile is the rep's key for instance endpoint secrets, in its
// data dir.
const instanceKeyFile = "instance-endpoint.key"

// NewInstanceEndpoint is the endpoint under baseURL, its secrets made
// with key.
func NewInstanceEndpoint(baseURL string, key []byte) *InstanceEndpoint {
	return &InstanceEndpoint{base: baseURL, key: key}
}

// LoadInstanceKey reads the rep's key from dataDir, making a new one the
// first time.
func LoadInstanceKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, instanceKeyFile)
	key, err := os.ReadFile(path)
	switch {
	case err == nil && len(key) == 32:
		return key, nil
	case err == nil:
		return nil, fmt.Errorf("%s: want 32 bytes, got %d (delete it to have a new one made)", path, len(key))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("keeping the instance endpoint's key: %w", err)
	}
	return key, nil
}

// URL is instanceGuid's CORK_INSTANCE_URL.
func (e *InstanceEndpoint) URL(instanceGuid string) string {
	return e.base + "/v1/instances/" + instanceGuid + "/" + e.secret(instanceGuid)
}

func (e *InstanceEndpoint) secret(instanceGuid string) string {
	mac := hmac.New(sha256.New, e.key)
	mac.Write([]byte(instanceGuid))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:16])
}

// names says whether secret is instanceGuid's; never for a nil endpoint.
func (e *InstanceEndpoint) names(instanceGuid, secret string) bool {
	return e != nil && hmac.Equal([]byte(secret), []byte(e.secret(instanceGuid)))
}
