package migrations

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corkboard/corkboard/models"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
)

// LegacyDefinitionID names the definition the import makes from a classic
// run_info blob. A fixed, readable id says where the definition came from in
// every listing; each LRP has exactly one such definition.
const LegacyDefinitionID = "legacy"

// importBatch is how many process guids are read and written at a time, so
// the import's memory does not grow with the database.
const importBatch = 200

var importLegacy = &goStep{
	Name:     "import_classic_bbs",
	Revision: 1,
	Describe: describeImport,
	Run:      runImport,
}

func describeImport(ctx context.Context, env stepEnv) (string, error) {
	prefix := legacyPrefix
	if ok, err := tableExists(ctx, env.q, env.dialect, legacyPrefix+"desired_lrps"); err != nil {
		return "", err
	} else if !ok {
		// Not moved aside yet: a classic database still has its own names.
		classic, err := isClassic(ctx, env.q, env.dialect)
		if err != nil {
			return "", err
		}
		if !classic {
			return "no classic BBS tables: nothing to import", nil
		}
		prefix = ""
	}
	var parts []string
	for _, t := range classicTables {
		ok, err := tableExists(ctx, env.q, env.dialect, prefix+t)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		var n int
		if err := env.q.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+prefix+t).Scan(&n); err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%d rows of %s%s", n, prefix, t))
	}
	return fmt.Sprintf("import %s: each classic run_info becomes run_infos definition %q (active and healthy), every actual LRP is stamped with it",
		strings.Join(parts, ", "), LegacyDefinitionID), nil
}

func runImport(ctx context.Context, env stepEnv) error {
	ok, err := tableExists(ctx, env.q, env.dialect, legacyPrefix+"desired_lrps")
	if err != nil || !ok {
		return err // a database that never was classic: nothing to import
	}
	hasActual, err := tableExists(ctx, env.q, env.dialect, legacyPrefix+"actual_lrps")
	if err != nil {
		return err
	}
	hasDomains, err := tableExists(ctx, env.q, env.dialect, legacyPrefix+"domains")
	if err != nil {
		return err
	}
	im := importer{env: env, now: env.now().UnixNano()}
	if hasDomains {
		if err := im.domains(ctx); err != nil {
			return err
		}
	}
	guids, err := im.processGuids(ctx, hasActual)
	if err != nil {
		return err
	}
	for start := 0; start < len(guids); start += importBatch {
		batch := guids[start:min(start+importBatch, len(guids))]
		if err := im.desired(ctx, batch); err != nil {
			return err
		}
		if hasActual {
			if err := im.actual(ctx, batch); err != nil {
				return err
			}
		}
	}
	return nil
}

type importer struct {
	env stepEnv
	now int64
}

func (im importer) exec(ctx context.Context, query string, args ...any) error {
	_, err := im.env.q.ExecContext(ctx, sqldialect.Rebind(sqldialect.Name(im.env.dialect), query), args...)
	return err
}

// insertOnce writes a row. On MySQL an interrupted import is retried over
// rows it already wrote, so there a row whose key exists is skipped. On
// Postgres and SQLite the import runs in one transaction on empty tables,
// and a key conflict would mean two classic rows collapsing into one: it
// stays an error.
func (im importer) insertOnce(ctx context.Context, table string, cols []string, args ...any) error {
	query := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "),
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
	query += driverOf(im.env.dialect).insertOnceSuffix(cols[0])
	return im.exec(ctx, query, args...)
}

