package models

// Validate checks a DesiredLRP as a client desires it, fields in proto
// order, and reports the first problem. The definition is required. Fields
// the board owns (active and healthy definition ids, modification tag,
// created_at) are not checked: the board sets them when it stores the LRP.
func (d *DesiredLRP) Validate() error {
	return d.validate("")
}

func (d *DesiredLRP) validate(path string) error {
	if err := validateProcessGuid(child(path, "process_guid"), d.GetProcessGuid()); err != nil {
		return err
	}
	if err := validateRequiredDomain(child(path, "domain"), d.GetDomain()); err != nil {
		return err
	}
	if err := validateInstances(child(path, "instances"), d.GetInstances()); err != nil {
		return err
	}
	if err := validatePlacementTags(child(path, "placement_tags"), d.GetPlacementTags()); err != nil {
		return err
	}
	if err := validateRoutes(child(path, "routes"), d.GetRoutes()); err != nil {
		return err
	}
	if err := validateMaxBytes(child(path, "annotation"), d.GetAnnotation(), MaxAnnotationBytes); err != nil {
		return err
	}
	if err := validateNoNUL(child(path, "annotation"), d.GetAnnotation()); err != nil {
		return err
	}
	if d.GetUpdateStrategy() != nil {
		if err := d.GetUpdateStrategy().validate(child(path, "update_strategy")); err != nil {
			return err
		}
	}
	if err := d.GetDisruptionBudget().validate(child(path, "disruption_budget")); err != nil {
		return err
	}
	if d.GetDefinition() == nil {
		return ErrInvalidField(child(path, "definition"), "required")
	}
	if err := d.GetDefinition().validate(child(path, "definition")); err != nil {
		return err
	}
	if err := ValidateRoutePorts(child(path, "routes"), d.GetRoutes(), d.GetDefinition().GetPorts()); err != nil {
		return err
	}
	return d.GetAutoscaling().validate(child(path, "autoscaling"))
}

// validate checks an update (UpdateDesiredLRPRequest.Validate), fields in
// proto order. Unset fields are left alone by the board and are not
// checked. A definition may come with or without an update_identifier; an
// identifier without a definition names nothing and is rejected.
func (u *DesiredLRPUpdate) validate(path string) error {
	if u == nil {
		// An empty update changes nothing and is valid.
		return nil
	}
	if u.Instances != nil {
		if err := validateInstances(child(path, "instances"), u.GetInstances()); err != nil {
			return err
		}
	}
	if err := validateRoutes(child(path, "routes"), u.GetRoutes()); err != nil {
		return err
	}
	if u.Annotation != nil {
		if err := validateMaxBytes(child(path, "annotation"), u.GetAnnotation(), MaxAnnotationBytes); err != nil {
			return err
		}
		if err := validateNoNUL(child(path, "annotation"), u.GetAnnotation()); err != nil {
			return err
		}
	}
	if u.GetDefinition() != nil {
		if err := u.GetDefinition().validate(child(path, "definition")); err != nil {
			return err
		}
		if u.GetRoutes() != nil {
			if err := ValidateRoutePorts(child(path, "routes"), u.GetRoutes(), u.GetDefinition().GetPorts()); err != nil {
				return err
			}
		}
	} else if err := validateRoutePortNumbers(child(path, "routes"), u.GetRoutes()); err != nil {
		return err
	}
	if err := u.validateUpdateIdentifier(path); err != nil {
		return err
	}
	if u.GetQueue() && u.GetDefinition() == nil {
		// Only a change of definition waits its turn; anything else
		// applies at once.
		return ErrInvalidField(child(path, "queue"), "requires a definition")
	}
	if u.GetUpdateStrategy() != nil {
		if err := u.GetUpdateStrategy().validate(child(path, "update_strategy")); err != nil {
			return err
		}
	}
	if err := u.GetDisruptionBudget().validate(child(path, "disruption_budget")); err != nil {
		return err
	}
	if u.GetValidate() && u.GetDefinition() == nil {
		return ErrInvalidField(child(path, "validate"), "requires a definition")
	}
	if u.GetStaged() != nil {
		if u.GetDefinition() == nil {
			return ErrInvalidField(child(path, "staged"), "requires a definition")
		}
		if err := u.GetStaged().validate(child(path, "staged")); err != nil {
			return err
		}
	}
	if err := u.GetAutoscaling().validate(child(path, "autoscaling")); err != nil {
		return err
	}
	if u.Instances != nil && u.GetAutoscaling().IsEnabled() {
		return ErrInvalidField(child(path, "instances"), ErrInstancesAutoscaled)
	}
	if err := u.validateRolloutPolicy(path); err != nil {
		return err
	}
	return u.validateOverride(path)
}

// ErrInstancesAutoscaled says why instances may not be set while
// autoscaling is enabled.
const ErrInstancesAutoscaled = "cannot be set while autoscaling is enabled: the autoscaler sets instances; disable autoscaling (autoscaling.enabled = false, cork update --autoscaling-enabled=false) to set them"

func (u *DesiredLRPUpdate) validateUpdateIdentifier(path string) error {
	identifier := u.GetUpdateIdentifier()
	if identifier == "" {
		return nil
	}
	field := child(path, "update_identifier")
	if u.GetDefinition() == nil {
		return ErrInvalidField(field, "requires a definition")
	}
	if err := validateDefinitionID(field, identifier); err != nil {
		return err
	}
	// Two different names for one definition would leave the board to
	// guess which one the client will ask for later.
	if own := u.GetDefinition().GetDefinitionId(); own != "" && own != identifier {
		return ErrInvalidField(field, "must equal definition.definition_id "+quoteShort(own)+", got "+quoteShort(identifier))
	}
	return nil
}
