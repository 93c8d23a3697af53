// Package sample is a config for configref's specs.
package sample

import "github.com/corkboard/corkboard/internal/configfile"

// Good documents every field.
type Good struct {
	// Name names the thing; Wait is not its business.
	Name string `json:"name"`
	// Wait is how long it waits.
	Wait string `json:"wait"`
	// TLS, when set, turns on TLS | pipes.
	TLS *Inner `json:"tls"`
	// Tags are its tags.
	Tags []string `json:"tags"`
	// Count counts.
	Count int `json:"count"`
	// On is a switch.
	On *bool `json:"on"`

	// hidden is no key.
	hidden string
}

// Inner is a nested object.
type Inner struct {
	Cert string `json:"cert"` // Cert is a file.
}

// Bad has a field without a doc comment.
type Bad struct {
	// Documented is.
	Documented   string `json:"documented"`
	Undocumented string `json:"undocumented"`
}

// check is where the durations are named, as a command's validate does.
func check(g Good) error {
	_ = g.hidden
	return configfile.CheckDurations(configfile.Duration{Key: "wait", Value: g.Wait})
}

var _ = check
