// Package configref writes the config reference (docs/config.md) from the
// code, so that the config structs stay its one home: the keys are the
// fields' json tags (nested ones as "parent.key"), the types their Go
// types (a string a configfile.Duration checks is a duration), the
// defaults a value of the struct with the command's own defaults applied,
// and the meanings the fields' doc comments. A field without a doc comment
// is an error, so a new key cannot go undocumented.
//
// The commands' config structs live in their main packages, which nothing
// imports; so each command's test builds its Component (its Config with
// applyDefaults run) and compares or rewrites its section of
// docs/config.md (make config-ref).
package configref

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// modulePath is the import path prefix of this repository's packages,
// whose sources are under the module root.
const modulePath = "github.com/corkboard/corkboard"

// Component is one command's config.
type Component struct {
	// Name names the section in docs/config.md ("bbs").
	Name string
	// Dir is the command's package directory, relative to the module root
	// ("cmd/bbs"): a main package's types carry no import path to find it.
	Dir string
	// Defaults is the config struct (not a pointer) with the command's
	// defaults applied.
	Defaults any
}

// Row is one key of the reference.
type Row struct {
	Key     string
	Type    string
	Default string
	Meaning string
}

// Rows is the reference of a component, in field order, nested keys after
// their parent. root is the module root. It fails naming every field that
// has no doc comment.
func Rows(root string, c Component) ([]Row, error) {
	value := reflect.ValueOf(c.Defaults)
	if value.Kind() != reflect.Struct {
		return nil, fmt.Errorf("configref: %s: Defaults is a %s, not a struct", c.Name, value.Kind())
	}
	durations, err := durationKeys(filepath.Join(root, c.Dir))
	if err != nil {
		return nil, err
	}
	w := walker{root: root, mainDir: c.Dir, durations: durations, parsed: map[string]map[string]*ast.StructType{}}
	rows := w.walk(value.Type(), value, "")
	if len(w.undocumented) > 0 {
		return nil, fmt.Errorf("configref: %s: fields without a doc comment: %s", c.Name, strings.Join(w.undocumented, ", "))
	}
	return rows, nil
}

type walker struct {
	root      string
	mainDir   string
	durations map[string]bool
	// parsed is the struct types of each package directory parsed so far.
	parsed       map[string]map[string]*ast.StructType
	undocumented []string
	err          error
}

// walk lists the keys of struct type typ; value is its defaults, or the
// invalid Value when the struct itself is absent by default.
func (w *walker) walk(typ reflect.Type, value reflect.Value, prefix string) []Row {
	docs, err := w.fieldDocs(typ)
	if err != nil {
		w.undocumented = append(w.undocumented, err.Error())
		return nil
	}
	keys := map[string]string{}
	for i := range typ.NumField() {
		if name := jsonName(typ.Field(i)); name != "" {
			keys[typ.Field(i).Name] = prefix + name
		}
	}
	var rows []Row
	for i := range typ.NumField() {
		field := typ.Field(i)
		name := jsonName(field)
		if name == "" {
			continue
		}
		key := prefix + name
		doc := docs[field.Name]
		if doc == "" {
			w.undocumented = append(w.undocumented, typ.Name()+"."+field.Name)
		}
		var fieldValue reflect.Value
		if value.IsValid() {
			fieldValue = value.Field(i)
		}
		inner := field.Type
		if inner.Kind() == reflect.Pointer {
			inner = inner.Elem()
			if fieldValue.IsValid() {
				fieldValue = fieldValue.Elem() // invalid when nil
			}
		}
		rows = append(rows, Row{
			Key:     key,
			Type:    typeName(inner, w.durations[key]),
			Default: defaultText(fieldValue, w.durations[key]),
			Meaning: meaning(doc, field.Name, keys),
		})
		if inner.Kind() == reflect.Struct {
			rows = append(rows, w.walk(inner, fieldValue, key+".")...)
		}
	}
	return rows
}

// fieldDocs is the doc comment of each field of struct type typ, read from
// its package's source; a field with none maps to "".
func (w *walker) fieldDocs(typ reflect.Type) (map[string]string, error) {
	dir := w.mainDir
	if pkg := typ.PkgPath(); pkg != "main" {
		rel, ok := strings.CutPrefix(pkg, modulePath+"/")
		if !ok {
			return nil, fmt.Errorf("%s.%s is not from this module", pkg, typ.Name())
		}
		dir = rel
	}
	structs, ok := w.parsed[dir]
	if !ok {
		var err error
		if structs, err = parseStructs(filepath.Join(w.root, dir)); err != nil {
			return nil, err
		}
		w.parsed[dir] = structs
	}
	st, ok := structs[typ.Name()]
	if !ok {
		return nil, fmt.Errorf("no struct %s in %s", typ.Name(), dir)
	}
	docs := map[string]string{}
	for _, field := range st.Fields.List {
		text := field.Doc.Text()
		if text == "" {
			text = field.Comment.Text()
		}
		for _, name := range field.Names {
			docs[name.Name] = text
		}
	}
	return docs, nil
}

// parseStructs reads the struct types declared in a package directory's
// non-test Go files.
func parseStructs(dir string) (map[string]*ast.StructType, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	structs := map[string]*ast.StructType{}
	for _, file := range files {
		ast.Inspect(file, func(n ast.Node) bool {
			if spec, ok := n.(*ast.TypeSpec); ok {
				if st, ok := spec.Type.(*ast.StructType); ok {
					structs[spec.Name.Name] = st
				}
			}
			return true
		})
	}
	return structs, nil
}

func parseDir(dir string) ([]*ast.File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, file)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	return files, nil
}

