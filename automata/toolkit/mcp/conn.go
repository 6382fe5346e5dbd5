package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is what one session runs over: the transport the SDK connects
// with and, over stdio, the program.
type conn struct {
	transport sdk.Transport
	pid       int               // the program's, 0 over HTTP
	why       func(error) error // err with what the program said: its exit, its stderr's last lines
	close     func()            // ends the program and waits for it
}

// connect makes the conn of the next session.
func (s *Server) connect(ctx context.Context) (*conn, error) {
	if s.cfg.URL != "" {
		return &conn{transport: s.httpTransport(), why: s.redact, close: func() {}}, nil
	}
	return s.start()
}

// How long Close waits for a program after closing its stdin, and then
// after SIGTERM, before it kills it.
const (
	stopGrace = 2 * time.Second
	termGrace = 2 * time.Second
)

// start starts the program, its stdin and stdout the session's pipes and
// its stderr logged.
func (s *Server) start() (*conn, error) {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env = append(os.Environ(), s.cfg.Env...)
	cmd.Dir = s.cfg.Dir
	ownGroup(cmd)
	// Pipes of our own, not cmd's: Wait closes those, and the program's
	// end is watched apart from the session's.
	var files []*os.File
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			panic(err) // out of file descriptors: nothing here can go on
		}
		files = append(files, r, w)
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", s.cfg.Command, err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stderr := &stderrLog{s: s}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		stderr.read(errR)
	}()
	c := &conn{pid: cmd.Process.Pid}
	c.transport = &limitedTransport{
		inner:     &sdk.IOTransport{Reader: outR, Writer: inW, MaxLineLength: s.cfg.MaxMessageBytes},
		perSecond: s.cfg.NotificationsPerSecond,
		s:         s,
	}
	c.why = func(err error) error {
		// The program's end follows its stdout's closing closely.
		t := time.NewTimer(200 * time.Millisecond)
		defer t.Stop()
		select {
		case <-exited:
			err = fmt.Errorf("%w; the program ended: %v", err, or[error](waitErr, errors.New("exit status 0")))
		case <-t.C:
		}
		if tail := stderr.tail(); tail != "" {
			err = fmt.Errorf("%w; its stderr ended with: %s", err, tail)
		}
		return err
	}
	c.close = func() {
		inW.Close() // the spec's first step: the server ends when its input does
		outR.Close()
		stop(cmd, exited)
		errR.Close()
		<-stderrDone
	}
	return c, nil
}

// stop waits for the program to end after its stdin closed, then sends
// its process group SIGTERM, then SIGKILL, each after a grace period.
func stop(cmd *exec.Cmd, exited chan struct{}) {
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-exited:
			return true
		case <-t.C:
			return false
		}
	}
	if wait(stopGrace) {
		killGroup(cmd, false) // what it started and left behind
		return
	}
	killGroup(cmd, false)
	if wait(termGrace) {
		return
	}
	killGroup(cmd, true)
	<-exited
}

// stderrLog logs what a program writes to its stderr, bounded, and keeps
// its last lines.
type stderrLog struct {
	s *Server

	mu   sync.Mutex
	last []string // the last lines, at most maxTailBytes in all
	size int
}

// maxTailBytes bounds the last lines of stderr an error quotes.
const maxTailBytes = 4 << 10

// read reads r to its end: each line cut to MaxStderrLineBytes, logged
// while under StderrLinesPerSecond, kept in the tail.
func (l *stderrLog) read(r io.Reader) {
	cfg := l.s.cfg
	br := bufio.NewReaderSize(r, max(cfg.MaxStderrLineBytes, 64))
	window, logged, dropped := time.Now(), 0, 0
	for {
		line, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		text := strings.TrimRight(string(clipBytes(line, cfg.MaxStderrLineBytes)), "\r\n")
		for long {
			// The rest of a long line is not kept.
			_, err = br.ReadSlice('\n')
			long = errors.Is(err, bufio.ErrBufferFull)
		}
		if text != "" || len(line) > 0 {
			l.keep(text)
			if now := time.Now(); now.Sub(window) >= time.Second {
				if dropped > 0 {
					l.s.log.Warn("mcp server stderr: lines not logged (StderrLinesPerSecond)", "lines", dropped)
				}
				window, logged, dropped = now, 0, 0
			}
			if logged < cfg.StderrLinesPerSecond {
				logged++
				l.s.log.Info("mcp server stderr", "stderr", text)
			} else {
				dropped++
			}
		}
		if err != nil {
			return
		}
	}
}

func (l *stderrLog) keep(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = append(l.last, line)
	l.size += len(line) + 1
	for l.size > maxTailBytes && len(l.last) > 1 {
		l.size -= len(l.last[0]) + 1
		l.last = l.last[1:]
	}
}

// tail is the last lines, joined with " | ", at most maxTailBytes.
func (l *stderrLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(clipBytes([]byte(strings.Join(l.last, " | ")), maxTailBytes))
}

// clipBytes is b cut to at most n bytes, at a character boundary.
func clipBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for len(b) > 0 && b[len(b)-1]&0xC0 == 0x80 {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] >= 0xC0 {
		b = b[:len(b)-1]
	}
	return bytes.Clone(b)
}

// limitedTransport is a stdio transport whose connection hands on at most
// perSecond requests and notifications from the server a second (with
// bursts of as many) and drops the others: a server that floods them costs
// their reading, not memory or the handling of each.
type limitedTransport struct {
	inner     sdk.Transport
	perSecond int
	s         *Server
}

func (t *limitedTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &limitedConn{Connection: c, t: t, tokens: float64(t.perSecond), at: time.Now()}, nil
}

// limitedConn is a connection of limitedTransport. Its fields are used by
// Read only, which the SDK calls from one goroutine.
type limitedConn struct {
	sdk.Connection
	t       *limitedTransport
	tokens  float64
	at      time.Time // of tokens
	dropped int
	said    time.Time // when drops were last logged
}

const methodToolsListChanged = "notifications/tools/list_changed"

func (c *limitedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || c.take() {
			return msg, nil
		}
		if req.Method == methodToolsListChanged {
			signal(c.t.s.relist) // not lost: the list is fetched again
		}
		c.dropped++
		if now := time.Now(); now.Sub(c.said) >= time.Second {
			c.t.s.log.Warn("mcp server floods: requests and notifications dropped (NotificationsPerSecond)", "dropped", c.dropped)
			c.said, c.dropped = now, 0
		}
	}
}

// take takes a token, if there is one.
func (c *limitedConn) take() bool {
	now := time.Now()
	limit := float64(c.t.perSecond)
	c.tokens = min(limit, c.tokens+now.Sub(c.at).Seconds()*limit)
	c.at = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}
