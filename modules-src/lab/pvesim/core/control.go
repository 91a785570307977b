package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ControlHandler serves the lab's internal control API (plain HTTP/JSON,
// meant for a Unix socket; not part of the PVE API): the routes the
// backends registered with HandleControl (pvesim/controlapi has the lab's
// own). Errors are non-2xx with {"error": "<message>"}. See package
// pvesim's doc for the routes.
func (s *Sim) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	s.handleControls(mux)
	return mux
}

// ControlResult answers a control API call: v as JSON, or the error with
// its status (BadRequestError 400, ConflictError 409, NotFoundError 404,
// anything else 500) as {"error": "<message>"}.
func ControlResult(w http.ResponseWriter, v any, err error) {
	var conflict *ConflictError
	var notFound *NotFoundError
	var bad *BadRequestError
	switch {
	case err == nil:
		ControlJSON(w, 200, v)
	case errors.As(err, &bad):
		ControlError(w, 400, err)
	case errors.As(err, &conflict):
		ControlError(w, 409, err)
	case errors.As(err, &notFound):
		ControlError(w, 404, err)
	default:
		ControlError(w, 500, err)
	}
}

// ControlDecode reads a control API call's JSON body into v; on a bad
// body it answers 400 and returns false.
func ControlDecode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		ControlError(w, 400, fmt.Errorf("control API wants a JSON body: %w", err))
		return false
	}
	return true
}

// ControlJSON answers a control API call with v as JSON and status.
func ControlJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ControlError answers a control API call with status and
// {"error": "<message>"}.
func ControlError(w http.ResponseWriter, status int, err error) {
	ControlJSON(w, status, map[string]string{"error": err.Error()})
}
