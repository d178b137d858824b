package grid

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Many goroutines race for one lock: exactly one takes it, the others are told who holds it;
// once released, it can be taken again.
func TestLockOneHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks", "c.lock")
	const n = 16
	var wg sync.WaitGroup
	locks := make([]*Lock, n)
	holders := make([]*Holder, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if locks[i], holders[i], err = TryLock(path); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var held *Lock
	for i := range n {
		switch {
		case locks[i] != nil && held != nil:
			t.Fatal("two goroutines hold the lock")
		case locks[i] != nil:
			held = locks[i]
		case holders[i] == nil || holders[i].PID != os.Getpid():
			t.Errorf("a refused goroutine was told %v, want this process", holders[i])
		}
	}
	if held == nil {
		t.Fatal("nobody took the lock")
	}
	held.Unlock()
	again, _, err := TryLock(path)
	if err != nil || again == nil {
		t.Fatalf("the released lock could not be taken again: %v", err)
	}
	again.Unlock()
}

// A lock whose holder process is gone (on this host) is stale and taken over; so is one not
// touched for lockStaleAfter (its holder's host is another, where no pid can be checked).
func TestStaleLocks(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	write := func(name string, h Holder, age time.Duration) string {
		path := filepath.Join(dir, name)
		data, _ := json.Marshal(h)
		os.WriteFile(path, data, 0o644)
		old := time.Now().Add(-age)
		os.Chtimes(path, old, old)
		return path
	}
	dead := deadPID(t)
	cases := []struct {
		name  string
		h     Holder
		age   time.Duration
		taken bool
	}{
		{"dead pid here", Holder{Host: host, PID: dead}, 0, true},
		{"live pid here", Holder{Host: host, PID: os.Getpid()}, 0, false},
		{"another host, fresh", Holder{Host: host + "-other", PID: dead}, time.Minute, false},
		{"another host, silent", Holder{Host: host + "-other", PID: dead}, lockStaleAfter + time.Minute, true},
	}
	for i, c := range cases {
		path := write("l"+strconv.Itoa(i), c.h, c.age)
		l, h, err := TryLock(path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (l != nil) != c.taken {
			t.Errorf("%s: taken %v, want %v (holder %v)", c.name, l != nil, c.taken, h)
		}
		if l != nil {
			l.Unlock()
		}
	}
}

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// Two processes: one holds the lock, the other is refused with the holder's pid; when the
// holder is killed (no chance to release), the lock is taken over.
func TestLockAcrossProcesses(t *testing.T) {
	if path := os.Getenv("GRID_LOCK_HELPER"); path != "" {
		l, _, err := TryLock(path)
		if err != nil || l == nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "c.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "GRID_LOCK_HELPER="+path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the helper did not take the lock: %q %v", line, err)
	}
	l, h, err := TryLock(path)
	if err != nil || l != nil || h == nil || h.PID != cmd.Process.Pid {
		t.Fatalf("while the helper holds it: lock %v, holder %v, err %v; want refused, naming pid %d", l, h, err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, h, err = TryLock(path)
	if err != nil || l == nil {
		t.Fatalf("after the holder was killed: holder %v, err %v; want the stale lock taken over", h, err)
	}
	l.Unlock()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Unlock left the file: %v", err)
	}
}
