package storage

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"regexp"
	"strings"
)

// File name rules of the upload (pve-storage PVE/Storage.pm): $ISO_EXT_RE_0,
// $VZTMPL_EXT_RE_1 (9.1 added plain .tar, "allow .tar container
// templates"), $SAFE_CHAR_CLASS_RE + $UPLOAD_IMPORT_EXT_RE_1.
var (
	uploadISORe     = regexp.MustCompile(`[^/]+(?i:\.(?:iso|img))$`)
	uploadVztmpl8Re = regexp.MustCompile(`[^/]+(?i:\.tar\.(?:gz|xz|zst|bz2))$`)
	uploadVztmpl9Re = regexp.MustCompile(`[^/]+(?i:\.(?:tar|tar\.(?:gz|xz|zst|bz2)))$`)
	uploadImportRe  = regexp.MustCompile(`[a-zA-Z0-9\-.+=_]+\.(ova|qcow2|raw|vmdk)$`)
	normalizeRe     = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// NormalizeContentFilename is PVE::Storage::normalize_content_filename.
func NormalizeContentFilename(name string) string {
	name = strings.TrimSuffix(name, "\n")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return normalizeRe.ReplaceAllString(name, "_")
}

// UploadDir is API2/Storage/Status.pm upload's check of a (normalized)
// file name for its content type on PVE version, and the plugin's
// get_subdir it goes to; a refusal is a ParamError.
func UploadDir(version int, content, filename string) (string, error) {
	wrongExt := &ParamError{Param: "filename", Msg: "wrong file extension"}
	switch content {
	case "iso":
		if !uploadISORe.MatchString(filename) {
			return "", wrongExt
		}
	case "vztmpl":
		re := uploadVztmpl9Re
		if version < 9 {
			re = uploadVztmpl8Re
		}
		if !re.MatchString(filename) {
			return "", wrongExt
		}
	case "import":
		if !uploadImportRe.MatchString(filename) {
			return "", &ParamError{Param: "filename", Msg: "invalid filename or wrong extension"}
		}
	default:
		return "", &ParamError{Param: "content", Msg: fmt.Sprintf("upload content type '%s' not allowed", content)}
	}
	return contentDirs[content], nil
}

// NewHash is the digest of an upload's checksum-algorithm (nil: unknown).
func NewHash(alg string) hash.Hash {
	switch alg {
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha224":
		return sha256.New224()
	case "sha256":
		return sha256.New()
	case "sha384":
		return sha512.New384()
	case "sha512":
		return sha512.New()
	}
	return nil
}
