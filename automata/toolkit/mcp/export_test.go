package mcp

// PID is the process of the session up (over stdio), 0 when none.
func PID(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}
