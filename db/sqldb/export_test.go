package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Seams for the external test package.

var (
	DecodeRoutes      = decodeRoutes
	ParseRoutes       = parseRoutes
	RoutesProtobuf    = routesProtobuf
	IsRetryable       = isRetryable
	IsUniqueViolation = isUniqueViolation
	Pack              = pack
	Unpack            = unpack
)

// Collect is collect, for reading a streaming read's items at once.
func Collect[Filter, Item any](each func(context.Context, Filter, func(Item) error) error, ctx context.Context, filter Filter) ([]Item, error) {
	return collect(each, ctx, filter)
}

// BundleSpans is how many events each outbox row holds (bundle.go);
// MaxBundle the most one row holds.
var BundleSpans = bundleSpans

const MaxBundle = maxBundle

// AppendBundle appends a bundle's blob of events of types with payloads
// raws.
var AppendBundle = appendBundle

// ReadBundle reads a bundle's blob, which must hold count events, into
// their types and payloads.
func ReadBundle(blob []byte, count int) (types []string, raws [][]byte, err error) {
	bundle, err := readBundle(blob, count)
	for _, e := range bundle {
		types, raws = append(types, e.eventType), append(raws, e.raw)
	}
	return types, raws, err
}

// PackDictionary is the packed format's preset dictionary.
const PackDictionary = packDictionary

// InflateFixed is unpack's reader of fixed-code streams; UnpackStandard
// is unpack by the standard library's reader alone.
var InflateFixed = inflateFixed

var UnpackStandard = unpackStandard

// DeflateFixed is the raw DEFLATE pack writes for plain.
func DeflateFixed(plain []byte) []byte {
	return appendDeflateFixed(nil, packDictionaryBytes, plain)
}

func Upsert(dialectName, table string, columns, key, update []string) string {
	return mustDriver(dialectName).upsert(table, columns, key, update)
}

func InsertMissing(dialectName, table string, columns, key []string, rows int) string {
	return mustDriver(dialectName).insertMissing(table, columns, key, rows)
}

// Transact runs fn through the retrying transaction runner.
func (s *SQLDB) Transact(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.transact(ctx, "test", fn)
}

var (
	PostgresDSN = postgresDSN
	MySQLDSN    = mysqlDSN
)

// IsUnreachable is isUnreachable, for its table test.
var IsUnreachable = isUnreachable

// PagePlanning is the statement a dialect's list pages run first ("" for
// none), for the spec that explains their plans.
func PagePlanning(dialectName string) string { return mustDriver(dialectName).pagePlanning() }

// DesiredPageQuery and the others are the queries of one page of each
// list, as the store runs them.
func DesiredPageQuery(filter db.DesiredLRPFilter) (string, []any) {
	return desiredListQuery(selectDesiredLRP, filter, sortedGuids(filter), filter.Limit)
}

func SchedulingInfoPageQuery(filter db.DesiredLRPFilter) (string, []any) {
	return desiredListQuery(selectSchedulingInfo, filter, sortedGuids(filter), filter.Limit)
}

func sortedGuids(filter db.DesiredLRPFilter) []string {
	if len(filter.ProcessGuids) == 0 {
		return nil
	}
	guids := uniqueStrings(filter.ProcessGuids)
	slices.Sort(guids)
	return guids
}

func ActualPageQuery(filter db.ActualLRPFilter) (string, []any) { return actualListQuery(filter) }

func CellPageQuery(dialectName string, limit int) string {
	return cellPageQuery(mustDriver(dialectName), limit)
}

// SelectActualByKeys is the driver's read of n actual LRP rows by key.
func SelectActualByKeys(dialectName string, n int, lock bool) string {
	query, _ := mustDriver(dialectName).selectByKeys(actualLRPKeys, "state", make([]any, 3*n), lock)
	return query
}

// UpdateActualByKeys is the driver's update of n actual LRP rows by key,
// setting state.
func UpdateActualByKeys(dialectName string, n int) string {
	query, _ := mustDriver(dialectName).updateByKeys(actualLRPKeys, "state = ?", nil, make([]any, 3*n))
	return query
}

// DeleteActualByKeys is the driver's delete of n actual LRP rows by key.
func DeleteActualByKeys(dialectName string, n int) string {
	query, _ := mustDriver(dialectName).deleteByKeys(actualLRPKeys, make([]any, 3*n))
	return query
}

// ActualKeysArgs is the driver's arguments for a read of keys' actual LRP
// rows (selectByKeys).
func ActualKeysArgs(dialectName string, keys []models.ActualLRPKey) []any {
	_, args := mustDriver(dialectName).selectByKeys(actualLRPKeys, "state", actualKeyArgs(keys), false)
	return args
}

// NewReceiptToken makes a commit receipt's token as a write would, at the
// store's time.
func (s *SQLDB) NewReceiptToken() []byte { return s.newReceiptToken() }

// Settle is what a write whose COMMIT failed with commitErr learns from
// its receipt token (commit.go); IsCommitLost says whether that answer was
// "it did not apply, run it again".
func (s *SQLDB) Settle(token []byte, commitErr error) error { return s.settle(token, commitErr) }

func IsCommitLost(err error) bool { return errors.Is(err, errCommitLost) }

// FastUpdates is how many updates the Postgres fast path stored
// (updateNowPostgres).
func (s *SQLDB) FastUpdates() int64 { return s.fastUpdates.Load() }

// FastDesires is how many desires the Postgres fast path stored.
func (s *SQLDB) FastDesires() int64 { return s.fastDesires.Load() }
