package models

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// Lists of desired LRPs, scheduling infos, actual LRPs and cells are read
// by key order and come in pages or as a stream:
//
//   - limit 0 (the default, what Diego-style clients send) answers the
//     whole list, but the board reads and writes it a page at a time (the
//     next page read while one is written), so a call needs memory for two
//     pages, not for the database;
//   - limit 1 to MaxListPage answers one page of at most limit items,
//     fewer when they reach 1 MiB (a page of large definitions), with
//     next_cursor naming the last item when more may follow (empty on
//     the last page); a page shorter than limit is no last page.
//
// A cursor, with either, starts the list after the item it names. Keys
// are compared as bytes on every dialect, so pages neither repeat nor skip
// an item that stays. Items written while a list is read show up or not
// according to where their key falls: like any paged read, a list is not
// a snapshot.
//
// Worked example, desired LRPs a, b, c, d, e and limit 2:
//  1. {limit 2}            → a, b; next_cursor names b
//  2. {cursor b, limit 2}  → c, d; next_cursor names d
//  3. {cursor d, limit 2}  → e; next_cursor empty
//  4. {cursor b}           → c, d, e (the rest, streamed)

// MaxListPage is the largest page a list call answers.
const MaxListPage = 1000

// A cursor is opaque to clients: the list's kind and the key of the last
// item, joined by NUL (which no name may hold, see ValidateName), in
// unpadded base64url.
const (
	cursorDesired = "desired"
	cursorActual  = "actual"
	cursorCell    = "cell"
)

// ListCursor names the page boundary after this LRP.
func (l *DesiredLRP) ListCursor() string {
	return encodeCursor(cursorDesired, l.GetProcessGuid())
}

// ListCursor names the page boundary after this LRP; it is the cursor of
// its DesiredLRP.
func (i *DesiredLRPSchedulingInfo) ListCursor() string {
	return encodeCursor(cursorDesired, i.GetProcessGuid())
}

// ParseDesiredLRPCursor returns the guid a desired LRP's cursor names; an
// empty cursor is the empty guid (the list's start).
func ParseDesiredLRPCursor(field, cursor string) (string, error) {
	parts, err := decodeCursor(field, cursor, cursorDesired, 1)
	if err != nil || parts == nil {
		return "", err
	}
	return parts[0], validateProcessGuid(field, parts[0])
}

// ListCursor names the page boundary after this instance.
func (l *ActualLRP) ListCursor() string {
	return encodeCursor(cursorActual, l.GetProcessGuid(), strconv.Itoa(int(l.GetIndex())), l.GetPresence().String())
}

// ParseActualLRPCursor returns the key of the instance a cursor names; ok is false for an empty cursor (the list's start). Instances
// sort by process guid, then index, then the presence's name (the order
// SQL gives).
func ParseActualLRPCursor(field, cursor string) (processGuid string, index int32, presence ActualLRP_Presence, ok bool, err error) {
	parts, err := decodeCursor(field, cursor, cursorActual, 3)
	if err != nil || parts == nil {
		return "", 0, 0, false, err
	}
	if err := validateProcessGuid(field, parts[0]); err != nil {
		return "", 0, 0, false, err
	}
	i, err := strconv.ParseInt(parts[1], 10, 32)
	if err != nil || i < 0 {
		return "", 0, 0, false, ErrInvalidField(field, "not a cursor of this list: bad index")
	}
	p, known := ActualLRP_Presence_value[parts[2]]
	if !known || p == int32(ActualLRP_PRESENCE_UNKNOWN) {
		return "", 0, 0, false, ErrInvalidField(field, "not a cursor of this list: bad presence")
	}
	return parts[0], int32(i), ActualLRP_Presence(p), true, nil
}

// ListCursor names the page boundary after this cell.
func (c *Cell) ListCursor() string {
	return encodeCursor(cursorCell, c.GetCellId())
}

// ParseCellCursor returns the cell id a cell's cursor names; an empty cursor
// is the empty id (the list's start).
func ParseCellCursor(field, cursor string) (string, error) {
	parts, err := decodeCursor(field, cursor, cursorCell, 1)
	if err != nil || parts == nil {
		return "", err
	}
	return parts[0], validateCellID(field, parts[0])
}

func encodeCursor(kind string, key ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + strings.Join(key, "\x00")))
}

// decodeCursor returns the key parts of a cursor of kind, nil for an empty
// cursor, and an error naming field for anything else, a cursor of another
// list included.
func decodeCursor(field, cursor, kind string, parts int) ([]string, error) {
	if cursor == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, ErrInvalidField(field, "not a cursor: use the next_cursor of the page before")
	}
	fields := strings.Split(string(raw), "\x00")
	switch {
	case fields[0] == kind && len(fields) == parts+1:
		return fields[1:], nil
	case fields[0] == kind:
	case fields[0] == cursorDesired, fields[0] == cursorActual, fields[0] == cursorCell:
		return nil, ErrInvalidField(field, fmt.Sprintf("not a cursor of this list: it is from the %s list", fields[0]))
	}
	return nil, ErrInvalidField(field, "not a cursor: use the next_cursor of the page before")
}

// validateListPage checks a list request's paging: a cursor that parse
// accepts and a limit of 0 (the whole list) to MaxListPage.
func validateListPage(cursor string, limit int32, parse func(field, cursor string) error) error {
	if limit < 0 || limit > MaxListPage {
		return ErrInvalidField("limit", fmt.Sprintf("must be between 0 (the whole list, streamed) and %d, got %d", MaxListPage, limit))
	}
	return parse("cursor", cursor)
}

func parseDesiredCursor(field, cursor string) error {
	_, err := ParseDesiredLRPCursor(field, cursor)
	return err
}

func parseActualCursor(field, cursor string) error {
	_, _, _, _, err := ParseActualLRPCursor(field, cursor)
	return err
}

func parseCellCursor(field, cursor string) error {
	_, err := ParseCellCursor(field, cursor)
	return err
}
