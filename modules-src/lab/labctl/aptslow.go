package labctl

import "time"

// SlowAPTDownloads makes the lab's mirror hold back every package download
// by d (0: off), as a slow or stalled mirror does: the download phase of an
// apt-get run then lasts until its caller gives up.
func (l *Lab) SlowAPTDownloads(d time.Duration) {
	if l.apt != nil {
		l.apt.SlowDebs(d)
	}
}
