// Package httprun runs an example's HTTP server until it is told to stop.
package httprun

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Until serves srv on l until ctx ends, then shuts it down, giving the
// requests under way five seconds; the streams end through the functions
// registered with srv.RegisterOnShutdown.
func Until(ctx context.Context, srv *http.Server, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) {
		err = errors.Join(err, e)
	}
	return err
}
