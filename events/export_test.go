package events

// FilterTypes are the types a subscription matches events against.
func (s *Subscription) FilterTypes() []string { return s.filter.Types }
