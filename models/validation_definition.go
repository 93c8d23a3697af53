package models

import (
	"fmt"
	"strings"
)

// Validate checks a definition, fields in proto order, and reports the
// first problem. created_at is the board's and is not checked.
//
// Strings must be valid UTF-8: definitions are hashed through their
// protobuf encoding, which refuses anything else. Messages decoded from the
// wire always are; this catches definitions built in Go.
func (d *LRPDefinition) Validate() error {
	return d.validate("")
}

func (d *LRPDefinition) validate(path string) error {
	if id := d.GetDefinitionId(); id != "" {
		if err := validateDefinitionID(child(path, "definition_id"), id); err != nil {
			return err
		}
	}
	if d.GetAction() == nil {
		return ErrInvalidField(child(path, "action"), "required")
	}
	if err := d.GetAction().validate(child(path, "action")); err != nil {
		return err
	}
	if err := validatePorts(child(path, "ports"), d.GetPorts()); err != nil {
		return err
	}
	if d.GetHealthCheck() != nil {
		if err := d.GetHealthCheck().validate(child(path, "health_check")); err != nil {
			return err
		}
	}
	if err := validateNotNegative(child(path, "start_timeout_ms"), d.GetStartTimeoutMs()); err != nil {
		return err
	}
	if err := validateNotNegative(child(path, "memory_mb"), int64(d.GetMemoryMb())); err != nil {
		return err
	}
	return validateNotNegative(child(path, "disk_mb"), int64(d.GetDiskMb()))
}

func (a *RunAction) validate(path string) error {
	if a.GetPath() == "" {
		return ErrInvalidField(child(path, "path"), "required")
	}
	if err := validateUTF8(child(path, "path"), a.GetPath()); err != nil {
		return err
	}
	for i, arg := range a.GetArgs() {
		if err := validateUTF8(indexed(child(path, "args"), i), arg); err != nil {
			return err
		}
	}
	for i, env := range a.GetEnv() {
		if err := env.validate(indexed(child(path, "env"), i)); err != nil {
			return err
		}
	}
	return validateUTF8(child(path, "dir"), a.GetDir())
}

func (e *EnvironmentVariable) validate(path string) error {
	name := e.GetName()
	if name == "" {
		return ErrInvalidField(child(path, "name"), "must not be empty")
	}
	// An environment entry is "name=value"; a name holding "=" would be
	// split somewhere else than the client meant.
	if strings.Contains(name, "=") {
		return ErrInvalidField(child(path, "name"), "must not contain \"=\", got "+quoteShort(name))
	}
	if err := validateUTF8(child(path, "name"), name); err != nil {
		return err
	}
	return validateUTF8(child(path, "value"), e.GetValue())
}

func validatePorts(path string, ports []uint32) error {
	if len(ports) > MaxPorts {
		return ErrInvalidField(path, fmt.Sprintf("must hold at most %d ports, got %d", MaxPorts, len(ports)))
	}
	for i, port := range ports {
		if err := validatePort(indexed(path, i), port); err != nil {
			return err
		}
		for j := range i {
			if ports[j] == port {
				return ErrInvalidField(indexed(path, i), fmt.Sprintf("duplicates %s (%d)", indexed("ports", j), port))
			}
		}
	}
	return nil
}

func (h *HealthCheck) validate(path string) error {
	switch h.GetType() {
	case HealthCheck_PROCESS:
		// The process running is the check; port and path mean nothing.
		return nil
	case HealthCheck_TCP:
		return validateCheckPort(child(path, "port"), h)
	case HealthCheck_HTTP:
		if err := validateCheckPort(child(path, "port"), h); err != nil {
			return err
		}
		if !strings.HasPrefix(h.GetPath(), "/") {
			return ErrInvalidField(child(path, "path"), "must start with \"/\" when type is HTTP, got "+quoteShort(h.GetPath()))
		}
		return validateUTF8(child(path, "path"), h.GetPath())
	default:
		return ErrInvalidField(child(path, "type"), fmt.Sprintf("unknown health check type %d", h.GetType()))
	}
}

func validateCheckPort(path string, h *HealthCheck) error {
	if port := h.GetPort(); port < 1 || port > 65535 {
		return ErrInvalidField(path, fmt.Sprintf("must be 1-65535 when type is %s, got %d", h.GetType(), port))
	}
	return nil
}
