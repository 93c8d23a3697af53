package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/corkboard/corkboard/models"
)

// autoscalingFlags are the flags that give an LRP autoscaling settings:
// --autoscaling FILE on desire and update, --autoscaling-enabled on update.
type autoscalingFlags struct {
	file    string
	enabled bool
}

func (f *autoscalingFlags) registerFile(flags *pflag.FlagSet) {
	flags.StringVar(&f.file, "autoscaling", "", `JSON file with the autoscaling settings ('-' for stdin), e.g. {"enabled": true, "min": 2, "max": 10, "policy": {"type": "roomOccupancy", "parameters": {"room_occupancy": {"ready_target": 0.5}}}}`)
}

func (f *autoscalingFlags) registerEnabled(flags *pflag.FlagSet) {
	flags.BoolVar(&f.enabled, "autoscaling-enabled", true, "=false turns autoscaling off; with --autoscaling FILE it overrides the file's enabled")
}

// settings reads the settings the flags give, or nil without
// --autoscaling and --autoscaling-enabled. --autoscaling-enabled=false
// alone is {enabled: false}; --autoscaling-enabled=true needs the settings
// to enable. Settings that fail validation are an error naming the file
// and the field.
func (a *app) autoscalingSettings(flags *pflag.FlagSet, f *autoscalingFlags) (*models.Autoscaling, error) {
	enabledGiven := flags.Lookup("autoscaling-enabled") != nil && flags.Changed("autoscaling-enabled")
	if !flags.Changed("autoscaling") {
		if !enabledGiven {
			return nil, nil
		}
		if f.enabled {
			return nil, usageErrorf("--autoscaling-enabled=true needs --autoscaling FILE, the settings to enable")
		}
		return &models.Autoscaling{Enabled: false}, nil
	}
	settings := &models.Autoscaling{}
	if err := a.readSpec(f.file, settings); err != nil {
		return nil, err
	}
	if enabledGiven {
		settings.Enabled = f.enabled
	}
	if err := settings.Validate(); err != nil {
		return nil, invalidSpec(f.file, err)
	}
	return settings, nil
}

// autoscaleCell is the AUTOSCALE column: "2-10@0.5" (min-max@ready_target,
// max "∞" for no limit), "-" when autoscaling is not enabled.
func autoscaleCell(s *models.Autoscaling) string {
	if !s.IsEnabled() {
		return ""
	}
	return fmt.Sprintf("%d-%s@%g", s.GetMin(), maxText(s.GetMax(), "∞"), s.ReadyTarget())
}

func maxText(most int32, noLimit string) string {
	if most < 0 {
		return noLimit
	}
	return itoa(most)
}

// autoscalingLine shows the settings in words, e.g. "enabled, min 2, max
// 10, policy roomOccupancy, ready_target 0.5, scale-down window 2m0s".
// Disabled settings say so, followed by what they would apply, if
// anything.
func autoscalingLine(s *models.Autoscaling) string {
	state := "disabled"
	if s.GetEnabled() {
		state = "enabled"
	}
	if !s.GetEnabled() && s.GetMin() == 0 && s.GetMax() == 0 && s.GetPolicy() == nil {
		return state
	}
	window := "the board's default"
	if ms := s.GetScaleDownStabilizationMs(); ms > 0 {
		window = models.Millis(ms).String()
	}
	return strings.Join([]string{
		state,
		"min " + itoa(s.GetMin()),
		"max " + maxText(s.GetMax(), "no limit"),
		"policy " + s.GetPolicy().GetType(),
		fmt.Sprintf("ready_target %g", s.ReadyTarget()),
		"scale-down window " + window,
	}, ", ")
}

// autoscalerLine is the autoscaler's last decision in words and when it
// was made; "" when the LRP has neither autoscaling enabled nor a
// decision to show.
func autoscalerLine(lrp *models.DesiredLRP) string {
	decision := lrp.GetAutoscaler().GetLastDecision()
	if decision == nil {
		if lrp.GetAutoscaling().IsEnabled() {
			return "no decision yet"
		}
		return ""
	}
	return decision.Describe() + " (at " + timestamp(decision.GetAt()) + ")"
}

// printAutoscaling follows an LRP's table with its autoscaling settings
// and the autoscaler's last decision, one line each, when it has them.
func (a *app) printAutoscaling(lrp *models.DesiredLRP) {
	if lrp.GetAutoscaling() != nil {
		fmt.Fprintf(a.out, "autoscaling: %s\n", autoscalingLine(lrp.GetAutoscaling()))
	}
	if line := autoscalerLine(lrp); line != "" {
		fmt.Fprintf(a.out, "autoscaler: %s\n", line)
	}
}
