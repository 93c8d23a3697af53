package configfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/configfile"
)

// exampleConfig has the shapes the commands' configs have: strings, a
// number, a nested object and a list.
type exampleConfig struct {
	Name     string   `json:"name"`
	Count    int      `json:"count"`
	Interval string   `json:"interval"`
	Tags     []string `json:"tags"`
	Limits   *struct {
		MemoryMB int32 `json:"memory_mb"`
	} `json:"limits"`
	Cells []struct {
		Name string `json:"name"`
	} `json:"cells"`
}

var _ = Describe("Load", func() {
	writeFile := func(text string) string {
		GinkgoHelper()
		path := filepath.Join(GinkgoT().TempDir(), "config.json")
		Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
		return path
	}

	It("decodes every key into the struct", func() {
		var cfg exampleConfig
		Expect(configfile.Load(writeFile(`{
			"name": "cell-z1",
			"count": 3,
			"interval": "5s",
			"tags": ["ssd"],
			"limits": {"memory_mb": 1024}
		}`), &cfg)).To(Succeed())
		Expect(cfg.Name).To(Equal("cell-z1"))
		Expect(cfg.Count).To(Equal(3))
		Expect(cfg.Interval).To(Equal("5s"))
		Expect(cfg.Tags).To(Equal([]string{"ssd"}))
		Expect(cfg.Limits.MemoryMB).To(BeEquivalentTo(1024))
	})

	It("leaves the keys the file does not have as they were", func() {
		cfg := exampleConfig{Name: "preset", Count: 7}
		Expect(configfile.Load(writeFile(`{"count": 2}`), &cfg)).To(Succeed())
		Expect(cfg.Name).To(Equal("preset"))
		Expect(cfg.Count).To(Equal(2))
	})

	DescribeTable("refuses a bad file with an error naming the file and the key",
		func(text, want string) {
			path := writeFile(text)
			var cfg exampleConfig
			err := configfile.Load(path, &cfg)
			Expect(err).To(MatchError("config " + path + ": " + want))
		},
		Entry("an unknown key", `{"nmae": "x"}`, `unknown field "nmae"`),
		Entry("an unknown nested key, by its path", `{"limits": {"memory": 1}}`, `unknown field "limits.memory"`),
		Entry("an unknown key in a list's item, by its path", `{"tags": ["ssd"], "cells": [{"name": "a"}, {"nmae": "b"}]}`, `unknown field "cells[1].nmae"`),
		Entry("a string for a number", `{"count": "three"}`, "count: want a int, got a JSON string"),
		Entry("a string for a nested number", `{"limits": {"memory_mb": "lots"}}`,
			"limits.memory_mb: want a int32, got a JSON string"),
		Entry("a number for a string", `{"interval": 30}`, "interval: want a string, got a JSON number"),
		Entry("no JSON at all", `name = "x"`, "invalid character 'a' in literal null (expecting 'u')"),
	)

	It("names a missing file", func() {
		var cfg exampleConfig
		err := configfile.Load("/nonexistent/config.json", &cfg)
		Expect(err).To(MatchError(ContainSubstring("config: open /nonexistent/config.json")))
		Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue())
	})
})

var _ = Describe("Invalid", func() {
	It("reads config: KEY: REASON and carries the key", func() {
		err := configfile.Invalid("cell_id", "required")
		Expect(err).To(MatchError("config: cell_id: required"))
		var keyErr *configfile.KeyError
		Expect(errors.As(err, &keyErr)).To(BeTrue())
		Expect(keyErr.Key).To(Equal("cell_id"))
		Expect(keyErr.Reason).To(Equal("required"))
	})
})

var _ = Describe("CheckDurations", func() {
	It("accepts positive durations at or above their minimum", func() {
		Expect(configfile.CheckDurations(
			configfile.Duration{Key: "poll_interval", Value: "500ms"},
			configfile.Duration{Key: "presence_ttl", Value: "1s", Least: time.Second},
			configfile.Duration{Key: "timeout", Value: "10m"},
		)).To(Succeed())
		Expect(configfile.CheckDurations()).To(Succeed())
	})

	DescribeTable("names the first bad key",
		func(value string, least time.Duration, want string) {
			err := configfile.CheckDurations(
				configfile.Duration{Key: "good", Value: "1s"},
				configfile.Duration{Key: "bad", Value: value, Least: least},
				configfile.Duration{Key: "also_bad", Value: "never"},
			)
			Expect(err).To(MatchError("config: bad: " + want))
			var keyErr *configfile.KeyError
			Expect(errors.As(err, &keyErr)).To(BeTrue())
			Expect(keyErr.Key).To(Equal("bad"))
		},
		Entry("no duration", "soon", time.Duration(0), `"soon" is not a positive duration like "30s"`),
		Entry("a number without a unit", "30", time.Duration(0), `"30" is not a positive duration like "30s"`),
		Entry("empty", "", time.Duration(0), `"" is not a positive duration like "30s"`),
		Entry("zero", "0s", time.Duration(0), `"0s" is not a positive duration like "30s"`),
		Entry("negative", "-1m", time.Duration(0), `"-1m" is not a positive duration like "30s"`),
		Entry("under the minimum", "500ms", time.Second, `"500ms" is shorter than the minimum of 1s`),
	)

	It("takes 0 for a key that allows it, and nothing negative", func() {
		Expect(configfile.CheckDurations(configfile.Duration{Key: "off", Value: "0s", Zero: true})).To(Succeed())
		Expect(configfile.CheckDurations(configfile.Duration{Key: "off", Value: "0", Zero: true})).To(Succeed())
		Expect(configfile.CheckDurations(configfile.Duration{Key: "off", Value: "-1s", Zero: true})).
			To(MatchError(`config: off: "-1s" is not a positive duration like "30s"`))
		Expect(configfile.CheckDurations(configfile.Duration{Key: "off", Value: "0s"})).
			To(MatchError(`config: off: "0s" is not a positive duration like "30s"`), "without Zero, 0 is refused")
	})
})

var _ = Describe("MustDuration", func() {
	It("parses a checked duration", func() {
		Expect(configfile.MustDuration("1m30s")).To(Equal(90 * time.Second))
	})

	It("panics on an unchecked one", func() {
		Expect(func() { configfile.MustDuration("soon") }).To(Panic())
	})
})
