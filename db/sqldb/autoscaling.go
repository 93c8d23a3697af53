package sqldb

// Autoscaling in storage (DESIGN §7): desired_lrps.autoscaling holds the
// LRP's settings as the client set them (enabled or not), and
// desired_lrps.autoscaler the autoscaler's state (models.AutoscalerStatus)
// while autoscaling is enabled, NULL otherwise (migration 0009). What a
// desire or an update does to instances and that state is decided in
// models (SeedAutoscaler, AutoscaledUpdate), the same on every dialect;
// convergence's decisions arrive as AutoscaleWrites
// (convergence_autoscale.go).