func (im importer) domains(ctx context.Context) error {
	rows, err := im.env.q.QueryContext(ctx, "SELECT domain, expire_time FROM legacy_domains ORDER BY domain")
	if err != nil {
		return fmt.Errorf("read legacy_domains: %w", err)
	}
	type domain struct {
		name    string
		expires int64
	}
	var all []domain
	for rows.Next() {
		var d domain
		if err := rows.Scan(&d.name, &d.expires); err != nil {
			rows.Close()
			return fmt.Errorf("read legacy_domains: %w", err)
		}
		all = append(all, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read legacy_domains: %w", err)
	}
	for _, d := range all {
		if err := im.insertOnce(ctx, "domains", []string{"domain", "expires_at"}, d.name, d.expires); err != nil {
			return fmt.Errorf("import domain %q: %w", d.name, err)
		}
	}
	return nil
}

func (im importer) processGuids(ctx context.Context, hasActual bool) ([]string, error) {
	query := "SELECT process_guid FROM legacy_desired_lrps"
	if hasActual {
		// Instances whose LRP is gone are kept too; the union finds them.
		query += " UNION SELECT process_guid FROM legacy_actual_lrps"
	}
	rows, err := im.env.q.QueryContext(ctx, query+" ORDER BY 1")
	if err != nil {
		return nil, fmt.Errorf("read classic process guids: %w", err)
	}
	defer rows.Close()
	var guids []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, err
		}
		guids = append(guids, g)
	}
	return guids, rows.Err()
}

