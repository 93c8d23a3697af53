package sqldb

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Encryption at rest (DESIGN §3). Two columns hold what users put in their
// run definitions, environment variables with secrets among it:
// run_infos.definition (the models.LRPDefinition) and operations.parameters
// (the request that made the operation, a google.protobuf.Any). With a
// Keyring (WithEncryption) every write of either column stores an envelope
// sealed with AES-256-GCM under the keyring's active key; every read opens
// envelopes under any key of the keyring and passes plain blobs (written
// before encryption was configured, or by a development board) through
// unchanged. Without a keyring both columns are plain: protobuf, or
// packed protobuf (compress.go), which an envelope seals like any plain
// blob. Nothing else is encrypted: convergence and placement read
// plain columns only, and never a blob (DESIGN §3). Note that
// run_infos.content_hash, and a definition id the board generates
// (models.GenerateDefinitionID), are unkeyed SHA-256 hashes of the
// plaintext: someone with a dump who knows all of a definition but a
// secret can test guesses of the secret against them.
//
// # Envelope format (version 1)
//
//	offset        size  content
//	0             1     0x00, the marker
//	1             1     0x01, the format version
//	2             1     L, the length of the key label (1 to 64)
//	3             L     the key label, ASCII ([a-zA-Z0-9._-])
//	3+L           12    the nonce, random for every seal (96 bits)
//	15+L          n+16  AES-256-GCM ciphertext of the n-byte protobuf blob,
//	                    ending in its 16-byte authentication tag
//
// The marker tells an envelope from a protobuf blob by its first byte
// alone: a protobuf blob starts with a field tag, and a tag's first byte
// is 0x00 only for field number 0, which protobuf forbids, so no valid
// protobuf blob (of any message) starts with 0x00. An empty blob is
// plain. The version byte tells an envelope from a packed blob (00 02,
// compress.go), which is plain too.
//
// Worked example: a 1,000-byte definition sealed under the label "k1"
// becomes 1 + 1 + 1 + 2 + 12 + 1,000 + 16 = 1,033 bytes:
//
//	00 01 02 6b 31 | 12 nonce bytes | 1,000 ciphertext bytes | 16 tag bytes
//
// The additional data authenticated with the ciphertext (not stored) binds
// the envelope to its header and its row, so a blob copied to another row,
// or another column, or given another label, fails to open rather than
// decrypting into a wrong row's content:
//
//	the envelope's first 3+L bytes (marker, version, label length, label),
//	then, each as a uvarint length followed by its bytes: the table name,
//	then the row's key: process_guid and definition_id for run_infos,
//	id for operations.
//
// Random 96-bit nonces are safe for about 2^32 seals under one key (NIST
// SP 800-38D); rotating to a new key well before that (RotateKeys) keeps
// every key far below it.
//
// # Keys and rotation
//
// A board is configured with labeled keys and the label of the active one
// (ParseEncryptionKeys). Every board sharing the database must be able to
// open what any other writes, so a rotation from k1 to k2 goes in steps:
//
//  1. add k2 to every board's encryption_keys, k1 still active, and
//     restart them all;
//  2. make k2 the active_key_label everywhere, and restart them all;
//  3. run RotateKeys (bbs-migrate rotate-keys) until a pass re-encrypts
//     and skips nothing: "repeat until nothing is left", because a pass
//     does not see rows written behind it by a board still sealing under
//     k1, and leaves a row that changed under it to the next pass;
//  4. remove k1 from every board's encryption_keys.
//
// Skipping step 1 makes a board that has only k1 fail to read rows
// sealed under k2 by a board that already has the new config; the error
// names the row and the label, and nothing is lost.

const (
	// envelopeMarker is the first byte of every envelope; never the first
	// byte of a protobuf blob (see above).
	envelopeMarker = 0x00
	// envelopeVersion is the one format this code writes and reads.
	envelopeVersion = 0x01
	// keyBytes is the key size of AES-256.
	keyBytes = 32
	// nonceBytes is GCM's standard nonce size.
	nonceBytes = 12
	// maxLabel bounds a label, so its length fits the envelope's one byte.
	maxLabel = 64
)

