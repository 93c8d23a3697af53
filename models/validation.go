package models

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// Limits enforced by validation. Lengths are in bytes.
const (
	// MaxInstances bounds one LRP: desiring it writes one row per instance
	// in a single transaction, and a typo like 1000000 should be an error,
	// not a stalled board.
	MaxInstances = 100000
	// MaxDomainLength matches the domain columns, VARCHAR(255).
	MaxDomainLength = 255
	// MaxCellIDLength matches the cell_id column, VARCHAR(255).
	MaxCellIDLength = 255
	// MaxAnnotationBytes is 10 KiB.
	MaxAnnotationBytes = 10 * 1024
	// MaxRoutesBytes is 128 KiB of routes, measured as compact JSON.
	MaxRoutesBytes = 128 * 1024
	// MaxRoutesDepth is how deep routes may nest: the routes object is
	// level 1, each object or list inside it one more. Routers' routes
	// nest three or four levels ({"cf-router": [{"hostnames": [...]}]});
	// a few thousand levels fit in 128 KiB of JSON, and past about 5,000
	// a standard protobuf reader refuses the message (its recursion
	// limit), so such routes, once stored, would break every list, event
	// and operation that carries them.
	MaxRoutesDepth = 32
	// MaxPlacementTags and MaxPlacementTagBytes bound a cell's or an
	// LRP's placement tags, kept as a JSON list in a TEXT column: 64 of
	// 255 bytes stay well inside MySQL's 64 KiB TEXT, escapes and all,
	// where unbounded tags were kept by SQLite and Postgres and refused by
	// MySQL.
	MaxPlacementTags     = 64
	MaxPlacementTagBytes = 255
	// MaxPorts is the most ports one definition may expose.
	MaxPorts = 8
	// MaxDomainTTLSeconds is ten years. A domain that should never expire
	// uses ttl 0; the bound keeps ttl in nanoseconds far from overflowing.
	MaxDomainTTLSeconds = 10 * 365 * 24 * 60 * 60
)

const (
	processGuidPattern = `^[a-zA-Z0-9_-]{1,128}$`
	// A definition id is stored in VARCHAR(64) columns and shows up in
	// logs and CLI output, so it is short and needs no quoting.
	definitionIDPattern = `^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`
)

var (
	processGuidRegexp  = regexp.MustCompile(processGuidPattern)
	definitionIDRegexp = regexp.MustCompile(definitionIDPattern)
)

// isProcessGuid and isDefinitionID say whether s matches processGuidPattern
// and definitionIDPattern, byte by byte: a cell's bulk report holds three
// such names for each of its instances, and a regular expression took a
// tenth of the board's CPU with a million instances reporting. Their
// validators accept what these accept at once and run the patterns only
// to explain a refusal; a spec holds the two to the patterns on random
// names.
func isProcessGuid(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return true
}

func isDefinitionID(s string) bool {
	if len(s) < 1 || len(s) > 64 || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-' {
			return false
		}
	}
	return true
}

func isAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

// ValidateProcessGuid reports whether guid is a valid process_guid.
func ValidateProcessGuid(guid string) error {
	return validateProcessGuid("process_guid", guid)
}

// ValidateUpdateIdentifier reports whether id may name a definition. The
// same format applies to every definition_id a client sends.
func ValidateUpdateIdentifier(id string) error {
	return validateDefinitionID("update_identifier", id)
}

func validateProcessGuid(path, guid string) error {
	if isProcessGuid(guid) {
		return nil
	}
	if guid == "" {
		return ErrInvalidField(path, "required")
	}
	if err := validateName(path, guid); err != nil {
		return err
	}
	if !processGuidRegexp.MatchString(guid) {
		return ErrInvalidField(path, "must match "+processGuidPattern+", got "+quoteShort(guid))
	}
	return nil
}

func validateDefinitionID(path, id string) error {
	if isDefinitionID(id) {
		return nil
	}
	if id == "" {
		return ErrInvalidField(path, "required")
	}
	if err := validateName(path, id); err != nil {
		return err
	}
	if !definitionIDRegexp.MatchString(id) {
		return ErrInvalidField(path, "must match "+definitionIDPattern+", got "+quoteShort(id))
	}
	return nil
}