// durationKeys is the keys a package checks as durations: the Key of each
// configfile.Duration literal in its source, where validation names them.
func durationKeys(dir string) (map[string]bool, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, file := range files {
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Duration" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "configfile" {
				return true
			}
			for _, elt := range lit.Elts {
				kv, ok := elt.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if name, ok := kv.Key.(*ast.Ident); ok && name.Name == "Key" {
					if s, ok := kv.Value.(*ast.BasicLit); ok && s.Kind == token.STRING {
						key, err := strconv.Unquote(s.Value)
						if err == nil {
							keys[key] = true
						}
					}
				}
			}
			return true
		})
	}
	return keys, nil
}

func jsonName(field reflect.StructField) string {
	name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
	if name == "-" || !field.IsExported() {
		return ""
	}
	return name
}

// typeName is a JSON-side name of a Go type.
func typeName(typ reflect.Type, duration bool) string {
	switch typ.Kind() {
	case reflect.String:
		if duration {
			return "duration"
		}
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Slice:
		return "list of " + typeName(typ.Elem(), false) + "s"
	case reflect.Map:
		return "object of " + typeName(typ.Elem(), false) + "s"
	case reflect.Struct:
		return "object"
	}
	return typ.String()
}

// defaultText is a default as JSON in backticks, or "" when the key has
// none: an empty string, an absent object, list or map. A duration is
// written as people write it: time.Duration's "10m0s" as "10m".
func defaultText(v reflect.Value, duration bool) string {
	if !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return ""
		}
	}
	if duration && v.Kind() == reflect.String {
		return "`\"" + shortDuration(v.String()) + "\"`"
	}
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return ""
	}
	return "`" + string(raw) + "`"
}

// shortDuration drops the zero minutes and seconds time.Duration's String
// writes: "168h0m0s" is "168h", "1m0s" "1m"; "1m30s" and "100ms" stay.
func shortDuration(s string) string {
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// goName is a word that may be a Go field name.
var goName = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

// meaning is a doc comment on one line, the struct's Go field names
// replaced by their keys, table pipes escaped. A name in capitals alone
// ("TLS") is replaced only as the comment's first word, where Go doc
// comments name their field: elsewhere it is the word itself ("TLS 1.2").
func meaning(doc, field string, keys map[string]string) string {
	text := strings.Join(strings.Fields(doc), " ")
	first := true
	text = goName.ReplaceAllStringFunc(text, func(word string) string {
		own := first && word == field
		first = false
		key, ok := keys[word]
		if ok && (own || strings.ToUpper(word) != word) {
			return "`" + key + "`"
		}
		return word
	})
	return strings.ReplaceAll(text, "|", `\|`)
}

// Table is the rows as a Markdown table.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, r := range rows {
		def := r.Default
		if def == "" {
			def = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Key, r.Type, def, r.Meaning)
	}
	return b.String()
}

// Markers delimit a component's generated section in docs/config.md.
func beginMarker(name string) string {
	return "<!-- begin " + name + " config: generated by make config-ref, do not edit -->\n"
}

func endMarker(name string) string { return "<!-- end " + name + " config -->\n" }

// ReplaceSection returns doc with the section of component name replaced
// by table. The markers must be there already, once each.
func ReplaceSection(doc, name, table string) (string, error) {
	begin, end := beginMarker(name), endMarker(name)
	if strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		return "", fmt.Errorf("configref: want the markers of %s once each:\n%s%s", name, begin, end)
	}
	before, rest, _ := strings.Cut(doc, begin)
	_, after, found := strings.Cut(rest, end)
	if !found {
		return "", errors.New("configref: the end marker of " + name + " comes before its begin marker")
	}
	return before + begin + table + end + after, nil
}

// ModuleRoot is the directory of go.mod above the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("configref: no go.mod above the working directory")
		}
		dir = parent
	}
}

// tableKey is a config table's first cell: a key in backticks.
var tableKey = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")

// TableKeys lists the keys the config tables of a Markdown text name, in
// order: the backticked first cells of the rows of every table whose
// header's first cell is "key".
func TableKeys(markdown string) []string {
	var keys []string
	inTable := false
	for _, line := range strings.Split(markdown, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		if strings.EqualFold(strings.TrimSpace(first), "key") {
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		if m := tableKey.FindStringSubmatch(line); m != nil {
			keys = append(keys, m[1])
		}
	}
	return keys
}

// UnknownKeys is the keys the config tables of markdown name that known
// lacks, sorted.
func UnknownKeys(markdown string, known map[string]bool) []string {
	seen := map[string]bool{}
	var unknown []string
	for _, key := range TableKeys(markdown) {
		if !known[key] && !seen[key] {
			seen[key] = true
			unknown = append(unknown, key)
		}
	}
	sort.Strings(unknown)
	return unknown
}

// RefPath is the reference, relative to the module root.
const RefPath = "docs/config.md"

// UpdateEnv, set to 1 (make config-ref sets it), has CheckSection rewrite
// the component's section instead of comparing it.
const UpdateEnv = "CORKBOARD_UPDATE_CONFIG_REF"

// CheckSection makes the component's table and fails when docs/config.md's
// section differs from it; with UpdateEnv=1 it writes the section instead.
// Either way it fails when a field has no doc comment.
func CheckSection(c Component) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	rows, err := Rows(root, c)
	if err != nil {
		return err
	}
	path := filepath.Join(root, RefPath)
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := ReplaceSection(string(raw), c.Name, Table(rows))
	if err != nil {
		return err
	}
	if os.Getenv(UpdateEnv) == "1" {
		if updated == string(raw) {
			return nil
		}
		return os.WriteFile(path, []byte(updated), 0o644)
	}
	if updated != string(raw) {
		return fmt.Errorf("configref: %s's section of %s differs from its Config: run make config-ref", c.Name, RefPath)
	}
	return nil
}
