package grid

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A cell's lock keeps two processes given the same cell (a Slurm task requeued while the first
// still runs, a second submission of the same grid) from training into the same folder at once.
// It is a file created with O_CREATE|O_EXCL, which one process alone succeeds in creating on a
// local disk and on NFS v3 and later, holding its holder's host and pid. Its holder touches it
// every lockHeartbeat; a lock is stale, and taken over, when its holder's process is gone (same
// host) or it has not been touched for lockStaleAfter (any host: a node that died holds none).

// lockHeartbeat and lockStaleAfter: a minute between touches leaves a loaded file server ample
// slack before a live holder looks dead; a cell whose node died waits ten minutes to be taken.
var (
	lockHeartbeat  = time.Minute
	lockStaleAfter = 10 * time.Minute
)

// LockPath is a cell's lock: <out>/results/cells/locks/<task>-<name>.lock, on the storage every
// process of the grid shares.
func LockPath(out string, c Cell) string {
	return filepath.Join(out, "results", "cells", "locks", c.Task+"-"+c.Name+".lock")
}

// Holder is who holds a lock.
type Holder struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
	// touched is the lock file's modification time, the holder's last heartbeat.
	touched time.Time
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d on %s since %s", h.PID, h.Host, h.Since.UTC().Format(time.RFC3339))
}

// stale reports whether the holder is gone: its process is not running (on this host), or it
// has not touched the lock for after.
func (h Holder) stale(after time.Duration) bool {
	if host, _ := os.Hostname(); h.Host == host && !processAlive(h.PID) {
		return true
	}
	return time.Since(h.touched) > after
}

func readHolder(path string) (Holder, error) {
	var h Holder
	data, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(data, &h); err != nil {
		// Half-written by a holder that died between create and write: as old as its file.
		h = Holder{}
	}
	h.touched = fi.ModTime()
	return h, nil
}

// Lock is a held cell lock.
type Lock struct {
	path string
	stop chan struct{}
	done chan struct{}
}

// TryLock takes the lock at path. It returns the lock, or (nil, holder) when a live process
// holds it; an error only when the lock cannot be created at all (a read-only results folder).
func TryLock(path string) (*Lock, *Holder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating the lock folder: %w", err)
	}
	host, _ := os.Hostname()
	me := Holder{Host: host, PID: os.Getpid(), Since: time.Now()}
	// Two rounds: the second after taking over a stale lock.
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			data, _ := json.Marshal(me)
			_, werr := f.Write(append(data, '\n'))
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path)
				return nil, nil, fmt.Errorf("writing the lock %s: %w", path, werr)
			}
			l := &Lock{path: path, stop: make(chan struct{}), done: make(chan struct{})}
			go l.heartbeat()
			return l, nil, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, nil, fmt.Errorf("creating the lock %s: %w", path, err)
		}
		h, err := readHolder(path)
		// The holder creates the file, then writes itself into it: give it a moment.
		for wait := 0; err == nil && h.PID == 0 && wait < 100 && time.Since(h.touched) < time.Second; wait++ {
			time.Sleep(10 * time.Millisecond)
			h, err = readHolder(path)
		}
		if errors.Is(err, os.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading the lock %s: %w", path, err)
		}
		if !h.stale(lockStaleAfter) {
			return nil, &h, nil
		}
		if err := breakStale(path, h); err != nil {
			return nil, nil, err
		}
	}
	h, err := readHolder(path)
	if err != nil {
		return nil, nil, fmt.Errorf("taking over the stale lock %s: %w", path, err)
	}
	return nil, &h, nil
}

// breakStale removes a stale lock. It moves the lock aside under a name of its own first, and
// puts it back if what it moved is not the stale lock it judged (another process broke that
// one and took the cell between the reading and the moving), so that a live lock is never
// removed.
func breakStale(path string, judged Holder) error {
	aside := path + ".stale." + strconv.Itoa(os.Getpid())
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("breaking the stale lock %s: %w", path, err)
	}
	moved, err := readHolder(aside)
	if err == nil && (moved.PID != judged.PID || moved.Host != judged.Host || !moved.Since.Equal(judged.Since)) {
		// Not the one judged stale: put it back (Link fails if a third process took the name).
		os.Link(aside, path)
	}
	os.Remove(aside)
	return nil
}

func (l *Lock) heartbeat() {
	defer close(l.done)
	t := time.NewTicker(lockHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			os.Chtimes(l.path, now, now)
		}
	}
}

// Unlock releases the lock.
func (l *Lock) Unlock() {
	close(l.stop)
	<-l.done
	os.Remove(l.path)
}
