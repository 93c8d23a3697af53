package sqldb_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/go-sql-driver/mysql"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// The secret a user keeps in a definition's environment: no byte of it may
// reach the database in the clear once encryption is configured.
const encSecret = "hunter2-SECRET-1234"

// encKeyMaterial is the base64 config value of a test key: 32 bytes, each
// the label's first byte, so that every label has its own key.
func encKeyMaterial(label string) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{label[0] + byte(len(label))}, 32))
}

// encKeyring is a keyring holding labels, active first.
func encKeyring(active string, others ...string) *sqldb.Keyring {
	keys := map[string]string{active: encKeyMaterial(active)}
	for _, l := range others {
		keys[l] = encKeyMaterial(l)
	}
	k, err := sqldb.ParseEncryptionKeys(keys, active)
	Expect(err).NotTo(HaveOccurred())
	return k
}

// secretDefinition is a definition whose environment holds secret.
func secretDefinition(id, secret string) *models.LRPDefinition {
	def := newDefinition(id, "/bin/app")
	def.Action.Env = append(def.Action.Env, &models.EnvironmentVariable{Name: "DB_PASSWORD", Value: secret})
	return def
}

func secretLRP(guid, secret string) *models.DesiredLRP {
	lrp := newLRP(guid, "enc", 1)
	lrp.Definition = secretDefinition("v1", secret)
	return lrp
}

// sameContent compares definitions as written, less what the store sets.
func sameContent(a, b *models.LRPDefinition) bool {
	a, b = proto.Clone(a).(*models.LRPDefinition), proto.Clone(b).(*models.LRPDefinition)
	a.CreatedAt, b.CreatedAt = 0, 0
	a.DefinitionId, b.DefinitionId = "", ""
	return proto.Equal(a, b)
}

// storeWith is a store over b's database sealing under k (nil: plain).
func (b *board) storeWith(k *sqldb.Keyring) *sqldb.SQLDB {
	return newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEncryption(k))
}

