package httpserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// Group is a set of servers. The zero Group is ready; it is safe for
// concurrent use.
type Group struct {
	mu   sync.Mutex
	srvs []*http.Server
}

// Serve answers the connections of ln with srv until ln fails or
// [Group.Shutdown], then returns nil.
func (g *Group) Serve(ln net.Listener, srv *http.Server) error {
	g.mu.Lock()
	g.srvs = append(g.srvs, srv)
	g.mu.Unlock()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting on every listener, lets the requests in flight
// finish until ctx ends, then closes what is left.
func (g *Group) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	srvs := g.srvs
	g.mu.Unlock()
	var errs []error
	for _, srv := range srvs {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err, srv.Close())
		}
	}
	return errors.Join(errs...)
}