func validateRequiredDomain(path, domain string) error {
	if domain == "" {
		return ErrInvalidField(path, "required")
	}
	return validateDomainFilter(path, domain)
}

// validateDomainFilter checks a domain a request filters by: empty (no
// filter) or a domain name. A filter that could never name a stored domain
// is refused rather than answered with nothing, as MySQL would answer
// "apps " with the rows of "apps".
func validateDomainFilter(path, domain string) error {
	if domain == "" {
		return nil
	}
	if err := validateMaxBytes(path, domain, MaxDomainLength); err != nil {
		return err
	}
	return validateName(path, domain)
}

func validateMaxBytes(path, value string, limit int) error {
	if len(value) > limit {
		return ErrInvalidField(path, fmt.Sprintf("must be at most %d bytes, got %d", limit, len(value)))
	}
	return nil
}

func validateInstances(path string, instances int32) error {
	if instances < 0 || instances > MaxInstances {
		return ErrInvalidField(path, fmt.Sprintf("must be between 0 and %d, got %d", MaxInstances, instances))
	}
	return nil
}

func validateNotNegative(path string, value int64) error {
	if value < 0 {
		return ErrInvalidField(path, fmt.Sprintf("must not be negative, got %d", value))
	}
	return nil
}

func validatePort(path string, port uint32) error {
	if port < 1 || port > 65535 {
		return ErrInvalidField(path, fmt.Sprintf("must be 1-65535, got %d", port))
	}
	return nil
}

// validateNoNUL refuses U+0000 in free text (an annotation, a reason):
// Postgres cannot keep it in a text column, so the same request would be
// kept by SQLite and MySQL and fail on Postgres.
func validateNoNUL(path, value string) error {
	if strings.IndexByte(value, 0) >= 0 {
		return ErrInvalidField(path, "must not hold NUL (U+0000)")
	}
	return nil
}

func validateUTF8(path, value string) error {
	if !utf8.ValidString(value) {
		return ErrInvalidField(path, "must be valid UTF-8")
	}
	return nil
}

func validatePlacementTags(path string, tags []string) error {
	if len(tags) > MaxPlacementTags {
		return ErrInvalidField(path, fmt.Sprintf("must be at most %d tags, got %d", MaxPlacementTags, len(tags)))
	}
	for i, tag := range tags {
		if tag == "" {
			return ErrInvalidField(indexed(path, i), "must not be empty")
		}
		if err := validateMaxBytes(indexed(path, i), tag, MaxPlacementTagBytes); err != nil {
			return err
		}
		if err := validateName(indexed(path, i), tag); err != nil {
			return err
		}
	}
	return nil
}

func validateProcessGuids(path string, guids []string) error {
	for i, guid := range guids {
		if err := validateProcessGuid(indexed(path, i), guid); err != nil {
			return err
		}
	}
	return nil
}

// validateRoutes measures routes as compact JSON, the form the board
// stores, so the limit means the same thing whichever encoding the client
// sent. A nil Struct is "no routes". Every value must be one JSON can
// carry: protobuf can also hold NaN, infinities and empty values, which
// would make the LRP unreadable to a JSON client later.
func validateRoutes(path string, routes *structpb.Struct) error {
	if routes == nil {
		return nil
	}
	// Before the values, whose paths grow with the depth.
	if structDepth(routes, MaxRoutesDepth) > MaxRoutesDepth {
		return ErrInvalidField(path, fmt.Sprintf("must nest at most %d levels deep", MaxRoutesDepth))
	}
	if err := validateStructValues(path, routes); err != nil {
		return err
	}
	encoded, err := json.Marshal(routes.AsMap())
	if err != nil {
		return ErrInvalidField(path, "must be representable as JSON: "+err.Error())
	}
	if len(encoded) > MaxRoutesBytes {
		return ErrInvalidField(path, fmt.Sprintf("must be at most %d bytes as JSON, got %d", MaxRoutesBytes, len(encoded)))
	}
	return nil
}

