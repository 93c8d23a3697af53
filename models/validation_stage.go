package models

import (
	"fmt"
	"math"
)

// MaxStageSeedBytes bounds a staged phase's seed.
const MaxStageSeedBytes = 256

// ValidateStaged checks the staged phase an update asks for, found at path:
// a target share in (0, 100], a valid rate when set, a seed of at most
// MaxStageSeedBytes. The store checks with it too, for direct callers.
func ValidateStaged(path string, s *StagedRollout) error {
	return s.validate(path)
}

func (s *StagedRollout) validate(path string) error {
	if err := validateStagePercent(child(path, "target_percent"), s.GetTargetPercent()); err != nil {
		return err
	}
	if err := s.GetSafeRate().validate(child(path, "safe_rate")); err != nil {
		return err
	}
	return validateMaxBytes(child(path, "seed"), s.GetSeed(), MaxStageSeedBytes)
}

// validate checks a rate; nil (no rate: the target at once) is valid.
func (r *SafeRate) validate(path string) error {
	if r == nil {
		return nil
	}
	if err := validateStagePercent(child(path, "percent"), r.GetPercent()); err != nil {
		return err
	}
	if r.GetPerMs() <= 0 {
		return ErrInvalidField(child(path, "per_ms"), fmt.Sprintf("must be above 0, got %d", r.GetPerMs()))
	}
	return validateMillisAtMost(child(path, "per_ms"), r.GetPerMs(), MaxSafeRatePerMs)
}

// validateStagePercent requires a share in (0, 100].
func validateStagePercent(path string, percent float64) error {
	if math.IsNaN(percent) || percent <= 0 || percent > 100 {
		return ErrInvalidField(path, fmt.Sprintf("must be above 0 and at most 100, got %v", percent))
	}
	return nil
}
