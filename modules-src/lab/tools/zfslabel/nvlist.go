// Package zfslabel writes and reads the on-disk ZFS vdev labels the lab's
// zpool stand-in puts on its devices. The labels are real enough that
// util-linux's blkid reports TYPE="zfs_member" with the pool name as LABEL:
// libblkid ≤ 2.40 counts uberblock magics in the labels, ≥ 2.41 parses the
// XDR-encoded nvlist at 16 KiB into each label; we write both.
package zfslabel

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// nvlist data types (sys/nvpair.h).
const (
	typeUint64    = 8
	typeString    = 9
	typeNvlist    = 19
	typeNvlistArr = 20
)

// Pair is one name/value of an nvlist. Value is uint64, string, []Pair or [][]Pair.
type Pair struct {
	Name  string
	Value any
}

func pad4(n int) int { return (n + 3) &^ 3 }

func putU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

func putString(b []byte, s string) []byte {
	b = putU32(b, uint32(len(s)))
	b = append(b, s...)
	for i := len(s); i < pad4(len(s)); i++ {
		b = append(b, 0)
	}
	return b
}

// encodeList appends an embedded nvlist (version, flags, pairs, terminator).
func encodeList(b []byte, pairs []Pair) ([]byte, error) {
	b = putU32(b, 0) // nvl_version
	b = putU32(b, 1) // NV_UNIQUE_NAME
	for _, p := range pairs {
		var err error
		if b, err = encodePair(b, p); err != nil {
			return nil, err
		}
	}
	return append(b, 0, 0, 0, 0, 0, 0, 0, 0), nil // end of list: encode/decode size 0
}

func encodePair(b []byte, p Pair) ([]byte, error) {
	var body []byte
	body = putString(body, p.Name)
	var err error
	switch v := p.Value.(type) {
	case uint64:
		body = putU32(body, typeUint64)
		body = putU32(body, 1)
		body = binary.BigEndian.AppendUint64(body, v)
	case string:
		body = putU32(body, typeString)
		body = putU32(body, 1)
		body = putString(body, v)
	case []Pair:
		body = putU32(body, typeNvlist)
		body = putU32(body, 1)
		if body, err = encodeList(body, v); err != nil {
			return nil, err
		}
	case [][]Pair:
		body = putU32(body, typeNvlistArr)
		body = putU32(body, uint32(len(v)))
		for _, l := range v {
			if body, err = encodeList(body, l); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("nvpair %q: unsupported value type %T", p.Name, p.Value)
	}
	size := uint32(8 + len(body))
	b = putU32(b, size) // encoded size
	b = putU32(b, size) // decoded size (informational)
	return append(b, body...), nil
}

// Encode returns the XDR encoding of a top-level nvlist, header included.
func Encode(pairs []Pair) ([]byte, error) {
	b := []byte{1, 1, 0, 0} // NV_ENCODE_XDR, little-endian host
	return encodeList(b, pairs)
}

// Decode reads the top-level uint64 and string pairs of an XDR nvlist;
// embedded lists are skipped. It understands what Encode writes.
func Decode(buf []byte) (map[string]any, error) {
	if len(buf) < 12 || buf[0] != 1 {
		return nil, errors.New("not an XDR nvlist")
	}
	out := map[string]any{}
	off := 12
	for off+8 <= len(buf) {
		size := int(binary.BigEndian.Uint32(buf[off:]))
		if size == 0 {
			return out, nil
		}
		if size < 20 || off+size > len(buf) {
			return nil, fmt.Errorf("nvpair at %d: bad size %d", off, size)
		}
		p := buf[off+8 : off+size]
		nl := int(binary.BigEndian.Uint32(p))
		if 4+pad4(nl)+8 > len(p) {
			return nil, fmt.Errorf("nvpair at %d: bad name length", off)
		}
		name := string(p[4 : 4+nl])
		v := p[4+pad4(nl):]
		switch binary.BigEndian.Uint32(v) {
		case typeUint64:
			if len(v) >= 16 {
				out[name] = binary.BigEndian.Uint64(v[8:])
			}
		case typeString:
			if len(v) >= 12 {
				sl := int(binary.BigEndian.Uint32(v[8:]))
				if 12+sl <= len(v) {
					out[name] = string(v[12 : 12+sl])
				}
			}
		}
		off += size
	}
	return nil, errors.New("nvlist has no end marker")
}
