package models

import (
	"fmt"
	"slices"
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
		if err := d.GetHealthCheck().validate(child(path, "health_check"), d.GetPorts()); err != nil {
			return err
		}
	}
	if err := validateMillis(child(path, "start_timeout_ms"), d.GetStartTimeoutMs(), MaxStartTimeoutMs); err != nil {
		return err
	}
	if err := validateNotNegative(child(path, "memory_mb"), int64(d.GetMemoryMb())); err != nil {
		return err
	}
	if err := validateNotNegative(child(path, "disk_mb"), int64(d.GetDiskMb())); err != nil {
		return err
	}
	if err := validateAssets(child(path, "assets"), d.GetAssets()); err != nil {
		return err
	}
	if d.GetSetup() != nil {
		if err := d.GetSetup().validate(child(path, "setup")); err != nil {
			return err
		}
	}
	if ms := d.GetSetupTimeoutMs(); ms < 0 || ms > MaxSetupTimeoutMs {
		return ErrInvalidField(child(path, "setup_timeout_ms"),
			fmt.Sprintf("must be 0 (bounded by the start timeout alone) or from 1 to %d, got %d", MaxSetupTimeoutMs, ms))
	}
	return nil
}

func (a *RunAction) validate(path string) error {
	if a.GetPath() == "" {
		return ErrInvalidField(child(path, "path"), "required")
	}
	if err := validateNoControl(child(path, "path"), a.GetPath()); err != nil {
		return err
	}
	for i, arg := range a.GetArgs() {
		if err := validateTextLines(indexed(child(path, "args"), i), arg); err != nil {
			return err
		}
	}
	for i, env := range a.GetEnv() {
		if err := env.validate(indexed(child(path, "env"), i)); err != nil {
			return err
		}
	}
	return validateNoControl(child(path, "dir"), a.GetDir())
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
	if err := validateNoControl(child(path, "name"), name); err != nil {
		return err
	}
	return validateTextLines(child(path, "value"), e.GetValue())
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

// validate checks a health check against the definition's ports: a TCP or
// HTTP check on a port the definition does not expose could never pass,
// and would only fail on the cell, instance after instance.
func (h *HealthCheck) validate(path string, ports []uint32) error {
	switch h.GetType() {
	case HealthCheck_PROCESS:
		// The process running is the check; port, path and the check's
		// timing mean nothing. The timing is still a duration, bounded
		// wherever it is written (see durations.go).
		if err := validateMillisAtMost(child(path, "interval_ms"), h.GetIntervalMs(), MaxHealthCheckIntervalMs); err != nil {
			return err
		}
		return validateMillisAtMost(child(path, "timeout_ms"), h.GetTimeoutMs(), MaxHealthCheckTimeoutMs)
	case HealthCheck_TCP:
		if err := validateCheckPort(child(path, "port"), h, ports); err != nil {
			return err
		}
	case HealthCheck_HTTP:
		if err := validateCheckPort(child(path, "port"), h, ports); err != nil {
			return err
		}
		if !strings.HasPrefix(h.GetPath(), "/") {
			return ErrInvalidField(child(path, "path"), "must start with \"/\" when type is HTTP, got "+quoteShort(h.GetPath()))
		}
		if err := validateNoControl(child(path, "path"), h.GetPath()); err != nil {
			return err
		}
	default:
		return ErrInvalidField(child(path, "type"), fmt.Sprintf("unknown health check type %d", h.GetType()))
	}
	return h.validateTiming(path)
}

func validateCheckPort(path string, h *HealthCheck, ports []uint32) error {
	port := h.GetPort()
	if port < 1 || port > 65535 {
		return ErrInvalidField(path, fmt.Sprintf("must be 1-65535 when type is %s, got %d", h.GetType(), port))
	}
	if slices.Contains(ports, port) {
		return nil
	}
	if len(ports) == 0 {
		return ErrInvalidField(path, fmt.Sprintf("must be one of the definition's ports, got %d, and the definition has no ports", port))
	}
	return ErrInvalidField(path, fmt.Sprintf("must be one of the definition's ports %v, got %d", ports, port))
}

// validateTiming checks interval_ms, timeout_ms and failure_threshold.
// The timeout may not exceed the interval (both as they take effect, so
// defaults count): a check that may run longer than the pause between
// checks makes the interval mean nothing.
func (h *HealthCheck) validateTiming(path string) error {
	if err := validateCheckMillis(child(path, "interval_ms"), h.GetIntervalMs(), DefaultHealthCheckIntervalMs, MaxHealthCheckIntervalMs); err != nil {
		return err
	}
	if err := validateCheckMillis(child(path, "timeout_ms"), h.GetTimeoutMs(), DefaultHealthCheckTimeoutMs, MaxHealthCheckTimeoutMs); err != nil {
		return err
	}
	if timeout, interval := h.Timeout(), h.Interval(); timeout > interval {
		what := "interval_ms"
		if h.GetIntervalMs() == 0 {
			what = "the default interval_ms"
		}
		return ErrInvalidField(child(path, "timeout_ms"), fmt.Sprintf("must not be above %s (%d), got %d",
			what, interval.Milliseconds(), timeout.Milliseconds()))
	}
	if n := h.GetFailureThreshold(); n < 0 || n > MaxHealthCheckFailureThreshold {
		return ErrInvalidField(child(path, "failure_threshold"), fmt.Sprintf("must be 0 (the default, %d) or from 1 to %d, got %d",
			DefaultHealthCheckFailureThreshold, MaxHealthCheckFailureThreshold, n))
	}
	return nil
}

func validateCheckMillis(path string, value, defaultValue, maxValue int64) error {
	if value == 0 || (value >= MinHealthCheckMs && value <= maxValue) {
		return nil
	}
	return ErrInvalidField(path, fmt.Sprintf("must be 0 (the default, %d) or from %d to %d, got %d",
		defaultValue, MinHealthCheckMs, maxValue, value))
}