func inClause(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

func anyArgs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

type classicDesired struct {
	guid, domain                       string
	instances, memoryMB, diskMB        int32
	annotation, routes, tags, tagEpoch sql.NullString
	tagIndex                           int64
	runInfo                            []byte
}

func (im importer) desired(ctx context.Context, guids []string) error {
	rows, err := im.env.q.QueryContext(ctx, sqldialect.Rebind(sqldialect.Name(im.env.dialect),
		`SELECT process_guid, domain, instances, annotation, routes, memory_mb, disk_mb, placement_tags,
		        modification_tag_epoch, modification_tag_index, run_info
		   FROM legacy_desired_lrps WHERE process_guid IN `+inClause(len(guids))), anyArgs(guids)...)
	if err != nil {
		return fmt.Errorf("read legacy_desired_lrps: %w", err)
	}
	var batch []classicDesired
	for rows.Next() {
		var d classicDesired
		if err := rows.Scan(&d.guid, &d.domain, &d.instances, &d.annotation, &d.routes, &d.memoryMB, &d.diskMB,
			&d.tags, &d.tagEpoch, &d.tagIndex, &d.runInfo); err != nil {
			rows.Close()
			return fmt.Errorf("read legacy_desired_lrps: %w", err)
		}
		batch = append(batch, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read legacy_desired_lrps: %w", err)
	}
	for _, d := range batch {
		if err := im.oneDesired(ctx, d); err != nil {
			return fmt.Errorf("classic desired LRP %q: %w", d.guid, err)
		}
	}
	return nil
}

func (im importer) oneDesired(ctx context.Context, d classicDesired) error {
	def, err := decodeRunInfo(d.runInfo)
	if err != nil {
		return err
	}
	def.DefinitionId = LegacyDefinitionID
	def.MemoryMb = d.memoryMB
	def.DiskMb = d.diskMB
	def.CreatedAt = im.now
	tags, err := decodePlacementTags(d.tags.String)
	if err != nil {
		return err
	}
	routesText := strings.TrimSpace(d.routes.String)
	var routes *structpb.Struct
	if routesText != "" {
		routes = &structpb.Struct{}
		if err := protojson.Unmarshal([]byte(routesText), routes); err != nil {
			return fmt.Errorf("routes: must be a JSON object: %w", err)
		}
	}
	// The board's own rules, so nothing is imported that its API would refuse.
	lrp := &models.DesiredLRP{
		ProcessGuid: d.guid, Domain: d.domain, Instances: d.instances, PlacementTags: tags,
		Routes: routes, Annotation: d.annotation.String, Definition: def,
	}
	if err := lrp.Validate(); err != nil {
		return err
	}
	blob, err := proto.MarshalOptions{Deterministic: true}.Marshal(def)
	if err != nil {
		return fmt.Errorf("encode definition: %w", err)
	}
	tagsJSON, err := json.Marshal(append([]string{}, tags...))
	if err != nil {
		return err
	}
	if err := im.insertOnce(ctx, "run_infos",
		[]string{"process_guid", "definition_id", "content_hash", "memory_mb", "disk_mb", "definition", "created_at"},
		d.guid, LegacyDefinitionID, models.DefinitionContentHash(def), d.memoryMB, d.diskMB, blob, im.now); err != nil {
		return fmt.Errorf("write run_infos: %w", err)
	}
	if err := im.insertOnce(ctx, "desired_lrps",
		[]string{"process_guid", "domain", "instances", "placement_tags", "routes", "annotation",
			"active_definition_id", "healthy_definition_id", "modification_tag_epoch", "modification_tag_index",
			"created_at", "updated_at"},
		d.guid, d.domain, d.instances, string(tagsJSON), routesText, d.annotation.String,
		LegacyDefinitionID, LegacyDefinitionID, d.tagEpoch.String, d.tagIndex, im.now, im.now); err != nil {
		return fmt.Errorf("write desired_lrps: %w", err)
	}
	return nil
}

type classicActual struct {
	guid                                 string
	index                                int32
	evacuating                           bool
	domain, instanceGuid, cellID, state  string
	netInfo, crashReason, placementError sql.NullString
	tagEpoch                             sql.NullString
	crashCount                           int32
	since, tagIndex                      int64
}

var classicStates = map[string]bool{"UNCLAIMED": true, "CLAIMED": true, "RUNNING": true, "CRASHED": true}

func (im importer) actual(ctx context.Context, guids []string) error {
	rows, err := im.env.q.QueryContext(ctx, sqldialect.Rebind(sqldialect.Name(im.env.dialect),
		`SELECT process_guid, instance_index, evacuating, domain, instance_guid, cell_id, state, net_info,
		        crash_count, crash_reason, since, placement_error, modification_tag_epoch, modification_tag_index
		   FROM legacy_actual_lrps WHERE process_guid IN `+inClause(len(guids))), anyArgs(guids)...)
	if err != nil {
		return fmt.Errorf("read legacy_actual_lrps: %w", err)
	}
	var batch []classicActual
	for rows.Next() {
		var a classicActual
		if err := rows.Scan(&a.guid, &a.index, &a.evacuating, &a.domain, &a.instanceGuid, &a.cellID, &a.state, &a.netInfo,
			&a.crashCount, &a.crashReason, &a.since, &a.placementError, &a.tagEpoch, &a.tagIndex); err != nil {
			rows.Close()
			return fmt.Errorf("read legacy_actual_lrps: %w", err)
		}
		batch = append(batch, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read legacy_actual_lrps: %w", err)
	}
	for _, a := range batch {
		if err := im.oneActual(ctx, a); err != nil {
			return fmt.Errorf("classic actual LRP %q index %d (evacuating %t): %w", a.guid, a.index, a.evacuating, err)
		}
	}
	return nil
}

func (im importer) oneActual(ctx context.Context, a classicActual) error {
	if !classicStates[a.state] {
		return fmt.Errorf("state: %q is not one of UNCLAIMED, CLAIMED, RUNNING, CRASHED", a.state)
	}
	presence := models.ActualLRP_ORDINARY
	if a.evacuating {
		presence = models.ActualLRP_EVACUATING
	}
	ni, err := decodeNetInfo(a.netInfo.String)
	if err != nil {
		return err
	}
	var netInfo []byte // NULL when the instance has no address yet
	if ni != nil && proto.Size(ni) > 0 {
		if netInfo, err = (proto.MarshalOptions{Deterministic: true}).Marshal(ni); err != nil {
			return fmt.Errorf("encode net_info: %w", err)
		}
	}
	// Classic instances had no routable mark: a running one was routed.
	routable := a.state == "RUNNING"
	err = im.insertOnce(ctx, "actual_lrps",
		[]string{"process_guid", "instance_index", "presence", "domain", "instance_guid", "cell_id", "definition_id",
			"state", "net_info", "crash_count", "crash_reason", "since", "placement_error", "routable", "occupied",
			"modification_tag_epoch", "modification_tag_index"},
		a.guid, a.index, presence.String(), a.domain, a.instanceGuid, a.cellID, LegacyDefinitionID,
		a.state, netInfo, a.crashCount, a.crashReason.String, a.since, a.placementError.String, routable, false,
		a.tagEpoch.String, a.tagIndex)
	if err != nil {
		return fmt.Errorf("write actual_lrps: %w", err)
	}
	return nil
}
