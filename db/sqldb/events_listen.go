package sqldb

import (
	"context"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/lib/pq"
)

// ListenForEvents wakes the caller whenever a commit on any board appended
// events to the log (Postgres only: the other dialects have no
// notifications, and their boards poll). It returns when ctx ends. A
// notification is only a wake-up: one lost while the listener reconnects
// costs a poll interval, never an event, and each reconnection wakes the
// caller too.
func ListenForEvents(ctx context.Context, dsn string, wake func(), logger lager.Logger) {
	logger = logger.Session("event-listener")
	listener := pq.NewListener(dsn, 100*time.Millisecond, 10*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventConnectionAttemptFailed, pq.ListenerEventDisconnected:
			logger.Info("disconnected", lager.Data{"error": errString(err)})
		case pq.ListenerEventReconnected:
			logger.Info("reconnected")
			wake()
		}
	})
	defer listener.Close()
	if err := listener.Listen(eventNotifyChannel); err != nil {
		// Listen fails only when the listener was closed; polling goes on.
		logger.Error("listen-failed", err)
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-listener.Notify:
			wake()
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
