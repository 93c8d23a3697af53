package convergence_test

import "github.com/corkboard/corkboard/models"

const (
	ordinary       = models.ActualLRP_ORDINARY
	suspect        = models.ActualLRP_SUSPECT
	evacuating     = models.ActualLRP_EVACUATING
	unclaimedState = models.ActualLRP_UNCLAIMED
	claimedState   = models.ActualLRP_CLAIMED
	runningState   = models.ActualLRP_RUNNING
	crashedState   = models.ActualLRP_CRASHED
)
