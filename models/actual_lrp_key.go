package models

// ActualLRPKey names one instance row.
type ActualLRPKey struct {
	ProcessGuid string
	Index       int32
	Presence    ActualLRP_Presence
}

// Caller is the instance asking for a lifecycle change: instance guid on
// cell id.
type Caller struct {
	InstanceGuid string
	CellID       string
}
