package smssim

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ErrNoSendPort is returned by SetRefusing on a simulator started without a send port.
var ErrNoSendPort = errors.New("smssim: no send port (StartSendPort, -send-addr)")

// sendPort is the second address of a simulator, the one the stack under test sends to.
type sendPort struct {
	addr string // host:port, fixed by the first listen so that a reopened port is the same
	srv  *http.Server
}

// StartSendPort opens a second address, addr (e.g. "127.0.0.1:0"), serving the same API as
// Start's, and returns its base URL: give it to the stack as the provider's URL, and keep
// Start's address for the control API. Unlike Start's, this one can refuse connections
// (SetRefusing), as a provider that is down does: its listener is closed, so every connect is
// refused before a byte of the request leaves the client — the one failure the client can
// prove sent nothing (sms.FailedBeforeWrite). A scripted mode cannot do that: the simulator
// learns the number only from a request already written. The send port never keeps a
// connection alive, so that no pooled connection outlives a refusal and carries a request.
func (s *Server) StartSendPort(addr string) (string, error) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.send != nil {
		return "", errors.New("smssim: the send port is already open")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("smssim.start send port %s: %w", addr, err)
	}
	s.send = &sendPort{addr: l.Addr().String()}
	s.serveSendPort(l)
	return "http://" + s.send.addr, nil
}

// SendURL returns the send port's base URL after StartSendPort, or "".
func (s *Server) SendURL() string {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.send == nil {
		return ""
	}
	return "http://" + s.send.addr
}

// SetRefusing closes the send port (true): its listener and every connection it accepted,
// so that connecting is refused; or opens it again on the same address (false). Either is a
// no-op when the port is already so. The address Start opened keeps serving throughout.
func (s *Server) SetRefusing(refuse bool) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.send == nil {
		return ErrNoSendPort
	}
	switch {
	case refuse && s.send.srv != nil:
		err := s.send.srv.Close()
		s.send.srv = nil
		s.log.Info("smssim.send_port", "refusing", true)
		return err
	case !refuse && s.send.srv == nil:
		if s.isClosed() {
			return errors.New("smssim: the simulator is closed")
		}
		l, err := net.Listen("tcp", s.send.addr)
		if err != nil {
			return fmt.Errorf("smssim: reopen the send port %s: %w", s.send.addr, err)
		}
		s.serveSendPort(l)
		s.log.Info("smssim.send_port", "refusing", false)
	}
	return nil
}

// Refusing reports whether the send port is closed.
func (s *Server) Refusing() bool {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.send != nil && s.send.srv == nil
}

// serveSendPort serves the API on l in the background. s.sendMu is held.
func (s *Server) serveSendPort(l net.Listener) {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	srv.SetKeepAlivesEnabled(false)
	s.send.srv = srv
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("smssim.serve send port", "err", err)
		}
	}()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// closeSendPort stops the send port for good (Close).
func (s *Server) closeSendPort() error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.send == nil || s.send.srv == nil {
		return nil
	}
	err := s.send.srv.Close()
	s.send.srv = nil
	return err
}
