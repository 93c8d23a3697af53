package migrations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/corkboard/corkboard/models"
)

// The classic BBS formats, as documented in fixtures/legacy/README.md.
// Decoding is strict: a field this code does not know would be dropped by
// the import, so it is an error instead.

type classicRunInfo struct {
	Action         *classicAction      `json:"action"`
	Ports          []uint32            `json:"ports"`
	HealthCheck    *classicHealthCheck `json:"health_check"`
	StartTimeoutMs int64               `json:"start_timeout_ms"`
}

type classicAction struct {
	Path string       `json:"path"`
	Args []string     `json:"args"`
	Env  []classicEnv `json:"env"`
	Dir  string       `json:"dir"`
}

type classicEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type classicHealthCheck struct {
	Type string `json:"type"`
	Port uint32 `json:"port"`
	Path string `json:"path"`
}

type classicNetInfo struct {
	Address         string               `json:"address"`
	InstanceAddress string               `json:"instance_address"`
	Ports           []classicPortMapping `json:"ports"`
}

type classicPortMapping struct {
	ContainerPort uint32 `json:"container_port"`
	HostPort      uint32 `json:"host_port"`
}

var healthCheckTypes = map[string]models.HealthCheck_Type{
	"process": models.HealthCheck_PROCESS,
	"tcp":     models.HealthCheck_TCP,
	"http":    models.HealthCheck_HTTP,
}

// decodeRunInfo turns a classic run_info blob into a definition. Memory and
// disk live on the classic desired row; the caller sets them.
func decodeRunInfo(blob []byte) (*models.LRPDefinition, error) {
	if len(bytes.TrimSpace(blob)) == 0 {
		return nil, errors.New("run_info: empty")
	}
	var ri classicRunInfo
	if err := decodeStrict(blob, &ri); err != nil {
		return nil, fmt.Errorf("run_info: %w", err)
	}
	if ri.Action == nil {
		return nil, errors.New("run_info.action: required")
	}
	def := &models.LRPDefinition{
		Action: &models.RunAction{
			Path: ri.Action.Path,
			Args: ri.Action.Args,
			Dir:  ri.Action.Dir,
		},
		Ports:          ri.Ports,
		StartTimeoutMs: ri.StartTimeoutMs,
	}
	for _, e := range ri.Action.Env {
		def.Action.Env = append(def.Action.Env, &models.EnvironmentVariable{Name: e.Name, Value: e.Value})
	}
	if hc := ri.HealthCheck; hc != nil {
		t, ok := healthCheckTypes[hc.Type]
		if !ok {
			return nil, fmt.Errorf("run_info.health_check.type: %q is not one of process, tcp, http", hc.Type)
		}
		def.HealthCheck = &models.HealthCheck{Type: t, Port: hc.Port, Path: hc.Path}
	}
	return def, nil
}

// decodeNetInfo turns a classic net_info JSON text into the board's
// NetInfo; an empty text means the instance has none yet.
func decodeNetInfo(text string) (*models.NetInfo, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var ni classicNetInfo
	if err := decodeStrict([]byte(text), &ni); err != nil {
		return nil, fmt.Errorf("net_info: %w", err)
	}
	out := &models.NetInfo{Address: ni.Address, InstanceAddress: ni.InstanceAddress}
	for _, p := range ni.Ports {
		out.Ports = append(out.Ports, &models.PortMapping{ContainerPort: p.ContainerPort, HostPort: p.HostPort})
	}
	return out, nil
}

// decodePlacementTags accepts a JSON array of strings, or nothing.
func decodePlacementTags(text string) ([]string, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var tags []string
	if err := decodeStrict([]byte(text), &tags); err != nil {
		return nil, fmt.Errorf("placement_tags: %w", err)
	}
	return tags, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
