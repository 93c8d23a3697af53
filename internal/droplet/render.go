package droplet

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

// The spec templates in fixtures/lrps (hello.json, hello-v2-definition.json,
// …) name droplets by file name and learn where they are served and what
// their checksums are only when rendered, with text/template and these
// functions:
//
//	{{asset_url "hello-v1.tgz"}}     the base URL, "/", the file name
//	{{asset_sha256 "hello-v1.tgz"}}  the file's hex SHA-256
//
// A name that was not built is an error, not an empty string, so a typo
// fails the render instead of the rep's checksum check. Files without
// placeholders come out unchanged.

// Render renders one spec template. name is only for error messages.
func Render(name string, text []byte, baseURL string, sums map[string]string) ([]byte, error) {
	base, err := checkBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	known := func(file string) error {
		if _, ok := sums[file]; !ok {
			return fmt.Errorf("no droplet %q was built (have %s)", file, strings.Join(slices.Sorted(maps.Keys(sums)), ", "))
		}
		return nil
	}
	funcs := template.FuncMap{
		"asset_url": func(file string) (string, error) {
			if err := known(file); err != nil {
				return "", err
			}
			return base + "/" + file, nil
		},
		"asset_sha256": func(file string) (string, error) {
			if err := known(file); err != nil {
				return "", err
			}
			return sums[file], nil
		},
	}
	tmpl, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("droplet: template %s: %w", name, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, nil); err != nil {
		return nil, fmt.Errorf("droplet: rendering %s: %w", name, err)
	}
	return out.Bytes(), nil
}

// RenderDir renders every *.json file of srcDir into outDir (created if
// missing) and returns the names written. Every file goes through the
// template, so outDir holds the whole set of specs: the droplet ones with
// real URLs and checksums, the others as they are.
func RenderDir(srcDir, outDir, baseURL string, sums map[string]string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(srcDir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("droplet: no *.json specs in %s", srcDir)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(p)
		out, err := Render(name, text, baseURL, sums)
		if err != nil {
			return nil, err
		}
		if err := writeFileAtomic(filepath.Join(outDir, name), out); err != nil {
			return nil, err
		}
		written = append(written, name)
	}
	return written, nil
}

// checkBaseURL accepts the URL a directory of droplets is served at:
// http, https or file (file:///abs/dir, for a cell that has the files),
// without its trailing slash in the result. Quotes and spaces are refused
// because the URL lands inside a JSON string unescaped.
func checkBaseURL(raw string) (string, error) {
	if strings.ContainsAny(raw, "\"\\ \t\n{}") {
		return "", fmt.Errorf("droplet: base URL %q must not hold quotes, backslashes, braces or spaces", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("droplet: base URL: %w", err)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return "", fmt.Errorf("droplet: base URL %q names no host", raw)
		}
	case "file":
		if !strings.HasPrefix(u.Path, "/") {
			return "", fmt.Errorf("droplet: base URL %q must be file:///absolute/dir", raw)
		}
	default:
		return "", fmt.Errorf("droplet: base URL %q must be http, https or file", raw)
	}
	// One slash only: "file:///" becomes "file://", and "file://" + "/" +
	// name is still an absolute file URL.
	return strings.TrimSuffix(raw, "/"), nil
}
