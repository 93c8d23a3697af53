package sqldb

import (
	"fmt"

	"github.com/corkboard/corkboard/models"
)

// Autoscaling in storage (DESIGN §7): desired_lrps.autoscaling holds the
// LRP's settings as the client set them (enabled or not), and
// desired_lrps.autoscaler the autoscaler's state (models.AutoscalerStatus)
// while autoscaling is enabled, NULL otherwise (migration 0009). What a
// desire or an update does to instances is decided here, in Go, the same
// on every dialect; convergence's decisions arrive as AutoscaleWrites
// (convergence_autoscale.go).

// seedAutoscaler is the autoscaler's state when autoscaling is enabled
// with instances: that count wanted from now, so that it holds for one
// stabilization window before the autoscaler scales down.
func seedAutoscaler(instances int32, now int64) *models.AutoscalerStatus {
	return &models.AutoscalerStatus{
		Recommendations: []*models.AutoscalerRecommendation{{At: now, Wanted: instances}},
	}
}

// describeAutoscaling gives enabled settings in words, for an operation's
// history: "min 2, max 10, ready_target 0.5".
func describeAutoscaling(a *models.Autoscaling) string {
	most := "no limit"
	if a.GetMax() >= 0 {
		most = fmt.Sprint(a.GetMax())
	}
	return fmt.Sprintf("min %d, max %s, ready_target %g", a.GetMin(), most, a.ReadyTarget())
}
