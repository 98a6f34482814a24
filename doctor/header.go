package doctor

import (
	"encoding/binary"
	"io"
	"os"
)

const sqliteMagic = "SQLite format 3\x00"

// header is the part of the 100-byte SQLite file header doctor reads.
type header struct {
	// WAL: the file format versions (bytes 18 and 19) say WAL mode.
	WAL          bool
	PageSize     int64
	DBPages      int64 // in-header database size (0 when not valid)
	ChangeCount  uint32
	ValidFor     uint32
	TextEncoding uint32
}

// readHeader returns the header of b (at least 100 bytes); ok is false when
// the magic string or the page size is wrong.
func readHeader(b []byte) (header, bool) {
	if len(b) < 100 || string(b[:16]) != sqliteMagic {
		return header{}, false
	}
	ps := int64(binary.BigEndian.Uint16(b[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 {
		return header{}, false
	}
	h := header{WAL: b[18] == 2 && b[19] == 2, PageSize: ps, ChangeCount: binary.BigEndian.Uint32(b[24:28]), ValidFor: binary.BigEndian.Uint32(b[92:96]),
		TextEncoding: binary.BigEndian.Uint32(b[56:60])}
	if h.ValidFor == h.ChangeCount {
		h.DBPages = int64(binary.BigEndian.Uint32(b[28:32]))
	}
	return h, true
}

// checkHeader reads the file header and reports a damaged or truncated
// file. It returns false when SQLite cannot read the file at all; wal says
// whether the header is in WAL mode.
func checkHeader(r *Report, path string, walPresent bool) (ok, wal bool) {
	f, err := os.Open(path)
	if err != nil {
		r.add(CheckFile, Error, path, "", "cannot read the file: %v", err)
		return false, false
	}
	defer f.Close()
	b := make([]byte, 100)
	n, err := io.ReadFull(f, b)
	if err != nil || n < 100 {
		r.add(CheckFile, Error, path, FixRecover, "the file holds only %d bytes: it is truncated below the 100-byte SQLite header", r.FileBytes)
		return false, false
	}
	h, ok := readHeader(b)
	if !ok {
		r.add(CheckFile, Error, path, FixRecover, "the SQLite header is damaged (no %q magic or an invalid page size): SQLite cannot open the file; recover rebuilds the header on a private copy", "SQLite format 3")
		return false, false
	}
	r.PageSize = h.PageSize
	if r.FileBytes%h.PageSize != 0 {
		r.add(CheckFile, Error, path, FixRecover, "the file size %d is not a multiple of the page size %d: it was truncated or extended by a partial write", r.FileBytes, h.PageSize)
	}
	if h.DBPages > 0 && !walPresent && h.DBPages*h.PageSize > r.FileBytes {
		r.add(CheckFile, Error, path, FixRecover, "the file is truncated: its header declares %d pages (%s) but the file holds %d (%s)",
			h.DBPages, bytesString(h.DBPages*h.PageSize), r.FileBytes/h.PageSize, bytesString(r.FileBytes))
		r.state.unreadable = true
	}
	return true, h.WAL
}
