// Package httpwire is the API's wire format as pve-http-server speaks it:
// parameters read from the body and the query string, the headers, the
// {"data": …} answer and the error answer, and a connection dropped
// mid-answer (faults). It knows nothing of the simulator: pvesim/core's
// request pipeline reads and answers every request through it.
package httpwire

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ReadParams merges the body (form or JSON) and the query string; query
// values win, as in pve-http-server.
func ReadParams(r *http.Request) (map[string]any, error) {
	params := map[string]any{}
	if r.Body != nil && (r.Method == "POST" || r.Method == "PUT" || r.Method == "DELETE") {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return params, fmt.Errorf("unable to read request body: %w", err)
		}
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		switch {
		case len(strings.TrimSpace(string(body))) == 0:
		case ct == "application/json":
			dec := json.NewDecoder(strings.NewReader(string(body)))
			dec.UseNumber()
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				return params, fmt.Errorf("malformed JSON request body: %w", err)
			}
			for k, v := range obj {
				if v != nil {
					params[k] = v
				}
			}
		default:
			// decode_urlencoded splits pairs on ';' as on '&' (net/url
			// refuses ';' since Go 1.17).
			vals, err := url.ParseQuery(strings.ReplaceAll(string(body), ";", "&"))
			if err != nil {
				return params, fmt.Errorf("malformed form request body: %w", err)
			}
			mergeValues(params, vals)
		}
	}
	query, _ := url.ParseQuery(strings.ReplaceAll(r.URL.RawQuery, ";", "&"))
	mergeValues(params, query)
	return params, nil
}

func mergeValues(params map[string]any, vals url.Values) {
	for k, vs := range vals {
		if len(vs) == 1 {
			params[k] = vs[0]
			continue
		}
		list := make([]any, len(vs))
		for i, v := range vs {
			list[i] = v
		}
		params[k] = list
	}
}

func setCommonHeaders(h http.Header) {
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set("Server", "pve-api-daemon/3.0")
	h.Set("Cache-Control", "max-age=0")
	h.Set("Pragma", "no-cache")
	h.Set("Expires", time.Now().UTC().Format(http.TimeFormat))
}

// WriteData answers 200 with {"data": data}.
func WriteData(w http.ResponseWriter, data any) {
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		WriteError(w, 500, fmt.Sprintf("unable to encode result: %v", err), nil)
		return
	}
	setCommonHeaders(w.Header())
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(200)
	_, _ = w.Write(body)
}

// WriteError renders an error answer, status and message with errs per
// parameter (400s), with the message's first line as the HTTP reason
// phrase (Go's ResponseWriter cannot, so the connection is hijacked; PVE
// closes keep-alive on errors anyway). 595 answers carry a text body, as
// pveproxy's do.
func WriteError(w http.ResponseWriter, status int, message string, errs map[string]string) {
	msg := strings.TrimRight(message, "\n")
	reason := msg
	if i := strings.IndexByte(reason, '\n'); i >= 0 {
		reason = reason[:i]
	}
	reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	var body []byte
	ctype := "application/json;charset=UTF-8"
	if status >= 590 {
		body, ctype = []byte(msg+"\n"), "text/plain"
	} else {
		obj := map[string]any{"data": nil, "message": msg + "\n"}
		if len(errs) > 0 {
			obj["errors"] = errs
		}
		body, _ = json.Marshal(obj)
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		setCommonHeaders(w.Header())
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	h := http.Header{}
	setCommonHeaders(h)
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\n", status, reason)
	keys := slices.Sorted(maps.Keys(h))
	for _, k := range keys {
		fmt.Fprintf(buf, "%s: %s\r\n", k, h.Get(k))
	}
	buf.WriteString("\r\n")
	buf.Write(body)
	_ = buf.Flush()
}

// ResetConn drops the connection with a TCP reset and no answer.
func ResetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	raw := conn
	if nc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		raw = nc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = raw.Close()
}
