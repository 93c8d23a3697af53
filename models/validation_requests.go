package models

import "fmt"

// Every request message validates itself before a handler touches the
// store. Field paths in the errors start from the request's own fields.

// Validate requires a desired_lrp and checks it as (*DesiredLRP).Validate does.
func (r *DesireLRPRequest) Validate() error {
	if r.GetDesiredLrp() == nil {
		return ErrInvalidField("desired_lrp", "required")
	}
	return r.GetDesiredLrp().validate("desired_lrp")
}

// Validate requires a valid process_guid.
func (r *DesiredLRPByProcessGuidRequest) Validate() error {
	return validateProcessGuid("process_guid", r.GetProcessGuid())
}

// Validate checks the filters, both optional, and the paging (see
// list_page.go).
func (r *DesiredLRPsRequest) Validate() error {
	if err := validateDomainFilter("domain", r.GetDomain()); err != nil {
		return err
	}
	if err := validateProcessGuids("process_guids", r.GetProcessGuids()); err != nil {
		return err
	}
	return validateListPage(r.GetCursor(), r.GetLimit(), parseDesiredCursor)
}

// Validate checks the filters, both optional, and the paging (see
// list_page.go).
func (r *DesiredLRPSchedulingInfosRequest) Validate() error {
	if err := validateDomainFilter("domain", r.GetDomain()); err != nil {
		return err
	}
	if err := validateProcessGuids("process_guids", r.GetProcessGuids()); err != nil {
		return err
	}
	return validateListPage(r.GetCursor(), r.GetLimit(), parseDesiredCursor)
}

// Validate requires a process_guid and an update, checked as
// (*DesiredLRPUpdate).Validate does.
func (r *UpdateDesiredLRPRequest) Validate() error {
	if err := validateProcessGuid("process_guid", r.GetProcessGuid()); err != nil {
		return err
	}
	if r.GetUpdate() == nil {
		return ErrInvalidField("update", "required")
	}
	return r.GetUpdate().validate("update")
}

// Validate requires a valid process_guid.
func (r *RemoveDesiredLRPRequest) Validate() error {
	return validateProcessGuid("process_guid", r.GetProcessGuid())
}

// Validate requires a valid process_guid.
func (r *DefinitionsRequest) Validate() error {
	return validateProcessGuid("process_guid", r.GetProcessGuid())
}

// Validate requires a valid process_guid and definition_id.
func (r *DefinitionRequest) Validate() error {
	if err := validateProcessGuid("process_guid", r.GetProcessGuid()); err != nil {
		return err
	}
	return validateDefinitionID("definition_id", r.GetDefinitionId())
}

// Validate checks the filters, every one optional, and the paging (see
// list_page.go).
func (r *ActualLRPsRequest) Validate() error {
	if err := validateDomainFilter("domain", r.GetDomain()); err != nil {
		return err
	}
	// A cell_id filter is a cell id: one that no cell could have would
	// match nothing on SQLite and Postgres but, with a trailing space,
	// the cell without it on MySQL.
	if r.GetCellId() != "" {
		if err := validateCellID("cell_id", r.GetCellId()); err != nil {
			return err
		}
	}
	if r.GetProcessGuid() != "" {
		if err := validateProcessGuid("process_guid", r.GetProcessGuid()); err != nil {
			return err
		}
	}
	if r != nil && r.Index != nil && r.GetIndex() < 0 {
		return ErrInvalidField("index", fmt.Sprintf("must not be negative, got %d", r.GetIndex()))
	}
	return validateListPage(r.GetCursor(), r.GetLimit(), parseActualCursor)
}

// Validate requires a domain; ttl_seconds is 0 (fresh forever) up to
// MaxDomainTTLSeconds.
func (r *UpsertDomainRequest) Validate() error {
	if err := validateRequiredDomain("domain", r.GetDomain()); err != nil {
		return err
	}
	ttl := r.GetTtlSeconds()
	if ttl < 0 || ttl > MaxDomainTTLSeconds {
		return ErrInvalidField("ttl_seconds", fmt.Sprintf("must be between 0 and %d, got %d", MaxDomainTTLSeconds, ttl))
	}
	return nil
}

// Validate accepts every DomainsRequest: it has no fields.
func (r *DomainsRequest) Validate() error { return nil }

// Validate accepts every PingRequest: it has no fields.
func (r *PingRequest) Validate() error { return nil }

// Validate requires a valid process_guid.
func (r *RolloutStatusRequest) Validate() error {
	return validateProcessGuid("process_guid", r.GetProcessGuid())
}

// Validate requires a valid process_guid; definition_id is optional (the
// board picks the definition to go back to) but must be valid when set.
func (r *RollbackRequest) Validate() error {
	if err := validateProcessGuid("process_guid", r.GetProcessGuid()); err != nil {
		return err
	}
	if r.GetDefinitionId() == "" {
		return nil
	}
	return validateDefinitionID("definition_id", r.GetDefinitionId())
}

// Validate requires a valid process_guid.
func (r *AbortRolloutRequest) Validate() error {
	return validateProcessGuid("process_guid", r.GetProcessGuid())
}

// Validate requires a valid process_guid, 0 < to_percent <= 100, and a
// valid safe_rate when set.
func (r *PromoteRolloutRequest) Validate() error {
	if err := validateProcessGuid("process_guid", r.GetProcessGuid()); err != nil {
		return err
	}
	if err := validateStagePercent("to_percent", r.GetToPercent()); err != nil {
		return err
	}
	return r.GetSafeRate().validate("safe_rate")
}

// Validate requires a valid process_guid.
func (r *PauseRolloutRequest) Validate() error {
	return validateProcessGuid("process_guid", r.GetProcessGuid())
}

// Validate requires a valid process_guid.
func (r *ResumeRolloutRequest) Validate() error {
	return validateProcessGuid("process_guid", r.GetProcessGuid())
}

// Validate requires a valid process_guid and at least one field to change,
// each valid by the rules its home already has: the update strategy's
// (UpdateStrategy.validate, so max_surge, max_unavailable, min_ready_ms and
// progress_deadline_ms are refused exactly as in an update) and the staged
// phase's (target_percent as a share, safe_rate as a rate). Whether the
// rollout may take them is the store's to decide (DecideRolloutEdit).
func (r *EditRolloutRequest) Validate() error {
	if err := validateProcessGuid("process_guid", r.GetProcessGuid()); err != nil {
		return err
	}
	if !r.changesStrategy() && !r.changesStage() {
		return ErrInvalidField(editFields, "at least one is required")
	}
	if err := r.strategyFields().validate(""); err != nil {
		return err
	}
	if r.TargetPercent != nil {
		if err := validateStagePercent("target_percent", r.GetTargetPercent()); err != nil {
			return err
		}
	}
	return r.GetSafeRate().validate("safe_rate")
}