// structDepth is how deep s nests (s itself is level 1, each object or
// list in it one more), looking no deeper than limit+1: the answer is
// exact up to limit, and limit+1 says "deeper than limit".
func structDepth(s *structpb.Struct, limit int) int {
	deepest := 1
	var walk func(v *structpb.Value, depth int)
	walk = func(v *structpb.Value, depth int) {
		if deepest > limit {
			return
		}
		switch kind := v.GetKind().(type) {
		case *structpb.Value_StructValue:
			deepest = max(deepest, depth)
			for _, field := range kind.StructValue.GetFields() {
				walk(field, depth+1)
			}
		case *structpb.Value_ListValue:
			deepest = max(deepest, depth)
			for _, item := range kind.ListValue.GetValues() {
				walk(item, depth+1)
			}
		}
	}
	for _, field := range s.GetFields() {
		walk(field, 2)
	}
	return deepest
}

func validateStructValues(path string, s *structpb.Struct) error {
	// Sorted, so that the first problem reported is always the same one.
	for _, key := range slices.Sorted(maps.Keys(s.GetFields())) {
		if err := validateJSONValue(keyed(path, key), s.GetFields()[key]); err != nil {
			return err
		}
	}
	return nil
}

func validateJSONValue(path string, v *structpb.Value) error {
	switch kind := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if math.IsNaN(kind.NumberValue) || math.IsInf(kind.NumberValue, 0) {
			return ErrInvalidField(path, fmt.Sprintf("must be a finite number, got %v", kind.NumberValue))
		}
	case *structpb.Value_StructValue:
		return validateStructValues(path, kind.StructValue)
	case *structpb.Value_ListValue:
		for i, item := range kind.ListValue.GetValues() {
			if err := validateJSONValue(indexed(path, i), item); err != nil {
				return err
			}
		}
	case nil:
		return ErrInvalidField(path, "must hold a value (null, a number, a string, a bool, an object or a list)")
	}
	return nil
}

// child joins a field path: child("desired_lrp", "domain") is
// "desired_lrp.domain"; a message validated on its own has an empty path.
// A path can hold a client's map key (routes' routers are), so it is kept
// printable: an error message never carries a control character or
// invalid UTF-8 from a request (see printablePath).
func child(path, field string) string {
	if path == "" {
		return printablePath(field)
	}
	return printablePath(path + "." + field)
}

func indexed(path string, i int) string {
	return printablePath(path) + "[" + strconv.Itoa(i) + "]"
}

// keyed is the path of a map entry, such as a key of routes: a plain key
// reads as a field ("routes.http"); any other is quoted, cut short, in
// brackets (routes["a.b"], routes["a\nb"]), so that a key holding a dot,
// a bracket, ": " or a control character does not garble the path.
func keyed(path, key string) string {
	if plainKey.MatchString(key) {
		return child(path, key)
	}
	return path + "[" + quoteShort(key) + "]"
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// printablePath escapes, Go-style, whatever in path is not printable
// UTF-8 (control and format characters, invalid bytes), leaving the rest,
// and already escaped parts, as they are.
func printablePath(path string) string {
	if printableASCII(path) || utf8.ValidString(path) && strings.IndexFunc(path, notPrintable) < 0 {
		return path
	}
	var b strings.Builder
	for at := 0; at < len(path); {
		r, size := utf8.DecodeRuneInString(path[at:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, path[at])
		case notPrintable(r):
			quoted := strconv.QuoteRune(r)
			b.WriteString(quoted[1 : len(quoted)-1])
		default:
			b.WriteString(path[at : at+size])
		}
		at += size
	}
	return b.String()
}

// printableASCII says whether s is all printable ASCII, as every path of
// a valid request is: the common case, checked byte by byte rather than
// rune by rune against Unicode's tables (a cell's bulk report builds some
// ten paths for each of its instances).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// quoteLimit is how many bytes of a rejected value an error quotes.
const quoteLimit = 64

// quoteShort quotes a rejected value for an error message, cut short so
// that a 1 MiB value does not come back in the error.
func quoteShort(value string) string {
	if len(value) <= quoteLimit {
		return fmt.Sprintf("%q", value)
	}
	cut := quoteLimit
	for cut > 0 && !utf8.RuneStart(value[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...", value[:cut])
}
