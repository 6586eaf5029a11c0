package pgcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Freeze suspends (SIGSTOP) the server and every process it started, so
// that connections hang instead of failing, as with a hung server or a
// network partition: new connections are accepted by the kernel but never
// answered, and queries on open ones never return. Thaw resumes it.
// Caveat: Linux only (it reads /proc); Stop and the cleanup thaw first.
func (c *Cluster) Freeze() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return fmt.Errorf("freeze cluster on port %d: not running", c.port)
	}
	if err := c.signalAll(syscall.SIGSTOP); err != nil {
		return err
	}
	c.frozen = true
	return nil
}

// Thaw resumes a frozen server; on a server that is not frozen it does
// nothing.
func (c *Cluster) Thaw() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.thawLocked()
}

func (c *Cluster) thawLocked() error {
	if !c.frozen {
		return nil
	}
	if err := c.signalAll(syscall.SIGCONT); err != nil {
		return err
	}
	c.frozen = false
	return nil
}

// signalAll sends sig to the postmaster, then to its children.
func (c *Cluster) signalAll(sig syscall.Signal) error {
	pid, err := c.postmasterPID()
	if err != nil {
		return err
	}
	pids := append([]int{pid}, childrenOf(pid)...)
	for _, p := range pids {
		if err := syscall.Kill(p, sig); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("signal %s to process %d: %w", sig, p, err)
		}
	}
	return nil
}

// postmasterPID reads the server's process id from postmaster.pid.
func (c *Cluster) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("read postmaster.pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: %w", err)
	}
	return pid, nil
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended meanwhile
		}
		// The command name is in parentheses and may hold spaces; the
		// parent id is the second field after it.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		if child, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			out = append(out, child)
		}
	}
	return out
}
