package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
)

// BasicAuth returns next behind HTTP basic authentication: a request passes only with
// this user and password; any other gets 401 Unauthorized and a challenge for realm.
// The comparison takes the same time whatever the credentials given (both are hashed
// first, so not even their lengths show). Serve it over TLS, or on loopback: basic
// authentication sends the password in the clear. It returns an error when user or
// password is empty.
func BasicAuth(user, password, realm string, next http.Handler) (http.Handler, error) {
	if user == "" || password == "" {
		return nil, errors.New("dashboard: basic auth needs a user and a password")
	}
	wantUser, wantPassword := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	challenge := "Basic realm=" + strconv.Quote(realm) + ", charset=\"UTF-8\""
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		gotUser, gotPassword := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
		userOK := subtle.ConstantTimeCompare(gotUser[:], wantUser[:])
		passwordOK := subtle.ConstantTimeCompare(gotPassword[:], wantPassword[:])
		if !ok || userOK&passwordOK != 1 {
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "pgq dashboard: authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	}), nil
}
