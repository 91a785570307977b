package core

import "slices"

// The journal is what the nodes' daemons log outside any task (syslog, the
// systemd journal): a line a test or the lab's user may look for, such as
// pvesr's warning for a job it could not even start. The lab keeps one
// list for all nodes, in memory, oldest first; a daemon's line names what
// it is about, as PVE's do.

// JournalLocked appends line to the journal.
func (s *Sim) JournalLocked(line string) { s.journal = append(s.journal, line) }

// Journal is the journal's lines, oldest first.
func (s *Sim) Journal() []string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return slices.Clone(s.journal)
}