// rawBlobs reads a blob column keyed by its row's key ("web/v1", or an
// operation id), as stored.
func (b *board) rawBlobs(table string) map[string][]byte {
	query := "SELECT process_guid, definition_id, definition FROM run_infos"
	if table == "operations" {
		query = "SELECT id, '', parameters FROM operations WHERE parameters IS NOT NULL"
	}
	rows, err := b.conn.Query(query)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	blobs := map[string][]byte{}
	for rows.Next() {
		var a, c string
		var blob []byte
		Expect(rows.Scan(&a, &c, &blob)).To(Succeed())
		if c != "" {
			a += "/" + c
		}
		blobs[a] = blob
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return blobs
}

// expectReadAs holds items read with fields kept encoded to the same
// items read decoded: each, encoded as protobuf, decodes to its twin.
func expectReadAs[M proto.Message](kept, decoded []M) {
	GinkgoHelper()
	Expect(kept).To(HaveLen(len(decoded)))
	for i, item := range kept {
		wire, err := proto.Marshal(item)
		Expect(err).NotTo(HaveOccurred())
		read := decoded[i].ProtoReflect().New().Interface()
		Expect(proto.Unmarshal(wire, read)).To(Succeed())
		Expect(read).To(EqualProto(decoded[i]), "item %d as a client reads it", i)
	}
}

// labelsIn counts the rows of a blob column by the label they are sealed
// under, "" for plain.
func (b *board) labelsIn(table string) map[string]int {
	labels := map[string]int{}
	for key, blob := range b.rawBlobs(table) {
		label, _, err := sqldb.EnvelopeLabel(blob)
		Expect(err).NotTo(HaveOccurred(), key)
		labels[label]++
	}
	return labels
}

// labelOf is the label one run_infos row is sealed under ("" plain).
func (b *board) labelOf(key string) string {
	blob, ok := b.rawBlobs("run_infos")[key]
	Expect(ok).To(BeTrue(), "no run_infos row %s", key)
	label, _, err := sqldb.EnvelopeLabel(blob)
	Expect(err).NotTo(HaveOccurred())
	return label
}

// containsSecret reports whether data holds secret in the clear or as hex
// (how pg_dump writes bytea).
func containsSecret(data []byte, secret string) bool {
	h := hex.EncodeToString([]byte(secret))
	return bytes.Contains(data, []byte(secret)) ||
		bytes.Contains(bytes.ToLower(data), []byte(h))
}

var _ = Describe("ParseEncryptionKeys", func() {
	good := encKeyMaterial("k1")

	It("is nil, and no error, for a board without keys", func() {
		k, err := sqldb.ParseEncryptionKeys(nil, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(k).To(BeNil())
	})

	It("names what is wrong", func() {
		short := base64.StdEncoding.EncodeToString(make([]byte, 12))
		for _, c := range []struct {
			keys   map[string]string
			active string
			want   string
		}{
			{map[string]string{"k1": short}, "k1", `encryption_keys["k1"]: must be base64 of 32 bytes (AES-256), got 12 bytes`},
			{map[string]string{"k1": "not base64!"}, "k1", `encryption_keys["k1"]: must be base64 of 32 bytes (AES-256): illegal base64 data`},
			{map[string]string{"k1": good, "k2": good}, "k3", `active_key_label "k3" is not among encryption_keys [k1 k2]`},
			{map[string]string{"k1": good}, "", `active_key_label is required when encryption_keys are set (one of [k1])`},
			{nil, "k1", `active_key_label "k1" is not among encryption_keys [] (none are configured)`},
			{map[string]string{"bad label": good}, "bad label", `encryption_keys: label "bad label" must be 1 to 64 characters of a-z, A-Z, 0-9, '.', '_' and '-'`},
			{map[string]string{strings.Repeat("k", 65): good}, strings.Repeat("k", 65), `must be 1 to 64 characters`},
		} {
			_, err := sqldb.ParseEncryptionKeys(c.keys, c.active)
			Expect(err).To(MatchError(ContainSubstring(c.want)))
		}
	})

	It("takes labels of letters, digits, dots, dashes and underscores", func() {
		label := "prod-2025.01_" + strings.Repeat("x", 51)
		k, err := sqldb.ParseEncryptionKeys(map[string]string{label: good, "k1": " " + good + "\n"}, label)
		Expect(err).NotTo(HaveOccurred())
		Expect(k.ActiveLabel()).To(Equal(label))
		Expect(k.Labels()).To(Equal([]string{"k1", label}))
	})
})

var _ = forEachDialect("encryption at rest", func(b *board) {
	It("stores definitions and operation parameters sealed, and reads them back as written", func() {
		store := b.storeWith(encKeyring("k1"))
		desired, err := store.DesireLRP(b.ctx, secretLRP("web", encSecret))
		Expect(err).NotTo(HaveOccurred())
		v2 := secretDefinition("", encSecret+"-v2")
		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())

		got, err := store.Definition(b.ctx, "web", "v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(EqualProto(desired.Definition))
		got, err = store.Definition(b.ctx, "web", "v2")
		Expect(err).NotTo(HaveOccurred())
		Expect(sameContent(got, v2)).To(BeTrue())
		lrp, err := store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(lrp.Definition).To(EqualProto(got))
		lrps, err := store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(lrps).To(HaveLen(1))
		Expect(lrps[0].Definition).To(EqualProto(got))

		ops, _, err := store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web"})
		Expect(err).NotTo(HaveOccurred())
		Expect(ops).To(HaveLen(2))
		update := &models.UpdateDesiredLRPRequest{}
		Expect(ops[0].Parameters.UnmarshalTo(update)).To(Succeed())
		Expect(update.ProcessGuid).To(Equal("web"))
		Expect(update.Update.GetUpdateIdentifier()).To(Equal("v2"))
		desire := &models.DesireLRPRequest{}
		Expect(ops[1].Parameters.UnmarshalTo(desire)).To(Succeed())
		Expect(desire.DesiredLrp.GetAnnotation()).To(Equal("owner: team-web"))

		for key, blob := range b.rawBlobs("run_infos") {
			Expect(containsSecret(blob, encSecret)).To(BeFalse(), key)
			Expect(bytes.Contains(blob, []byte("/bin/app"))).To(BeFalse(), key)
			Expect(blob[:5]).To(Equal([]byte{0x00, 0x01, 2, 'k', '1'}), key)
		}
		params := b.rawBlobs("operations")
		Expect(params).To(HaveLen(2))
		for id, blob := range params {
			Expect(blob[:5]).To(Equal([]byte{0x00, 0x01, 2, 'k', '1'}), id)
			// Plain, the Any would name its type.
			Expect(bytes.Contains(blob, []byte("LRPRequest"))).To(BeFalse(), id)
		}
	})

	It("hands a list's definitions and routes encoded when asked, each the field it decodes to: plain, packed or sealed", func() {
		plain := b.storeWith(nil)
		short := newLRP("short", "enc", 1)
		short.Definition = &models.LRPDefinition{DefinitionId: "v1", Action: &models.RunAction{Path: "/a"}, MemoryMb: 1}
		_, err := plain.DesireLRP(b.ctx, short)
		Expect(err).NotTo(HaveOccurred())
		packed := newLRP("packed", "enc", 1)
		packed.Definition.Action.Args = append(packed.Definition.Action.Args, strings.Repeat("--flag ", 40))
		_, err = plain.DesireLRP(b.ctx, packed)
		Expect(err).NotTo(HaveOccurred())
		store := b.storeWith(encKeyring("k1"))
		_, err = store.DesireLRP(b.ctx, secretLRP("sealed", encSecret))
		Expect(err).NotTo(HaveOccurred())
		blobs := b.rawBlobs("run_infos")
		Expect(blobs["short/v1"][0]).To(BeEquivalentTo(0x0a), "plain protobuf: field 1, definition_id")
		Expect(blobs["packed/v1"][:2]).To(Equal([]byte{0x00, 0x02}), "packed")
		Expect(blobs["sealed/v1"][:2]).To(Equal([]byte{0x00, 0x01}), "sealed")

		filter := db.DesiredLRPFilter{Domain: "enc"}
		decoded, err := store.DesiredLRPs(b.ctx, filter)
		Expect(err).NotTo(HaveOccurred())
		filter.KeepEncoded = true
		kept, err := sqldb.Collect(store.EachDesiredLRP, b.ctx, filter)
		Expect(err).NotTo(HaveOccurred())
		for i, lrp := range kept {
			Expect(lrp.Definition).To(BeNil(), lrp.ProcessGuid)
			Expect(lrp.Routes).To(BeNil(), lrp.ProcessGuid)
			Expect(decoded[i].Definition).NotTo(BeNil(), lrp.ProcessGuid)
			Expect(decoded[i].Routes).NotTo(BeNil(), lrp.ProcessGuid)
		}
		expectReadAs(kept, decoded)

		infos, err := store.DesiredLRPSchedulingInfos(b.ctx, db.DesiredLRPFilter{Domain: "enc"})
		Expect(err).NotTo(HaveOccurred())
		keptInfos, err := sqldb.Collect(store.EachDesiredLRPSchedulingInfo, b.ctx, filter)
		Expect(err).NotTo(HaveOccurred())
		for i, info := range keptInfos {
			Expect(info.Routes).To(BeNil(), info.ProcessGuid)
			Expect(infos[i].Routes).NotTo(BeNil(), info.ProcessGuid)
		}
		expectReadAs(keptInfos, infos)

		By("refusing a stored definition that is not protobuf fields, naming its row")
		b.exec("UPDATE run_infos SET definition = ? WHERE process_guid = 'short' AND definition_id = 'v1'", []byte{0x0a, 0x7f, 'v'})
		err = store.EachDesiredLRP(b.ctx, db.DesiredLRPFilter{Domain: "enc", KeepEncoded: true}, func(*models.DesiredLRP) error { return nil })
		Expect(err).To(HaveErrorType(models.Error_InvalidRecord))
		Expect(err).To(MatchError(ContainSubstring(`definition "v1" of desired_lrp "short"`)))
	})

	It("writes the envelope format: marker, version, label, nonce, ciphertext and tag", func() {
		store := b.storeWith(encKeyring("key-2025"))
		desired, err := store.DesireLRP(b.ctx, secretLRP("web", encSecret))
		Expect(err).NotTo(HaveOccurred())
		plain, err := proto.MarshalOptions{Deterministic: true}.Marshal(desired.Definition)
		Expect(err).NotTo(HaveOccurred())
		blob := b.rawBlobs("run_infos")["web/v1"]
		label := "key-2025"
		Expect(blob).To(HaveLen(1 + 1 + 1 + len(label) + 12 + len(plain) + 16))
		Expect(blob[0]).To(BeEquivalentTo(0x00))
		Expect(blob[1]).To(BeEquivalentTo(0x01))
		Expect(blob[2]).To(BeEquivalentTo(len(label)))
		Expect(string(blob[3 : 3+len(label)])).To(Equal(label))

		// Two seals of the same content differ (a fresh nonce each).
		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: secretDefinition("", encSecret), UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.rawBlobs("run_infos")["web/v2"][3+len(label) : 3+len(label)+12]).NotTo(Equal(blob[3+len(label) : 3+len(label)+12]))
	})

	It("reuses a stored definition by content hash, whatever its blob", func() {
		plainStore := b.storeWith(nil)
		_, err := plainStore.DesireLRP(b.ctx, secretLRP("web", encSecret))
		Expect(err).NotTo(HaveOccurred())
		err = plainStore.RemoveDesiredLRP(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())

		store := b.storeWith(encKeyring("k1"))
		_, err = store.DesireLRP(b.ctx, secretLRP("web", encSecret))
		Expect(err).NotTo(HaveOccurred(), "the same content under the same id is reused")
		Expect(b.labelOf("web/v1")).To(Equal(""), "reused as stored")
		err = store.RemoveDesiredLRP(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		_, err = store.DesireLRP(b.ctx, secretLRP("web", "other"))
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
	})

	It("reads plain rows and rows under any configured key, and rotation leaves none under another key", func() {
		_, err := b.storeWith(nil).DesireLRP(b.ctx, secretLRP("plain", encSecret))
		Expect(err).NotTo(HaveOccurred())
		k1 := b.storeWith(encKeyring("k1"))
		_, err = k1.DesireLRP(b.ctx, secretLRP("one", encSecret))
		Expect(err).NotTo(HaveOccurred())
		for _, id := range []string{"v2", "v3", "v4"} {
			_, err = k1.UpdateDesiredLRP(b.ctx, "one", &models.DesiredLRPUpdate{Definition: secretDefinition("", encSecret+id), UpdateIdentifier: id})
			Expect(err).NotTo(HaveOccurred())
		}

		// Rotating: k2 active, k1 kept.
		k12 := b.storeWith(encKeyring("k2", "k1"))
		_, err = k12.DesireLRP(b.ctx, secretLRP("two", encSecret))
		Expect(err).NotTo(HaveOccurred())
		Expect(b.labelsIn("run_infos")).To(Equal(map[string]int{"": 1, "k1": 4, "k2": 1}))
		Expect(b.labelsIn("operations")).To(Equal(map[string]int{"": 1, "k1": 4, "k2": 1}))
		for _, key := range []string{"plain/v1", "one/v1", "one/v4", "two/v1"} {
			guid, id, _ := strings.Cut(key, "/")
			def, err := k12.Definition(b.ctx, guid, id)
			Expect(err).NotTo(HaveOccurred(), key)
			Expect(def.Action.Env[1].Value).To(HavePrefix(encSecret), key)
		}
		lrps, err := k12.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(lrps).To(HaveLen(3))
		_, _, err = k12.Operations(b.ctx, db.OperationFilter{})
		Expect(err).NotTo(HaveOccurred())

		var reports []sqldb.RotateProgress
		progress, err := k12.RotateKeys(b.ctx, sqldb.RotateOptions{BatchSize: 2, Progress: func(p sqldb.RotateProgress) {
			reports = append(reports, p)
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(progress.RunInfos).To(Equal(sqldb.RotateCounts{Seen: 6, Reencrypted: 5}))
		Expect(progress.Operations).To(Equal(sqldb.RotateCounts{Seen: 6, Reencrypted: 5}))
		// Batches of 2: 3 per table, each reported with the totals so far.
		Expect(reports).To(HaveLen(6))
		Expect(reports[0].Table).To(Equal("run_infos"))
		Expect(reports[0].RunInfos.Seen).To(BeEquivalentTo(2))
		Expect(reports[2].RunInfos.Seen).To(BeEquivalentTo(6))
		Expect(reports[3].Table).To(Equal("operations"))
		Expect(reports[5]).To(Equal(progress))

		Expect(b.labelsIn("run_infos")).To(Equal(map[string]int{"k2": 6}))
		Expect(b.labelsIn("operations")).To(Equal(map[string]int{"k2": 6}))

		// A board with k2 alone reads everything.
		k2 := b.storeWith(encKeyring("k2"))
		for _, key := range []string{"plain/v1", "one/v1", "one/v2", "one/v3", "one/v4", "two/v1"} {
			guid, id, _ := strings.Cut(key, "/")
			def, err := k2.Definition(b.ctx, guid, id)
			Expect(err).NotTo(HaveOccurred(), key)
			Expect(def.Action.Env[1].Value).To(HavePrefix(encSecret), key)
		}
		lrps, err = k2.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(lrps).To(HaveLen(3))
		ops, _, err := k2.Operations(b.ctx, db.OperationFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ops).To(HaveLen(6))
		for _, op := range ops {
			Expect(op.Parameters.GetTypeUrl()).To(HaveSuffix("LRPRequest"))
		}

		// Nothing left: a second pass reads and changes nothing.
		again, err := k12.RotateKeys(b.ctx, sqldb.RotateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(again.Total()).To(Equal(sqldb.RotateCounts{Seen: 12}))
	})

	It("names a key that is not configured, for every read and for rotation", func() {
		k0 := b.storeWith(encKeyring("k0"))
		desired, err := k0.DesireLRP(b.ctx, secretLRP("web", encSecret))
		Expect(err).NotTo(HaveOccurred())
		ops, _, err := k0.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web"})
		Expect(err).NotTo(HaveOccurred())
		opID := ops[0].Id

		k12 := b.storeWith(encKeyring("k2", "k1"))
		want := `run_infos web/v1: encrypted under key "k0", which is not among encryption_keys`
		_, err = k12.Definition(b.ctx, "web", "v1")
		Expect(err).To(HaveErrorType(models.Error_InvalidRecord))
		Expect(err).To(MatchError(ContainSubstring(want)))
		_, err = k12.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).To(MatchError(ContainSubstring(want)))
		_, err = k12.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
		Expect(err).To(MatchError(ContainSubstring(want)))
		_, err = k12.Operation(b.ctx, opID)
		Expect(err).To(HaveErrorType(models.Error_InvalidRecord))
		Expect(err).To(MatchError(ContainSubstring(`operations %s: encrypted under key "k0", which is not among encryption_keys`, opID)))
		_, err = k12.RotateKeys(b.ctx, sqldb.RotateOptions{})
		Expect(err).To(MatchError(ContainSubstring(want)))
		Expect(b.labelOf("web/v1")).To(Equal("k0"), "left as it was")

		_, err = b.storeWith(nil).Definition(b.ctx, "web", "v1")
		Expect(err).To(MatchError(ContainSubstring(`run_infos web/v1: encrypted under key "k0", but no encryption_keys are configured`)))
		_, err = b.storeWith(nil).RotateKeys(b.ctx, sqldb.RotateOptions{})
		Expect(err).To(MatchError(ContainSubstring("no encryption keys are configured")))

		// The scheduling view never opens a blob, so it is unaffected.
		infos, err := k12.DesiredLRPSchedulingInfos(b.ctx, db.DesiredLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(infos).To(HaveLen(1))
		Expect(infos[0].MemoryMb).To(Equal(desired.Definition.MemoryMb))
	})

	It("refuses a tampered blob, and a blob moved to another row", func() {
		store := b.storeWith(encKeyring("k1", "k2"))
		for _, guid := range []string{"web", "api"} {
			_, err := store.DesireLRP(b.ctx, secretLRP(guid, encSecret))
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: secretDefinition("", "x"), UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		blobs := b.rawBlobs("run_infos")
		refused := func(guid, id string) {
			_, err := store.Definition(b.ctx, guid, id)
			Expect(err).To(HaveErrorType(models.Error_InvalidRecord))
			Expect(err).To(MatchError(ContainSubstring(`run_infos %s/%s: cannot decrypt under key "k1": the blob was altered, or belongs to another row`, guid, id)))
		}

		tampered := bytes.Clone(blobs["web/v1"])
		tampered[len(tampered)-20] ^= 0x01
		b.exec("UPDATE run_infos SET definition = ? WHERE process_guid = 'web' AND definition_id = 'v1'", tampered)
		refused("web", "v1")

		// Another LRP's definition, and another version of the same LRP.
		b.exec("UPDATE run_infos SET definition = ? WHERE process_guid = 'api' AND definition_id = 'v1'", blobs["web/v1"])
		refused("api", "v1")
		b.exec("UPDATE run_infos SET definition = ? WHERE process_guid = 'web' AND definition_id = 'v2'", blobs["web/v1"])
		refused("web", "v2")

		// Relabeled under the other configured key.
		relabeled := bytes.Clone(blobs["web/v1"])
		relabeled[4] = '2'
		b.exec("UPDATE run_infos SET definition = ? WHERE process_guid = 'web' AND definition_id = 'v1'", relabeled)
		_, err = store.Definition(b.ctx, "web", "v1")
		Expect(err).To(MatchError(ContainSubstring(`cannot decrypt under key "k2"`)))

		// Cut short, or of a later format version.
		b.exec("UPDATE run_infos SET definition = ? WHERE process_guid = 'web' AND definition_id = 'v1'", blobs["web/v1"][:10])
		_, err = store.Definition(b.ctx, "web", "v1")
		Expect(err).To(MatchError(ContainSubstring(`run_infos web/v1: malformed encrypted blob`)))
		later := bytes.Clone(blobs["web/v1"])
		later[1] = 3 // 2 is a packed blob (compress.go)
		b.exec("UPDATE run_infos SET definition = ? WHERE process_guid = 'web' AND definition_id = 'v1'", later)
		_, err = store.Definition(b.ctx, "web", "v1")
		Expect(err).To(MatchError(ContainSubstring(`run_infos web/v1: encrypted blob of format version 3, which this board does not read`)))

		// An operation's parameters moved to another operation.
		ops, _, err := store.Operations(b.ctx, db.OperationFilter{})
		Expect(err).NotTo(HaveOccurred())
		params := b.rawBlobs("operations")
		b.exec("UPDATE operations SET parameters = ? WHERE id = ?", params[ops[0].Id], ops[1].Id)
		_, err = store.Operation(b.ctx, ops[1].Id)
		Expect(err).To(HaveErrorType(models.Error_InvalidRecord))
		Expect(err).To(MatchError(ContainSubstring(`operations %s: cannot decrypt under key "k1"`, ops[1].Id)))
	})

	It("skips a row that changed under a batch, and a later pass takes it", func() {
		k1 := b.storeWith(encKeyring("k1"))
		for i := range 5 {
			_, err := k1.DesireLRP(b.ctx, secretLRP(fmt.Sprintf("lrp-%d", i), encSecret))
			Expect(err).NotTo(HaveOccurred())
		}
		victim, err := k1.Definition(b.ctx, "lrp-1", "v1")
		Expect(err).NotTo(HaveOccurred())
		plain, err := proto.MarshalOptions{Deterministic: true}.Marshal(victim)
		Expect(err).NotTo(HaveOccurred())

		k2 := b.storeWith(encKeyring("k2", "k1"))
		opts := sqldb.WithRotateBeforeWrite(sqldb.RotateOptions{BatchSize: 2}, func(ctx context.Context, tx *sql.Tx, table string) error {
			if table != "run_infos" {
				return nil
			}
			// Once, in the first batch's transaction: lrp-0 is still
			// there until then. A transaction that is rolled back (a
			// commit fault, CommitFaultsEnv) takes the change with it,
			// and its retry makes it again.
			var left int
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM run_infos WHERE process_guid = 'lrp-0'").Scan(&left); err != nil || left == 0 {
				return err
			}
			// As a board with no keys would write it, between the batch's
			// read and its write; and one row of the batch deleted.
			if _, err := tx.ExecContext(ctx, dialect.Rebind(dialect.Name(b.dialect),
				"UPDATE run_infos SET definition = ? WHERE process_guid = 'lrp-1'"), plain); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, dialect.Rebind(dialect.Name(b.dialect), "DELETE FROM run_infos WHERE process_guid = 'lrp-0'"))
			return err
		})
		progress, err := k2.RotateKeys(b.ctx, opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(progress.RunInfos).To(Equal(sqldb.RotateCounts{Seen: 5, Reencrypted: 3, Skipped: 2}))
		Expect(progress.Operations).To(Equal(sqldb.RotateCounts{Seen: 5, Reencrypted: 5}))
		Expect(b.labelOf("lrp-1/v1")).To(Equal(""))

		progress, err = k2.RotateKeys(b.ctx, sqldb.RotateOptions{BatchSize: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(progress.RunInfos).To(Equal(sqldb.RotateCounts{Seen: 4, Reencrypted: 1}))
		Expect(b.labelsIn("run_infos")).To(Equal(map[string]int{"k2": 4}))
		got, err := b.storeWith(encKeyring("k2")).Definition(b.ctx, "lrp-1", "v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(EqualProto(victim))
	})

	It("leaves no secret anywhere in a dump of the database", func() {
		database, err := testdb.Create(b.dialect)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)
		conn, err := sqldb.Open(b.ctx, b.dialect, database.DSN)
		Expect(err).NotTo(HaveOccurred())
		Expect(migrations.Up(b.ctx, conn, b.dialect)).To(Succeed())
		store := newStore(conn, b.dialect, sqldb.WithEncryption(encKeyring("k1")))

		_, err = store.DesireLRP(b.ctx, secretLRP("web", encSecret))
		Expect(err).NotTo(HaveOccurred())
		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: secretDefinition("", encSecret+"-v2"), UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		queued := secretDefinition("", encSecret+"-v3")
		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: queued, UpdateIdentifier: "v3", Queue: true})
		Expect(err).NotTo(HaveOccurred())
		got, err := store.Definition(b.ctx, "web", "v3")
		Expect(err).NotTo(HaveOccurred())
		Expect(sameContent(got, queued)).To(BeTrue())

		dump := selectEverything(conn, b.dialect)
		Expect(len(dump)).To(BeNumerically(">", 1000))
		Expect(containsSecret(dump, encSecret)).To(BeFalse(), "SELECT of every column of every table")

		switch b.dialect {
		case testdb.SQLite:
			_, err := conn.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
			Expect(err).NotTo(HaveOccurred())
			for _, path := range []string{database.DSN, database.DSN + "-wal"} {
				file, err := os.ReadFile(path)
				if os.IsNotExist(err) {
					continue
				}
				Expect(err).NotTo(HaveOccurred())
				Expect(containsSecret(file, encSecret)).To(BeFalse(), path)
				if path == database.DSN {
					Expect(bytes.Contains(file, []byte("owner: team-web"))).To(BeTrue(), "the file holds the plain columns")
				}
			}
		case testdb.Postgres:
			if _, err := exec.LookPath("pg_dump"); err != nil {
				Skip("pg_dump is not installed")
			}
			out, err := exec.Command("pg_dump", "--data-only", database.DSN).Output()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(out)).To(ContainSubstring("owner: team-web"))
			Expect(containsSecret(out, encSecret)).To(BeFalse(), "pg_dump")
		case testdb.MySQL:
			if _, err := exec.LookPath("mysqldump"); err != nil {
				Skip("mysqldump is not installed")
			}
			out, err := exec.Command("mysqldump", mysqldumpArgs(database.DSN)...).Output()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(out)).To(ContainSubstring("owner: team-web"))
			Expect(containsSecret(out, encSecret)).To(BeFalse(), "mysqldump")
		}
	})
})

// selectEverything is every column of every row of every table of the
// database, concatenated: a dump that needs no tool.
func selectEverything(conn *sql.DB, dialect string) []byte {
	tablesQuery := map[string]string{
		testdb.SQLite:   "SELECT name FROM sqlite_master WHERE type = 'table'",
		testdb.Postgres: "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
		testdb.MySQL:    "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
	}[dialect]
	rows, err := conn.Query(tablesQuery)
	Expect(err).NotTo(HaveOccurred())
	var tables []string
	for rows.Next() {
		var t string
		Expect(rows.Scan(&t)).To(Succeed())
		tables = append(tables, t)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	rows.Close()
	Expect(tables).To(ContainElements("run_infos", "operations", "desired_lrps"))

	var dump bytes.Buffer
	for _, table := range tables {
		rows, err := conn.Query("SELECT * FROM " + table)
		Expect(err).NotTo(HaveOccurred())
		columns, err := rows.Columns()
		Expect(err).NotTo(HaveOccurred())
		for rows.Next() {
			values := make([]sql.RawBytes, len(columns))
			dest := make([]any, len(columns))
			for i := range values {
				dest[i] = &values[i]
			}
			Expect(rows.Scan(dest...)).To(Succeed())
			for _, v := range values {
				dump.Write(v)
				dump.WriteByte(0)
			}
		}
		Expect(rows.Err()).NotTo(HaveOccurred())
		rows.Close()
	}
	return dump.Bytes()
}

// mysqldumpArgs turns a go-sql-driver DSN into mysqldump's flags.
func mysqldumpArgs(dsn string) []string {
	cfg, err := mysql.ParseDSN(dsn)
	Expect(err).NotTo(HaveOccurred())
	host, port, found := strings.Cut(cfg.Addr, ":")
	if !found {
		port = "3306"
	}
	args := []string{"--protocol=tcp", "-h", host, "-P", port, "-u", cfg.User, "--no-create-info", "--skip-extended-insert"}
	if cfg.Passwd != "" {
		args = append(args, "--password="+cfg.Passwd)
	}
	return append(args, cfg.DBName)
}