// labelPattern is what a key label may be: short, printable, and safe to
// print in logs and errors without quoting surprises.
var labelPattern = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,64}$`)

// Keyring holds the board's encryption keys by label and the label new
// writes seal under. It is immutable once parsed and safe for concurrent
// use.
type Keyring struct {
	active string
	aeads  map[string]cipher.AEAD
	labels []string // sorted, for errors and listings
}

// ParseEncryptionKeys builds a Keyring from the config's encryption_keys
// (label → base64 of a 32-byte AES-256 key, standard encoding as
// `openssl rand -base64 32` prints it) and active_key_label. No keys and
// no active label is a board without encryption: it returns nil and no
// error, and WithEncryption(nil) changes nothing. Errors name the config
// key at fault.
func ParseEncryptionKeys(keys map[string]string, active string) (*Keyring, error) {
	if len(keys) == 0 {
		if active == "" {
			return nil, nil
		}
		return nil, fmt.Errorf("active_key_label %q is not among encryption_keys [] (none are configured)", active)
	}
	k := &Keyring{active: active, aeads: make(map[string]cipher.AEAD, len(keys))}
	for label := range keys {
		k.labels = append(k.labels, label)
	}
	slices.Sort(k.labels)
	for _, label := range k.labels {
		if !labelPattern.MatchString(label) {
			return nil, fmt.Errorf("encryption_keys: label %q must be 1 to %d characters of a-z, A-Z, 0-9, '.', '_' and '-'", label, maxLabel)
		}
		material, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[label]))
		if err != nil {
			return nil, fmt.Errorf("encryption_keys[%q]: must be base64 of %d bytes (AES-256): %v", label, keyBytes, err)
		}
		if len(material) != keyBytes {
			return nil, fmt.Errorf("encryption_keys[%q]: must be base64 of %d bytes (AES-256), got %d bytes", label, keyBytes, len(material))
		}
		block, err := aes.NewCipher(material)
		if err != nil {
			return nil, fmt.Errorf("encryption_keys[%q]: %v", label, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("encryption_keys[%q]: %v", label, err)
		}
		k.aeads[label] = aead
	}
	if active == "" {
		return nil, fmt.Errorf("active_key_label is required when encryption_keys are set (one of [%s])", strings.Join(k.labels, " "))
	}
	if _, ok := k.aeads[active]; !ok {
		return nil, fmt.Errorf("active_key_label %q is not among encryption_keys [%s]", active, strings.Join(k.labels, " "))
	}
	return k, nil
}

// ActiveLabel is the label new writes seal under.
func (k *Keyring) ActiveLabel() string { return k.active }

// Labels lists the configured labels, sorted.
func (k *Keyring) Labels() []string { return slices.Clone(k.labels) }

// WithEncryption seals run definitions and operation parameters under the
// keyring's active key, and opens them under any of its keys (see the
// package's encryption notes in encryption.go). A nil keyring leaves
// encryption off: blobs are written plain, and an envelope read is an
// error naming its label.
func WithEncryption(k *Keyring) Option {
	return func(s *SQLDB) { s.keys = k }
}

// blobRow names the row an encrypted blob belongs to: its table and its
// primary key, in column order. It is both the additional data's row part
// and how errors name the row ("run_infos web/v1", "operations 0a1b…").
type blobRow struct {
	table string
	key   []string
}

func runInfoRow(processGuid, definitionID string) blobRow {
	return blobRow{table: "run_infos", key: []string{processGuid, definitionID}}
}

func operationRow(id string) blobRow {
	return blobRow{table: "operations", key: []string{id}}
}

func (r blobRow) String() string {
	return r.table + " " + strings.Join(r.key, "/")
}

// additionalData is what GCM authenticates besides the ciphertext: the
// envelope's header and the row (see the format above). Lengths before
// each part keep two different rows from ever giving the same bytes.
func (r blobRow) additionalData(header []byte) []byte {
	size := len(header) + binary.MaxVarintLen64 + len(r.table)
	for _, part := range r.key {
		size += binary.MaxVarintLen64 + len(part)
	}
	ad := make([]byte, 0, size)
	ad = append(ad, header...)
	ad = binary.AppendUvarint(ad, uint64(len(r.table)))
	ad = append(ad, r.table...)
	for _, part := range r.key {
		ad = binary.AppendUvarint(ad, uint64(len(part)))
		ad = append(ad, part...)
	}
	return ad
}

// seal returns plain as the envelope for row under the active key.
func (k *Keyring) seal(row blobRow, plain []byte) ([]byte, error) {
	return k.sealUnder(k.active, row, plain)
}

func (k *Keyring) sealUnder(label string, row blobRow, plain []byte) ([]byte, error) {
	aead := k.aeads[label]
	headerLen := 3 + len(label)
	out := make([]byte, headerLen+nonceBytes, headerLen+nonceBytes+len(plain)+aead.Overhead())
	out[0], out[1], out[2] = envelopeMarker, envelopeVersion, byte(len(label))
	copy(out[3:], label)
	nonce := out[headerLen : headerLen+nonceBytes]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("%s: encrypt: no random nonce: %w", row, err)
	}
	return aead.Seal(out, nonce, plain, row.additionalData(out[:headerLen])), nil
}

// envelope is a parsed envelope's parts, sharing the blob's bytes.
type envelope struct {
	header     []byte // marker, version, label length, label
	label      string
	nonce      []byte
	ciphertext []byte // with its tag
}

// isEnvelope reports whether blob is an envelope rather than a plain
// blob (protobuf, or packed: compress.go), by its first two bytes.
func isEnvelope(blob []byte) bool {
	return len(blob) > 0 && blob[0] == envelopeMarker && !isPacked(blob)
}

// parseEnvelope splits an envelope (isEnvelope) into its parts.
func parseEnvelope(blob []byte) (envelope, error) {
	if len(blob) < 3 {
		return envelope{}, errors.New("malformed encrypted blob: shorter than its header")
	}
	if blob[1] != envelopeVersion {
		return envelope{}, fmt.Errorf("encrypted blob of format version %d, which this board does not read (it reads version %d)", blob[1], envelopeVersion)
	}
	labelLen := int(blob[2])
	headerLen := 3 + labelLen
	if labelLen == 0 || labelLen > maxLabel || len(blob) < headerLen+nonceBytes+16 {
		return envelope{}, fmt.Errorf("malformed encrypted blob: %d bytes with a label of %d", len(blob), labelLen)
	}
	return envelope{
		header:     blob[:headerLen],
		label:      string(blob[3:headerLen]),
		nonce:      blob[headerLen : headerLen+nonceBytes],
		ciphertext: blob[headerLen+nonceBytes:],
	}, nil
}

// EnvelopeLabel tells how a stored blob of run_infos.definition or
// operations.parameters is kept: encrypted under the returned label, or
// plain (false). It is for tools and tests that inspect raw columns; an
// error says the blob starts as an envelope but is not a readable one.
func EnvelopeLabel(blob []byte) (label string, encrypted bool, err error) {
	if !isEnvelope(blob) {
		return "", false, nil
	}
	env, err := parseEnvelope(blob)
	if err != nil {
		return "", true, err
	}
	return env.label, true, nil
}

// openBlob returns the plain bytes of a stored blob of row (protobuf, or
// packed: the caller unpacks): a plain blob as it is, an envelope
// decrypted under its key. k may be nil (no encryption configured). Every
// error names the row, and the label when there is one; none is a panic,
// whatever the bytes.
func (k *Keyring) openBlob(row blobRow, blob []byte) ([]byte, error) {
	if !isEnvelope(blob) {
		return blob, nil
	}
	env, err := parseEnvelope(blob)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", row, err)
	}
	if k == nil {
		return nil, fmt.Errorf("%s: encrypted under key %q, but no encryption_keys are configured", row, env.label)
	}
	aead, ok := k.aeads[env.label]
	if !ok {
		return nil, fmt.Errorf("%s: encrypted under key %q, which is not among encryption_keys", row, env.label)
	}
	plain, err := aead.Open(nil, env.nonce, env.ciphertext, row.additionalData(env.header))
	if err != nil {
		return nil, fmt.Errorf("%s: cannot decrypt under key %q: the blob was altered, or belongs to another row", row, env.label)
	}
	return plain, nil
}

// sealBlob is what a write stores for row: plain bytes without a keyring,
// an envelope under the active key with one. A nil blob (NULL) stays nil.
func (k *Keyring) sealBlob(row blobRow, plain []byte) ([]byte, error) {
	if k == nil || plain == nil {
		return plain, nil
	}
	return k.seal(row, plain)
}
